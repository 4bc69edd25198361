"""Ingestion throughput through the Celery workers: documents per minute at a given number of worker
processes, measured from queueing a sync run until it has ended (models already loaded)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from django.conf import settings

from knowledge import tasks
from knowledge.models import Collection, SyncRun, SyncTrigger
from knowledge.sources import SourceDocument, SourceRead

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class WorkerTrial:
    processes: int
    documents: int
    chunks: int
    seconds: float
    failed: int

    @property
    def documents_per_minute(self) -> float:
        return self.documents / self.seconds * 60


def _wait(run: SyncRun, within_s: float) -> SyncRun:
    deadline = time.monotonic() + within_s
    while not run.ended:
        if time.monotonic() > deadline:
            raise RuntimeError(f"sync run {run.pk} did not end within {within_s:g} s")
        time.sleep(0.2)
        run.refresh_from_db()
    return run


def _sync(collection: str, docs: list[SourceDocument], within_s: float) -> tuple[SyncRun, float]:
    Collection.objects.filter(name=collection).delete()
    started = time.perf_counter()
    run = tasks.start_documents_run(
        collection,
        SourceRead(list(docs), lists_every_page=False),
        trigger=SyncTrigger.COMMAND,
        description=f"bench workers: {len(docs)} documents",
        retire_missing=False,
    )
    run = _wait(run, within_s)
    return run, time.perf_counter() - started


def time_workers(docs: list[SourceDocument], processes: int, *, log: Path, within_s: float = 3600) -> WorkerTrial:
    """Start one worker of `processes` processes on the ingest queue, warm each process up with a small run,
    then time a sync of `docs` through it."""
    env = {**os.environ, "INGEST_RUNNER": "celery", "CHAT_WARM_MODELS": "0"}
    command = [sys.executable, "-m", "celery", "-A", "supportbot", "worker", "-Q", "ingest", "-c", str(processes),
               "--without-mingle", "--without-gossip", "-l", "warning"]  # fmt: skip
    with log.open("ab") as out:
        worker = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
    try:
        # Each process loads the models on its first task: enough small articles that every one gets some.
        warm = [replace(d, slug=f"warm-{d.slug}") for d in docs[: 4 * processes]]
        _sync("bench-workers-warm", warm, within_s)
        run, seconds = _sync("bench-workers", docs, within_s)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
        Collection.objects.filter(name__in=["bench-workers", "bench-workers-warm"]).delete()
    return WorkerTrial(processes, run.new + run.changed, run.chunks, seconds, run.failed)


def require_workers_configured() -> None:
    if not settings.REDIS_URL or settings.INGEST_RUNNER != "celery":
        raise RuntimeError("bench workers needs REDIS_URL (and INGEST_RUNNER=celery, its default then).")
