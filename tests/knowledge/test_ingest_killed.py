"""A real `manage.py ingest` killed (SIGKILL) while it writes a new version of an article: the previous
version keeps serving, nothing is half-written, and the next run completes.

Where the kill lands is decided by locks, not by timing. The test holds the article's row, so the ingest
waits at the first statement of its write transaction; the test then takes the collection's table and
lets the row go, so the ingest writes the version, deletes the old chunks, inserts the new ones with their
postings, and waits again in the last check before its commit (the chunks' embedding-space guard reads
the collection). Only then is it killed: every row of the new version exists, uncommitted.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.db import connection
from django.db.models import Count, Q

from knowledge.models import ArticleVersion, Chunk, Collection, Posting, VersionStatus
from knowledge.retrieval import search
from tests.knowledge.helpers import sync_folder

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "how long until my refund shows on my card"
OLD, NEW = "5 to 10 business days", "3 to 4 business days"
APP_NAME = "ingest-under-test"
WAIT_S = 300  # the subprocess loads two embedding models and embeds the article on a busy machine


def database_url() -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def start_ingest(folder: Path) -> subprocess.Popen[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HF_HUB_OFFLINE": "1",
        "DATABASE_URL": database_url(),
        "PGAPPNAME": APP_NAME,  # libpq names the subprocess's connection, so the test can find it
    }
    return subprocess.Popen(
        [sys.executable, "manage.py", "ingest", str(folder), "--collection", "helpcentre"],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until_blocked(watcher: psycopg.Connection, ingest: subprocess.Popen[str], *, on: str | None) -> None:
    """Until the ingest's connection waits for a lock (on table `on`, or on a row when None)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if ingest.poll() is not None:
            pytest.fail(f"ingest ended before the kill: {ingest.returncode}\n{ingest.communicate()[1]}")
        rows = watcher.execute(
            "SELECT l.locktype, l.relation::regclass::text FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE a.application_name = %s AND NOT l.granted",
            [APP_NAME],
        ).fetchall()
        if any((relation == on) if on else locktype in ("transactionid", "tuple") for locktype, relation in rows):
            return
        time.sleep(0.05)
    pytest.fail(f"ingest did not reach the lock on {on or 'the article row'} within {WAIT_S} s")


def half_written(collection: Collection) -> list[str]:
    """Everything that would show a write stopped half-way."""
    problems = []
    live = ArticleVersion.objects.filter(
        article__collection=collection, article__retired_at__isnull=True, indexed_at__isnull=False
    )
    for version in live.annotate(chunk_total=Count("chunks")).filter(chunk_total=0):
        problems.append(f"{version.article.slug} v{version.version_label} has no chunks")
    chunks = Chunk.objects.filter(version__article__collection=collection)
    if missing := chunks.filter(Q(embedding__isnull=True) | Q(secondary_embedding__isnull=True)).count():
        problems.append(f"{missing} chunks without both vectors")
    if unindexed := chunks.exclude(id__in=Posting.objects.values("chunk_id")).count():
        problems.append(f"{unindexed} chunks without postings")
    published = live.filter(status=VersionStatus.PUBLISHED).values("article__slug").annotate(n=Count("id"))
    problems += [f"{row['article__slug']} has {row['n']} published versions" for row in published if row["n"] != 1]
    collection.refresh_from_db()
    if collection.chunk_count != chunks.count():
        problems.append(f"statistics count {collection.chunk_count} chunks, the table holds {chunks.count()}")
    return problems


