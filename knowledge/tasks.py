"""The Celery tasks of ingestion (queue "ingest"), and starting a sync: queued for the workers, or done
in the calling process when INGEST_RUNNER is "here"."""

from __future__ import annotations

from datetime import timedelta
from functools import partial
from typing import Any

from celery import shared_task
from celery.signals import worker_process_init
from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from knowledge import sync
from knowledge.embeddings import default_embedder, secondary_embedder
from knowledge.errors import KnowledgeError
from knowledge.models import ArticleVersion, Source, SyncArticle, SyncRun, SyncStatus, SyncTrigger
from knowledge.sources import SourceRead

ARTICLE_RETRIES = 3


@worker_process_init.connect
def _load_embedding_models(**kwargs: Any) -> None:
    # In each worker process before its first task (turn workers embed queries with them too): a sync's first
    # articles would otherwise wait the seconds it takes to load them.
    for model in (default_embedder(), secondary_embedder()):
        if model is not None:
            model.encode(["Loading the model before the first task."])


@shared_task(name="knowledge.tasks.read_source")
def read_source(run_id: int) -> None:
    run = SyncRun.objects.select_related("collection", "source").get(pk=run_id)
    # Redelivered while reading (its worker died): read again; two readers racing to plan meet the unique
    # (run, article) constraint, and only the first queues anything. Redelivered once planned: the work may
    # not have been queued, and queueing an article twice writes it once.
    if run.status in (SyncStatus.QUEUED, SyncStatus.READING) and not _read_and_plan(run):
        return
    if run.status == SyncStatus.INDEXING:
        _queue_work(run)


@shared_task(name="knowledge.tasks.ingest_article", bind=True, max_retries=ARTICLE_RETRIES)
def ingest_article(self: Any, work_id: int, run_id: int) -> None:
    try:
        left = sync.sync_article(work_id, embedder=default_embedder(), secondary=secondary_embedder())
    except Exception as exc:
        if self.request.retries < self.max_retries:
            raise self.retry(exc=exc, countdown=2**self.request.retries) from exc
        left = sync.fail_article(work_id, f"gave up after {ARTICLE_RETRIES + 1} tries: {exc}")
    if not left:
        finish_run.delay(run_id)


@shared_task(name="knowledge.tasks.finish_run", autoretry_for=(Exception,), max_retries=ARTICLE_RETRIES)
def finish_run(run_id: int) -> None:
    sync.finish_run(run_id, secondary=secondary_embedder())


@shared_task(name="knowledge.tasks.publish_version", autoretry_for=(Exception,), max_retries=ARTICLE_RETRIES)
def publish_version(run_id: int, version_id: int) -> None:
    sync.publish_in_run(run_id, version_id, embedder=default_embedder(), secondary=secondary_embedder())


@shared_task(name="knowledge.tasks.sync_due_sources")
def sync_due_sources() -> list[int]:
    """Start a run for every source whose re-sync interval has passed since its last run began (beat). Each
    source is claimed under its row lock and checked again, so two beats running by mistake start one run."""
    started = []
    for source_id in Source.objects.filter(resync_minutes__isnull=False).values_list("pk", flat=True):
        with transaction.atomic():
            source = (
                Source.objects.select_for_update(skip_locked=True, of=("self",))
                .select_related("collection")
                .filter(pk=source_id, resync_minutes__isnull=False)
                .first()
            )
            if source is None or source.resync_minutes is None:
                continue
            last_run = source.runs.aggregate(last=Max("created_at"))["last"]
            if last_run is None or last_run <= timezone.now() - timedelta(minutes=source.resync_minutes):
                started.append(start_source_run(source, trigger=SyncTrigger.SCHEDULE).pk)
    return started


def _read_and_plan(run: SyncRun) -> bool:
    assert run.source is not None
    SyncRun.objects.filter(pk=run.pk).update(status=SyncStatus.READING, started_at=timezone.now())
    try:
        read = sync.read_source(run.source)
    except KnowledgeError as exc:
        sync.fail_run(run, str(exc))
        return False
    sync.plan_run(run, read, retire_missing=True)
    return True


def _queue_work(run: SyncRun) -> None:
    work = list(SyncArticle.objects.filter(run=run, done_at__isnull=True).values_list("pk", flat=True))
    # After the commit: a worker quick off the mark must find the run and its work in the database.
    for work_id in work:
        transaction.on_commit(partial(ingest_article.delay, work_id, run.pk))
    if not work:
        transaction.on_commit(lambda: finish_run.delay(run.pk))


def _in_background() -> bool:
    return bool(settings.INGEST_RUNNER == "celery")


def start_source_run(
    source: Source, *, trigger: str, requested_by: Any = None, in_background: bool | None = None
) -> SyncRun:
    """Sync a stored source: read by a worker (fetching a site takes a while), or here."""
    run = sync.new_run(
        source.collection, trigger=trigger, description=source.location, source=source, requested_by=requested_by
    )
    if _in_background() if in_background is None else in_background:
        transaction.on_commit(lambda: read_source.delay(run.pk))
    elif _read_and_plan(run):
        sync.run_here(run)
    run.refresh_from_db()
    return run


def start_documents_run(
    collection_name: str,
    read: SourceRead,
    *,
    trigger: str,
    description: str,
    retire_missing: bool,
    requested_by: Any = None,
) -> SyncRun:
    """Sync documents read by the caller (an upload, an API request): planned here, written by workers."""
    run = sync.new_run(
        sync.collection_named(collection_name), trigger=trigger, description=description, requested_by=requested_by
    )
    sync.plan_run(run, read, retire_missing=retire_missing)
    if _in_background():
        _queue_work(run)
    else:
        sync.run_here(run)
    run.refresh_from_db()
    return run


def start_publish(version: ArticleVersion, *, requested_by: Any = None) -> SyncRun:
    """Publish a reviewed version from the admin: indexed by a worker, or here."""
    run = sync.new_run(
        version.article.collection,
        trigger=SyncTrigger.PUBLISH,
        description=f"publish {version.article.slug} version {version.version_label}",
        requested_by=requested_by,
        articles=1,
    )
    if _in_background():
        transaction.on_commit(lambda: publish_version.delay(run.pk, version.pk))
    else:
        sync.publish_in_run(run.pk, version.pk, embedder=default_embedder(), secondary=secondary_embedder())
    run.refresh_from_db()
    return run
