"""Syncs as background work. A run reads its source, splits what changed by article, and each article's
versions are written by one task (one at a time per article, whatever the run); the task that writes a
run's last article has the run finished: articles gone from the source retired, BM25's statistics
refreshed. Every step is safe to repeat, so a task retried after a crash writes nothing twice.

The same steps run in the calling process when no worker is configured (`INGEST_RUNNER=here`)."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import asdict
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from knowledge.embeddings import Embedder, default_embedder, secondary_embedder
from knowledge.errors import IngestFileError, KnowledgeError
from knowledge.front_matter import FrontMatterRules, parse_audience_rules
from knowledge.ingest import (
    API_SOURCE_PREFIX,
    RETIREMENT_SKIPPED,
    IngestReport,
    changed_documents,
    configured_chunking,
    finish_sync,
    get_or_create_collection,
    lock_articles,
    plan_sync,
    prepare_documents,
    write_documents,
)
from knowledge.models import Article, ArticleVersion, Collection, Source, SourceKind, SyncArticle, SyncRun, SyncStatus
from knowledge.publishing import publish
from knowledge.sources import (
    HTML_SUFFIXES,
    ZIP_MAX_MEMBERS,
    SourceDocument,
    SourceRead,
    is_markdown_name,
    read_folder,
    read_markdown_tree,
    read_zip,
)

# The collection the demo lives in: `make run` loads settings.SAMPLE_HELP_CENTRE, its policy and its decision
# there. A help centre of one's own goes into a collection of its own, and `ingest` keeps it from this one.
DEMO_COLLECTION = "helpcentre"
# A sync may retire at most this share of a collection's live articles unless told to replace them: more is
# far likelier the wrong folder, or the wrong collection, than a help centre that lost most of its articles.
MAX_RETIRED_SHARE = 0.5


def require_public_host(url: str) -> None:
    """Refuse an address on this machine or its private network (KnowledgeError), unless its host is named
    in INGEST_API_PRIVATE_HOSTS: the server fetches it, so whoever gave the address could otherwise read
    what only the server can reach."""
    host = (urlsplit(url).hostname or "").lower()
    if host in settings.INGEST_API_PRIVATE_HOSTS:
        return
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError as exc:
        raise KnowledgeError(f"cannot resolve {host!r}: {exc}") from None
    for address in sorted(map(str, addresses)):
        ip = ipaddress.ip_address(address.split("%")[0])
        if not ip.is_global:
            raise KnowledgeError(
                f"{host} is at {ip}, a private or local address; the server fetches only public ones "
                "(INGEST_API_PRIVATE_HOSTS allows named ones)"
            )


def front_matter_rules(*, strict: bool | None = None) -> FrontMatterRules:
    """How front matter is read, as the settings say (FRONT_MATTER, FRONT_MATTER_AUDIENCES); ``strict``
    overrides FRONT_MATTER for one sync."""
    return FrontMatterRules(
        strict=settings.FRONT_MATTER == "strict" if strict is None else strict,
        audiences=parse_audience_rules(settings.FRONT_MATTER_AUDIENCES),
    )


def read_source(source: Source, *, strict: bool | None = None) -> SourceRead:
    """The documents of a stored source. A source that cannot be read at all raises KnowledgeError; a
    document that cannot be is an IngestFileError among the items. ``strict``: read Markdown in
    supportbot's own front matter format, whatever FRONT_MATTER says."""
    if source.kind == SourceKind.WEB:
        # Here, not at the top: trafilatura and its date parsers take 0.25 s to import, which every
        # Markdown sync (make run starts with one) would pay for nothing.
        from knowledge.web import WebLimits, read_web_source

        if source.public_only:
            # Checked again at every sync: the name may have come to point elsewhere since it was accepted.
            require_public_host(source.location)
        limits = WebLimits(
            max_bytes=settings.WEB_PAGE_MAX_BYTES,
            timeout_s=settings.WEB_FETCH_TIMEOUT_S,
            max_pages=settings.WEB_MAX_PAGES,
        )
        return read_web_source(source.location, audience=source.audience, limits=limits)
    path = Path(source.location)
    if not path.exists():
        raise KnowledgeError(f"{path} does not exist.")
    if source.kind == SourceKind.ZENDESK:
        from knowledge.zendesk import read_zendesk_export

        if path.is_dir() and not any(path.glob("*.json")):
            raise KnowledgeError(f"{path} holds no .json export pages.")
        segments = {int(segment): audience for segment, audience in source.segments.items()}
        exported = read_zendesk_export(path, segments=segments, max_bytes=settings.INGEST_MAX_FILE_BYTES)
        return SourceRead(list(exported), lists_every_page=True)
    if path.suffix.lower() == ".zip":
        limit_bytes = settings.INGEST_MAX_FILE_BYTES * ZIP_MAX_MEMBERS
        if path.stat().st_size > limit_bytes:
            raise KnowledgeError(f"{path} is over the limit of {limit_bytes:,} bytes for an archive.")
        return read_zip(
            str(path),
            path.read_bytes(),
            max_bytes=settings.INGEST_MAX_FILE_BYTES,
            today=timezone.localdate(),
            rules=front_matter_rules(strict=strict),
        )
    if path.is_dir() and not any(
        is_markdown_name(p.name) or p.suffix.lower() in HTML_SUFFIXES for p in path.rglob("*") if p.is_file()
    ):
        raise KnowledgeError(f"{path} holds no Markdown files (.md, .mdx, .markdown) nor .html.")
    return read_folder(
        path,
        max_bytes=settings.INGEST_MAX_FILE_BYTES,
        today=timezone.localdate(),
        rules=front_matter_rules(strict=strict),
    )