def best_answer(collection: Collection, embedder) -> tuple[str, str]:
    hit = search(QUESTION, collection=collection, audience="public", k=3, embedder=embedder)[0]
    return hit.chunk.version.version_label, hit.chunk.text


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Three articles of the sample help centre (refunds among them), ingested and committed."""
    target = tmp_path / "helpcentre"
    target.mkdir()
    for name in ("refunds.md", "returns.md", "payment-errors.md"):
        shutil.copy(settings.SAMPLE_HELP_CENTRE / name, target / name)
    return target


def edit_in_place(folder: Path) -> str:
    path = folder / "refunds.md"
    path.write_text(path.read_text().replace(OLD, NEW))
    return "1"


def publish_version_two(folder: Path) -> str:
    text = (folder / "refunds.md").read_text()
    text = text.replace('version: "1"', 'version: "2"\nsupersedes: "1"').replace("2026-02-01", "2026-03-01")
    (folder / "refunds-v2.md").write_text(text.replace(OLD, NEW))
    return "2"


@pytest.mark.parametrize("change", [edit_in_place, publish_version_two], ids=["edited", "new-version"])
def test_an_ingest_killed_mid_article_leaves_the_previous_version_serving(folder, embedder, change, capsys):
    sync_folder(folder, embedder)
    collection = Collection.objects.get(name="helpcentre")
    before = ArticleVersion.objects.get(article__slug="refunds", version_label="1")
    assert best_answer(collection, embedder)[0] == "1" and OLD in best_answer(collection, embedder)[1]
    chunks_before = set(Chunk.objects.filter(version=before).values_list("id", flat=True))
    new_label = change(folder)

    with (
        psycopg.connect(database_url(), autocommit=True) as watcher,
        psycopg.connect(database_url()) as row_lock,
        psycopg.connect(database_url()) as table_lock,
    ):
        row_lock.execute("SELECT id FROM knowledge_article WHERE slug = 'refunds' FOR UPDATE")
        ingest = start_ingest(folder)
        try:
            wait_until_blocked(watcher, ingest, on=None)
            table_lock.execute("LOCK TABLE knowledge_collection IN ACCESS EXCLUSIVE MODE")
            row_lock.rollback()
            wait_until_blocked(watcher, ingest, on="knowledge_collection")
            # Inside the write: the open transaction has written versions, chunks and postings.
            writing = set(
                watcher.execute(
                    "SELECT l.relation::regclass::text FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                    "WHERE a.application_name = %s AND l.granted AND l.mode = 'RowExclusiveLock'",
                    [APP_NAME],
                ).fetchall()
            )
            os.kill(ingest.pid, signal.SIGKILL)
            ingest.wait(timeout=30)
        finally:
            if ingest.poll() is None:
                ingest.kill()
            table_lock.rollback()
        # The server side of the killed connection rolls back and goes once the lock is free.
        deadline = time.monotonic() + 30
        sessions = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
        while watcher.execute(sessions, [APP_NAME]).fetchall() != [(0,)]:
            assert time.monotonic() < deadline, "the killed ingest's database session did not end"
            time.sleep(0.05)
    assert ingest.returncode == -signal.SIGKILL
    assert {("knowledge_articleversion",), ("knowledge_chunk",), ("knowledge_posting",)} <= writing

    # The previous version still serves, untouched, and nothing of the new one is left.
    label, text = best_answer(collection, embedder)
    assert label == "1" and OLD in text
    assert half_written(collection) == []
    before.refresh_from_db()
    assert before.status == VersionStatus.PUBLISHED
    assert before.content_hash == hashlib.sha256((settings.SAMPLE_HELP_CENTRE / "refunds.md").read_bytes()).hexdigest()
    assert set(Chunk.objects.filter(version=before).values_list("id", flat=True)) == chunks_before
    assert not ArticleVersion.objects.filter(article__slug="refunds", version_label="2").exists()

    # Run again: it completes and the new text serves.
    started = time.perf_counter()
    again = start_ingest(folder)
    out, err = again.communicate(timeout=WAIT_S)
    seconds = time.perf_counter() - started
    assert again.returncode == 0, err
    assert ("1 changed" if new_label == "1" else "1 new") in out, out
    label, text = best_answer(collection, embedder)
    assert label == new_label and NEW in text and OLD not in text
    assert half_written(collection) == []
    with capsys.disabled():
        print(
            f"\n[ingest killed mid-article: {change.__name__}] previous version served after the kill; "
            f"rerun completed in {seconds:.1f} s: {out.strip()}"
        )
