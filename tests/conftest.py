"""Fixtures every test may use: the packaged embedding model, the sample help centre indexed, a private Redis, the
runners."""

import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connections

from knowledge.embeddings import Embedder, default_embedder
from knowledge.models import Collection
from tests.knowledge.helpers import sync_folder
from tests.loopback import free_port, wait_for_port


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real packaged embedding model, loaded once for the whole run."""
    return default_embedder()


@pytest.fixture
def sample_dir(tmp_path: Path) -> Path:
    """A private copy of the sample help centre that a test may edit."""
    target = tmp_path / "helpcentre"
    shutil.copytree(settings.SAMPLE_HELP_CENTRE, target)
    return target


@pytest.fixture
def helpcentre(sample_dir, embedder, db) -> Collection:
    """The sample help centre, indexed into a fresh test database."""
    sync_folder(sample_dir, embedder)
    return Collection.objects.get(name="helpcentre")


@pytest.fixture
def small_helpcentre(tmp_path: Path, embedder) -> Collection:
    """One short article: turns are quick, and a question about anything else is not covered."""
    folder = tmp_path / "articles"
    folder.mkdir()
    (folder / "opening-hours.md").write_text(
        "---\nid: opening-hours\ntitle: Opening hours\nversion: '1'\neffective_date: 2026-01-01\n"
        "audience: public\n---\n\n# Opening hours\n\n## Phone support\n\n"
        "Our phone line is open from 9am to 5pm, Monday to Friday. We are closed on public holidays.\n"
    )
    sync_folder(folder, embedder, collection=settings.CHAT_COLLECTION)
    return Collection.objects.get(name=settings.CHAT_COLLECTION)


@pytest.fixture
def private_redis() -> Iterator[str]:
    """A Redis of this test's own on loopback, gone afterwards: nothing else (another test session sharing
    REDIS_URL, a worker it left behind) reads its lists or counts."""
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, within_s=10, what="redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def answers_when_relevant(settings) -> None:
    """The answer cut moved down to where the shipped default starts suggesting: for tests of what happens once
    the decision answers (a model's reply, grounding, a provider's outage), not of where the cut sits."""
    settings.ABSTAIN_THRESHOLD = 0.2


@pytest.fixture(autouse=True)
def own_cache(settings) -> None:
    """Rate-limit counts live in the cache: each test starts with an empty one of its own, not the Redis
    that REDIS_URL may name, shared with other runs (tests of sharing through Redis set their own)."""
    location = f"test-{uuid.uuid4().hex}"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": location}}


@pytest.fixture(autouse=True)
def turns_in_threads(settings) -> None:
    """Turns run in this process's threads, where tests can fake a provider's HTTP; tests of the Celery
    workers (tests/conversations/test_turn_workers.py) set the runner themselves."""
    settings.CHAT_TURN_RUNNER = "threads"


@pytest.fixture(autouse=True)
def syncs_here(settings) -> None:
    """Syncs from the admin and the API are written in the process that asked for them; tests of the ingestion
    workers (tests/knowledge/test_sync_runs.py) start a worker of their own."""
    settings.INGEST_RUNNER = "here"


@pytest.fixture(scope="session", autouse=True)
def close_async_database_connections(django_db_setup, django_db_blocker):
    """Async tests leave connections open in the sockets' database threads (and asgiref's); the test database
    cannot be dropped while one is open, so they are ended from this one."""
    yield
    with django_db_blocker.unblock(), connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    connections.close_all()
