"""Syncs as sync runs: a source's changes split into one unit of work per article, each written once even
when retried, one writer at a time per article, the run finished by retiring what left the source; and the
same through a real Celery worker with beat re-syncing a stored source on its schedule."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from knowledge import publishing, sync, tasks
from knowledge.models import Article, ArticleVersion, Source, SourceKind, SyncArticle, SyncRun, SyncStatus, SyncTrigger
from knowledge.sources import SourceRead, read_markdown_tree
from tests.conversations.test_turn_workers import use_broker

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def three_articles(tmp_path: Path) -> Path:
    folder = tmp_path / "three"
    folder.mkdir()
    for name in ("gift-cards.md", "order-tracking.md", "contact-and-hours.md"):
        shutil.copy(Path(django_settings.SAMPLE_HELP_CENTRE) / name, folder / name)
    return folder


def source_of(folder: Path, collection: str = "synced") -> Source:
    return Source.objects.create(
        collection=sync.collection_named(collection), kind=SourceKind.MARKDOWN, location=str(folder)
    )


@pytest.mark.django_db
def test_a_source_synced_run_by_run_skips_what_is_unchanged_and_retires_what_left(tmp_path, embedder, settings):
    settings.INGEST_RUNNER = "here"
    folder = three_articles(tmp_path)
    source = source_of(folder)

    first = tasks.start_source_run(source, trigger=SyncTrigger.ADMIN)
    assert (first.status, first.articles, first.articles_done, first.new, first.failed) == ("finished", 3, 3, 3, 0)
    assert first.chunks > 0 and first.embedding_calls > 0 and first.finished_at is not None

    again = tasks.start_source_run(source, trigger=SyncTrigger.SCHEDULE)
    assert (again.articles, again.unchanged, again.embedding_calls, again.chunks) == (0, 3, 0, 0)

    (folder / "gift-cards.md").write_text((folder / "gift-cards.md").read_text() + "\nGift cards never expire.\n")
    (folder / "order-tracking.md").unlink()
    (folder / "broken.md").write_text("---\ntitle: Broken, its front matter never closed\n")
    edited = tasks.start_source_run(source, trigger=SyncTrigger.ADMIN)
    assert (edited.changed, edited.unchanged, edited.failed, edited.retired) == (1, 1, 1, 0)
    # An unreadable file's id is unknown, so nothing is retired until it is fixed.
    assert edited.warnings and "not retired" in edited.warnings[0]
    assert edited.errors[0]["path"].endswith("broken.md") and "front matter" in edited.errors[0]["message"]

    (folder / "broken.md").unlink()
    fixed = tasks.start_source_run(source, trigger=SyncTrigger.ADMIN)
    assert (fixed.retired, fixed.failed, fixed.embedding_calls) == (1, 0, 0)
    assert Article.objects.get(slug="order-tracking").retired_at is not None


@pytest.mark.django_db
def test_a_source_that_cannot_be_read_fails_its_run_and_writes_nothing(tmp_path, embedder, settings):
    settings.INGEST_RUNNER = "here"
    run = tasks.start_source_run(source_of(tmp_path / "gone"), trigger=SyncTrigger.ADMIN)
    assert run.status == SyncStatus.FAILED and "does not exist" in run.errors[0]["message"]
    assert not Article.objects.exists()


def planned(folder: Path) -> SyncRun:
    run = sync.new_run(sync.collection_named("synced"), trigger=SyncTrigger.API, description=str(folder))
    sync.plan_run(run, SourceRead(list(read_markdown_tree(folder, max_bytes=100_000)), True), retire_missing=True)
    return run


@pytest.mark.django_db
def test_an_article_s_work_done_twice_is_written_once(tmp_path, embedder):
    run = planned(three_articles(tmp_path))
    work = SyncArticle.objects.filter(run=run).order_by("slug")
    first = work[0].pk
    assert sync.sync_article(first, embedder=embedder, secondary=None) is True  # two articles left
    calls = embedder.calls
    # A redelivered task (the worker died after committing): nothing is embedded or counted again.
    assert sync.sync_article(first, embedder=embedder, secondary=None) is True
    assert embedder.calls == calls
    run.refresh_from_db()
    assert (run.articles_done, run.new) == (1, 1)


@pytest.mark.django_db
def test_an_article_that_keeps_failing_is_named_and_the_run_still_finishes(tmp_path, embedder):
    run = planned(three_articles(tmp_path))
    failing, *rest = SyncArticle.objects.filter(run=run).order_by("slug")
    for work in rest:
        sync.sync_article(work.pk, embedder=embedder, secondary=None)
    assert sync.fail_article(failing.pk, "gave up after 4 tries: database is down") is False
    sync.finish_run(run.pk, secondary=None)
    run.refresh_from_db()
    assert (run.status, run.failed, run.new, run.retired) == ("finished", 1, 2, 0)
    assert run.errors == [
        {
            "path": failing.documents[0]["path"],
            "line": None,
            "field": None,
            "message": "gave up after 4 tries: database is down",
        }
    ]


@pytest.mark.django_db(transaction=True)
def test_two_writers_of_one_article_take_turns(tmp_path, embedder):
    run = planned(three_articles(tmp_path))
    work = SyncArticle.objects.filter(run=run).order_by("slug").first()
    assert work is not None
    db = connection.settings_dict
    other = psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"], dbname=db["NAME"], autocommit=True)
    # Another writer (a second run, a command) holds the article.
    other.execute("SELECT pg_advisory_lock(%s::int, hashtext(%s))", [run.collection_id, work.slug])

    def write() -> None:
        sync.sync_article(work.pk, embedder=embedder, secondary=None)
        connection.close()

    writer = threading.Thread(target=write)
    writer.start()
    writer.join(timeout=3)
    assert writer.is_alive(), "wrote while another writer held the article"
    assert SyncArticle.objects.get(pk=work.pk).done_at is None
    other.execute("SELECT pg_advisory_unlock(%s::int, hashtext(%s))", [run.collection_id, work.slug])
    writer.join(timeout=120)
    other.close()
    assert not writer.is_alive() and SyncArticle.objects.get(pk=work.pk).done_at is not None


@pytest.mark.django_db
def test_background_is_refused_when_it_cannot_work(tmp_path, sample_dir, settings):
    settings.REDIS_URL = ""
    with pytest.raises(CommandError, match="needs REDIS_URL"):
        call_command("ingest", str(sample_dir), "--collection", "x", "--background")
    with pytest.raises(CommandError, match="not a BEIR corpus"):
        call_command("ingest", str(sample_dir), "--collection", "x", "--background", "--format", "beir")
    with pytest.raises(CommandError, match="--no-wait applies to --background only"):
        call_command("ingest", str(sample_dir), "--collection", "x", "--no-wait")
    with pytest.raises(CommandError, match="leave out --strategy"):
        call_command("ingest", str(sample_dir), "--collection", "x", "--background", "--max-tokens", "120")


# --- A real worker, with beat --------------------------------------------------------------------------


@pytest.fixture
def ingest_worker(settings, private_redis, tmp_path):
    """A Celery worker of the "ingest" queue with beat inside it (-B), in its own process, on this test's
    database and Redis; beat looks for due sources every second."""
    db = connection.settings_dict
    settings.REDIS_URL = private_redis
    settings.INGEST_RUNNER = "celery"
    broker = tasks.read_source.app.conf.broker_url
    use_broker(private_redis)
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "REDIS_URL": private_redis,
        "INGEST_RUNNER": "celery",
        "SOURCE_RESYNC_CHECK_S": "1",
        "CHAT_WARM_MODELS": "0",
        "HF_HUB_OFFLINE": "1",
    }
    log = (tmp_path / "worker.log").open("ab")
    worker = subprocess.Popen(
        [str(BIN / "celery"), "-A", "supportbot", "worker", "-Q", "ingest", "-P", "solo", "-B",
         "-s", str(tmp_path / "beat-schedule"), "--without-mingle", "--without-gossip", "-l", "warning"],
        cwd=ROOT, env=env, stdout=log, stderr=log, start_new_session=True,
    )  # fmt: skip
    try:
        yield tmp_path / "worker.log"
    finally:
        # The whole group: beat runs in a process of its own, which outlives a worker killed alone.
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
        use_broker(broker)


def wait_for_run(within_s: float, **lookup: object) -> SyncRun:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        run = SyncRun.objects.filter(**lookup).first()
        if run is not None and run.ended:
            return run
        time.sleep(0.5)
    raise AssertionError(f"no ended sync run {lookup} within {within_s:g} s")


@pytest.mark.django_db(transaction=True)
def test_a_worker_syncs_in_the_background_and_beat_re_syncs_on_schedule(tmp_path, embedder, ingest_worker, capsys):
    folder = three_articles(tmp_path)
    try:
        call_command("ingest", str(folder), "--collection", "synced", "--background")
    finally:
        print(ingest_worker.read_text(errors="replace")[-3000:], file=sys.stderr)
    out = capsys.readouterr().out
    assert "3 new, 0 changed, 0 unchanged, 0 failed, 0 retired" in out and "Indexing: " in out
    run = SyncRun.objects.get(trigger=SyncTrigger.COMMAND)
    assert (run.status, run.articles_done, run.source.location) == ("finished", 3, str(folder.resolve()))

    # Due once its interval has passed since the last run began: beat's next look starts one.
    source = Source.objects.get()
    source.resync_minutes = 5
    source.save()
    SyncRun.objects.update(created_at=timezone.now() - timedelta(minutes=6))
    scheduled = wait_for_run(120, trigger=SyncTrigger.SCHEDULE)
    assert (scheduled.status, scheduled.unchanged, scheduled.embedding_calls, scheduled.retired) == (
        "finished",
        3,
        0,
        0,
    )
    # Not again until another interval has passed.
    time.sleep(3)
    assert SyncRun.objects.filter(trigger=SyncTrigger.SCHEDULE).count() == 1

    # A publish from the admin is the worker's too.
    version = ArticleVersion.objects.get(article__slug="gift-cards")
    draft = publishing.new_draft_from(version, body=version.body + "\nGift cards can be topped up.\n")
    publishing.submit_for_review(draft)
    queued = tasks.start_publish(draft)
    assert queued.status == SyncStatus.QUEUED
    published = wait_for_run(120, pk=queued.pk)
    assert (published.changed, published.chunks > 0, published.failed) == (1, True, 0)
    draft.refresh_from_db()
    assert draft.status == "published"

    # A file that cannot be read: named on stderr, and the command fails as an in-process sync would.
    (folder / "broken.md").write_text("---\ntitle: Broken, its front matter never closed\n")
    capsys.readouterr()
    with pytest.raises(CommandError, match=r"1 document\(s\) failed"):
        call_command("ingest", str(folder), "--collection", "synced", "--background")
    assert "broken.md" in capsys.readouterr().err


@pytest.mark.django_db
def test_a_source_is_due_once_per_interval(tmp_path, embedder, settings):
    settings.INGEST_RUNNER = "here"
    scheduled = source_of(three_articles(tmp_path))
    source_of(tmp_path / "never", collection="other")  # no interval: never synced by the schedule
    scheduled.resync_minutes = 30
    scheduled.save()
    (first,) = tasks.sync_due_sources()
    assert tasks.sync_due_sources() == []  # a second beat, or the next look: not due again yet
    SyncRun.objects.update(created_at=timezone.now() - timedelta(minutes=31))
    (second,) = tasks.sync_due_sources()
    assert SyncRun.objects.get(pk=second).embedding_calls == 0 and first != second


@pytest.mark.django_db
def test_staff_add_a_source_sync_it_from_the_admin_and_follow_its_run(tmp_path, embedder, settings):
    from django.contrib.auth.models import User
    from django.test import Client
    from django.urls import reverse

    settings.INGEST_RUNNER = "here"
    client = Client()
    client.force_login(User.objects.create_superuser("admin"))
    collection = sync.collection_named("synced")
    add = reverse("admin:knowledge_source_add")
    base = {"collection": collection.pk, "audience": "public", "segments": "{}", "resync_minutes": ""}
    bad = client.post(add, {**base, "kind": "web", "location": "ftp://help.example.com/"})
    assert bad.status_code == 200 and "A web source is an http(s) address." in bad.content.decode()
    bad = client.post(add, {**base, "kind": "zendesk", "location": "/srv/x", "segments": '{"abc": "member"}'})
    assert "is not a segment id" in bad.content.decode()
    folder = three_articles(tmp_path)
    assert client.post(add, {**base, "kind": "markdown", "location": str(folder)}).status_code == 302
    source = Source.objects.get()

    changelist = reverse("admin:knowledge_source_changelist")
    done = client.post(changelist, {"action": "sync_now", "_selected_action": [source.pk]}, follow=True)
    run = SyncRun.objects.get(source=source)
    assert f"Sync run {run.pk}" in done.content.decode() and run.trigger == SyncTrigger.ADMIN
    progress = client.get(reverse("admin:knowledge_syncrun_progress", args=[run.pk])).json()
    assert progress["ended"] is True and progress["articles"] == "3 of 3" and progress["problems"] == []
    assert progress["documents"].startswith("3 new, 0 changed")
    page = client.get(reverse("admin:knowledge_syncrun_change", args=[run.pk])).content.decode()
    assert "admin-sync-run.js" in page and "3 of 3" in page
    # Somebody without the knowledge base's permissions sees no runs.
    outsider = Client()
    outsider.force_login(User.objects.create_user("clerk", is_staff=True))
    assert outsider.get(reverse("admin:knowledge_syncrun_progress", args=[run.pk])).status_code == 403