def _some(slugs: set[str]) -> str:
    shown = sorted(slugs)[:3]
    return ", ".join(shown) + (", …" if len(slugs) > len(shown) else "")


def demo_slugs() -> set[str]:
    """The ids of the shipped demo's articles (settings.SAMPLE_HELP_CENTRE)."""
    items = read_markdown_tree(settings.SAMPLE_HELP_CENTRE, max_bytes=settings.INGEST_MAX_FILE_BYTES)
    return {item.slug for item in items if isinstance(item, SourceDocument)}


def sync_refusal(collection_name: str, read: SourceRead, *, retire_missing: bool, described: str) -> str | None:
    """Why syncing this source into the collection could lose articles, so must not go ahead unless the
    person says the source replaces what is there (`ingest --replace`); None when it may.

    - The demo's collection (DEMO_COLLECTION), once it holds articles, takes the demo's articles
      only: `make run` syncs the sample folder into it at every start and retires what that folder does not
      list, so anyone's own articles there would be gone at the next start.
    - A sync that would retire more than MAX_RETIRED_SHARE of the collection's live articles (those the
      source does not list; articles posted to the API are never retired by a source) is likelier the
      wrong source or collection than a help centre that lost most of its articles."""
    listed = {item.slug for item in read.items if isinstance(item, SourceDocument)}
    live = set(
        Article.objects.filter(collection__name=collection_name, retired_at__isnull=True)
        .exclude(versions__source_path__startswith=API_SOURCE_PREFIX)
        .values_list("slug", flat=True)
    )
    own_collection = "ingest your own articles into a collection of their own (e.g. --collection mine) and serve it"
    own_collection += " with `make run CHAT_COLLECTION=mine`"
    if collection_name == DEMO_COLLECTION and live:
        foreign = listed - demo_slugs()
        if foreign:
            return (
                f"{collection_name!r} holds the demo help centre: `make run` syncs {settings.SAMPLE_HELP_CENTRE} "
                f"into it at every start and retires what that folder does not list, so the {len(foreign)} "
                f"article(s) of {described} that the demo does not have ({_some(foreign)}) would be lost at the "
                f"next start. Nothing was written: {own_collection}. To put them here all the same, pass --replace."
            )
    all_listed = not any(isinstance(item, IngestFileError) for item in read.items)
    if not (retire_missing and read.lists_every_page and all_listed):
        return None  # this sync retires nothing
    retired = live - listed
    if live and len(retired) > MAX_RETIRED_SHARE * len(live):
        demo = (
            f" {collection_name!r} is where `make run` loads the demo: keep your own articles out of it."
            if collection_name == DEMO_COLLECTION
            else ""
        )
        return (
            f"This sync would retire {len(retired)} of the {len(live)} live articles of {collection_name!r} "
            f"({_some(retired)}): a sync of a folder, an export or a sitemap retires every article it does not "
            f"list. Nothing was written. If {described} is the wrong source or {collection_name!r} the wrong "
            f"collection, {own_collection}.{demo} If {described} is meant to replace those articles, pass --replace."
        )
    return None


