"""A real browser (Debian's Chromium, driven by Playwright) against the real app served by daphne.

The server runs in this process, in a thread, so a test can fake what cannot run here (Claude's HTTP
API) exactly as the other tests do. Twisted's reactor cannot be restarted: one server per test session.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection

from conversations.chat.turn_queue import thread_runner
from customers.loading import load_customers
from tests.knowledge.helpers import sync_folder
from tests.loopback import free_port, wait_for_port

CHROMIUM = Path("/usr/bin/chromium")
# The flags that make Chromium run as root in a container with no GPU, no network and a small /dev/shm.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
ARTIFACTS = Path(settings.BASE_DIR) / "var" / "test-artifacts"
STAFF_PASSWORD = "a-long-test-password"

# Playwright's synchronous API keeps an event loop in the test's thread, which Django takes for async code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def _disconnect_others() -> None:
    """The server's threads keep database connections of their own; the test database cannot be dropped
    while they are open."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


@pytest.fixture(scope="session")
def live_url(django_db_setup, django_db_blocker) -> Iterator[str]:
    from daphne.endpoints import build_endpoint_description_strings
    from daphne.server import Server
    from twisted.internet import reactor

    from supportbot.asgi import application

    port = free_port()
    server = Server(
        application=application,
        endpoints=build_endpoint_description_strings(host="127.0.0.1", port=port),
        signal_handlers=False,
    )
    thread = threading.Thread(target=server.run, name="daphne", daemon=True)
    thread.start()
    wait_for_port(port, within_s=30, what="daphne")
    yield f"http://127.0.0.1:{port}"
    reactor.callFromThread(reactor.stop)  # type: ignore[misc]
    thread.join(timeout=30)
    thread_runner().shutdown()  # turns still running (a flood's) finish before the database goes
    with django_db_blocker.unblock():
        _disconnect_others()


@pytest.fixture(scope="module")
def served_helpcentre(live_url, embedder, tmp_path_factory, django_db_setup, django_db_blocker) -> Iterator[None]:
    """The sample help centre, the sample customers and a staff account, committed so the server's threads see them; the
    database is emptied afterwards for the tests that follow."""
    # Committed data and no per-test transaction: the server's threads must see what the test sees.
    django_db_blocker.unblock()
    folder = tmp_path_factory.mktemp("served") / "helpcentre"
    shutil.copytree(settings.SAMPLE_HELP_CENTRE, folder)
    sync_folder(folder, embedder)
    load_customers(Path(settings.BASE_DIR) / "customers" / "sample" / "customers.json")
    get_user_model().objects.create_user("sam", password=STAFF_PASSWORD, first_name="Sam", is_staff=True)
    yield
    # Emptying the tables while a turn writes can deadlock the flush and leave this module's rows to every
    # test after it.
    settled = thread_runner().settle(within_s=180)
    call_command("flush", interactive=False, verbosity=0)
    django_db_blocker.restore()
    assert settled, "chat turns were still running three minutes after the module's tests"


# Module scope: Playwright's synchronous API keeps an event loop running in this thread while it is open,
# and the async tests that follow need the thread's loop to themselves.
@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: scripts/system.sh installs Debian's chromium package.")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser) -> Iterator[Any]:
    """A desktop browser window of its own, closed after the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    yield context.new_page()
    context.close()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