def document_json(doc: SourceDocument) -> dict[str, Any]:
    return {**asdict(doc), "effective_date": doc.effective_date.isoformat()}


def document_from_json(data: dict[str, Any]) -> SourceDocument:
    return SourceDocument(**{**data, "effective_date": date.fromisoformat(data["effective_date"])})


def error_json(error: IngestFileError) -> dict[str, Any]:
    return {"path": error.path, "line": error.line, "field": error.field, "message": error.message}


def error_text(error: dict[str, Any]) -> str:
    """A stored error as the command line and the admin show it."""
    location = f"{error['path']}:{error['line']}" if error.get("line") is not None else error["path"]
    return f"{location}: {error['field'] + ': ' if error.get('field') else ''}{error['message']}"


def collection_named(name: str) -> Collection:
    return get_or_create_collection(name, default_embedder(), secondary=secondary_embedder())


def new_run(collection: Collection, *, trigger: str, description: str, **fields: Any) -> SyncRun:
    return SyncRun.objects.create(collection=collection, trigger=trigger, description=description[:2000], **fields)


def record_report(run: SyncRun, report: IngestReport, *, articles_done: int, articles: int) -> None:
    """Copy a sync in the calling process (`ingest()`) onto its run, as it goes."""
    run.articles, run.articles_done = articles, articles_done
    run.new, run.changed, run.unchanged, run.retired = report.new, report.changed, report.unchanged, report.retired
    run.failed, run.chunks, run.embedding_calls = len(report.errors), report.chunks, report.embedding_calls
    run.errors = [error_json(e) for e in report.errors]
    run.warnings = list(report.warnings)
    run.status = SyncStatus.INDEXING
    run.started_at = run.started_at or timezone.now()
    run.save()


def end_run(run: SyncRun, status: str) -> None:
    run.status, run.finished_at = status, timezone.now()
    run.save(update_fields=["status", "finished_at"])


def plan_run(run: SyncRun, read: SourceRead, *, retire_missing: bool) -> None:
    """Split what changed in the source into one unit of work per article; errors and unchanged counts go
    on the run now."""
    strategy, bounds = configured_chunking()
    report = IngestReport()
    plan = plan_sync(run.collection, read.items, strategy=strategy, bounds=bounds, report=report)
    by_slug: dict[str, list[dict[str, Any]]] = {}
    for doc in plan.todo:
        by_slug.setdefault(doc.slug, []).append(document_json(doc))
    with transaction.atomic():
        SyncArticle.objects.bulk_create(
            SyncArticle(run=run, slug=slug, documents=documents) for slug, documents in by_slug.items()
        )
        retire = retire_missing and read.lists_every_page
        run.present_slugs = sorted(plan.slugs) if retire and plan.all_slugs_known else None
        run.warnings = [*read.warnings, *([RETIREMENT_SKIPPED] if retire and not plan.all_slugs_known else [])]
        run.boilerplate = sorted(plan.boilerplate)
        run.errors = [error_json(e) for e in report.errors]
        run.failed = len(report.errors)
        run.unchanged = report.unchanged
        run.articles = len(by_slug)
        run.status = SyncStatus.INDEXING
        run.started_at = run.started_at or timezone.now()
        run.save()


def fail_run(run: SyncRun, message: str) -> None:
    """The run cannot go on (its source unreadable, its collection bound to another embedding model): the
    message is its one error."""
    SyncRun.objects.filter(pk=run.pk).update(
        status=SyncStatus.FAILED,
        errors=[error_json(IngestFileError(run.description, message))],
        failed=1,
        finished_at=timezone.now(),
    )


def _articles_left(run_id: int) -> bool:
    run = SyncRun.objects.only("articles", "articles_done").get(pk=run_id)
    return run.articles_done < run.articles


def sync_article(work_id: int, *, embedder: Embedder, secondary: Embedder | None) -> bool:
    """Write one article's changed versions, in one transaction that also marks the work done, so a retry
    after a crash finds it either undone or done. Returns whether the run still has articles left."""
    with transaction.atomic():
        work = SyncArticle.objects.select_for_update().select_related("run__collection").get(pk=work_id)
        run = work.run
        if work.done_at is None:
            strategy, bounds = configured_chunking()
            label = bounds.describe(strategy)
            docs = [document_from_json(d) for d in work.documents]
            calls_before = embedder.calls
            # Checked again here, under the article's lock: another run may have written it meanwhile.
            lock_articles(run.collection.pk, [work.slug])
            todo = changed_documents(run.collection, docs, label)
            results = []
            if todo:
                prepared = prepare_documents(
                    todo,
                    strategy=strategy,
                    bounds=bounds,
                    embedder=embedder,
                    secondary=secondary,
                    boilerplate=frozenset(run.boilerplate),
                )
                results = write_documents(run.collection, prepared, label)
            work.done_at = timezone.now()
            work.save(update_fields=["done_at"])
            SyncRun.objects.filter(pk=run.pk).update(
                articles_done=F("articles_done") + 1,
                new=F("new") + sum(created for created, _ in results),
                changed=F("changed") + sum(not created for created, _ in results),
                unchanged=F("unchanged") + len(docs) - len(todo),
                chunks=F("chunks") + sum(written for _, written in results),
                embedding_calls=F("embedding_calls") + embedder.calls - calls_before,
            )
    return _articles_left(run.pk)


def fail_article(work_id: int, message: str) -> bool:
    """Give up on one article (its retries are spent): the run records why and goes on. Returns whether
    the run still has articles left."""
    with transaction.atomic():
        work = SyncArticle.objects.select_for_update().get(pk=work_id)
        run = SyncRun.objects.select_for_update().get(pk=work.run_id)
        if work.done_at is None:
            work.done_at, work.error = timezone.now(), message
            work.save(update_fields=["done_at", "error"])
            errors = [error_json(IngestFileError(d["path"], message)) for d in work.documents]
            run.errors = [*run.errors, *errors]
            run.failed += len(errors)
            run.articles_done += 1
            run.save(update_fields=["errors", "failed", "articles_done"])
    return _articles_left(work.run_id)


def finish_run(run_id: int, *, secondary: Embedder | None) -> None:
    """Retire what left the source, refresh the statistics, and mark the run finished; once."""
    with transaction.atomic():
        run = SyncRun.objects.select_for_update().select_related("collection").get(pk=run_id)
        if run.ended or run.articles_done < run.articles:
            return
        present = set(run.present_slugs) if run.present_slugs is not None else None
        run.retired = finish_sync(run.collection, present_slugs=present, wrote_chunks=run.chunks, secondary=secondary)
        run.status, run.finished_at = SyncStatus.FINISHED, timezone.now()
        run.save(update_fields=["retired", "status", "finished_at"])


def run_here(run: SyncRun) -> None:
    """Do a planned run's work in this process, as a worker would."""
    embedder, secondary = default_embedder(), secondary_embedder()
    for work_id in SyncArticle.objects.filter(run=run, done_at__isnull=True).values_list("pk", flat=True):
        try:
            sync_article(work_id, embedder=embedder, secondary=secondary)
        except KnowledgeError as exc:
            fail_article(work_id, str(exc))
    finish_run(run.pk, secondary=secondary)


def publish_in_run(run_id: int, version_id: int, *, embedder: Embedder, secondary: Embedder | None) -> None:
    """Publish a reviewed version (knowledge.publishing) as a run's one article; a version no longer in
    review, or a collection bound to another model, is the run's error, not a retry."""
    run = SyncRun.objects.get(pk=run_id)
    if run.ended:
        return
    version = ArticleVersion.objects.select_related("article__collection").get(pk=version_id)
    SyncRun.objects.filter(pk=run_id).update(status=SyncStatus.INDEXING, started_at=timezone.now())
    calls_before = embedder.calls
    try:
        written = publish(version, embedder=embedder, secondary=secondary)
    except KnowledgeError as exc:
        SyncRun.objects.filter(pk=run_id).update(
            status=SyncStatus.FINISHED,
            failed=1,
            articles_done=1,
            errors=[error_json(IngestFileError(str(version), str(exc)))],
            finished_at=timezone.now(),
        )
        return
    SyncRun.objects.filter(pk=run_id).update(
        status=SyncStatus.FINISHED,
        changed=1,
        articles_done=1,
        chunks=written,
        embedding_calls=embedder.calls - calls_before,
        finished_at=timezone.now(),
    )
