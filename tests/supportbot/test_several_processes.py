"""The production layout as real processes on loopback: Redis, two daphne servers and a Celery worker taking the
``turns`` and ``ingest`` queues, all on this test's database. A customer chats through one server, a staff
member answers through the other, and the channel layer carries the events between them; an article posted to
one server's ingestion API is written by the worker and its run read back on the other."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model

from conversations.models import Message, Role
from knowledge.api import issue_token
from knowledge.models import ArticleVersion, Collection, IngestionToken
from tests.knowledge.test_ingestion_api import ARTICLE
from tests.processes import Processes, frames_until

pytestmark = pytest.mark.django_db(transaction=True)
QUESTION = "When is the phone line open?"
STAFF_REPLY = "A colleague can call you back tomorrow at 10."
PASSWORD = "correct horse battery staple"


@pytest.fixture
def processes(small_helpcentre, tmp_path: Path) -> Iterator[Processes]:
    running = Processes(tmp_path, servers=("a", "b"), queues=("turns", "ingest"))
    try:
        running.start_all()
        yield running
    finally:
        running.stop_all()


async def signed_in_staff(processes: Processes, server: str) -> httpx2.AsyncClient:
    """Sam signed in through the server's login page, as a browser would: the session in the jar."""
    client = httpx2.AsyncClient(base_url=f"http://127.0.0.1:{processes.ports[server]}", timeout=60)
    login = await client.get("/staff/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
    assert token, login.text
    signed_in = await client.post(
        "/staff/login/",
        data={"csrfmiddlewaretoken": token[1], "username": "sam", "password": PASSWORD},
        follow_redirects=True,
    )
    assert signed_in.url.path == "/staff/queue", signed_in.text
    return client


async def chat_then_staff_reply(processes: Processes) -> str:
    """The customer's question and hand-off on A, the staff reply through B and its arrival on A, asserted as
    they go; the conversation's id."""
    # The customer, on server A, asks; the worker answers.
    customer = await processes.connect("a")
    await customer.send(json.dumps({"type": "hello", "token": None, "after": 0}))
    welcome = (await frames_until(customer, lambda f: f["type"] == "welcome"))[-1]
    await customer.send(json.dumps({"type": "message", "id": "q1", "text": QUESTION}))
    reply = (await frames_until(customer, lambda f: f["type"] == "reply"))[-1]
    assert reply["id"] == "q1" and reply["decision"] == "answered", processes.log("worker")
    assert "9am to 5pm" in reply["text"]

    # Staff sign in on server B and watch the queue there.
    staff = await signed_in_staff(processes, "b")
    queue = await processes.connect("b", "/ws/staff/", cookie=f"sessionid={staff.cookies['sessionid']}")
    await frames_until(queue, lambda f: f["type"] == "presence")  # accepted: the session is the staff member's

    # The customer asks for a person on A; the card appears in the queue on B.
    await customer.send(json.dumps({"type": "handoff"}))
    status = (await frames_until(customer, lambda f: f["type"] == "status"))[-1]
    assert (status["status"], status["person_requested"]) == ("referred", True)
    conversation = welcome["conversation"]
    card = (await frames_until(queue, lambda f: f["type"] == "card" and f["conversation"] == conversation))[-1]
    assert card["waiting"] and QUESTION in card["html"], processes.log("b")

    # Staff reply through the queue's form on B, as its script posts it ...
    page = await staff.get("/staff/queue")
    csrf = re.search(r'<meta name="csrf-token" content="([^"]+)">', page.text)
    assert csrf and conversation in page.text
    sent = await staff.post(
        f"/staff/conversations/{conversation}/reply",
        data={"text": STAFF_REPLY},
        headers={"Accept": "application/json", "X-CSRFToken": csrf[1]},
    )
    assert sent.status_code == 200 and STAFF_REPLY in sent.json()["html"], sent.text

    # ... and the customer's socket on A receives it.
    said = (await frames_until(customer, lambda f: f["type"] == "message" and f["role"] == "staff"))[-1]
    assert (said["text"], said["author"]) == (STAFF_REPLY, "Sam"), processes.log("a")
    await customer.close()
    await queue.close()
    await staff.aclose()
    return conversation


def test_customer_on_one_server_staff_on_another_and_the_worker_between(
    processes: Processes, small_helpcentre: Collection
) -> None:
    # Sync, with the sockets in async_to_sync's loop: no async ORM call leaves a connection in asgiref's
    # thread for a later test (test_chat_faults.py cuts every connection of the database).
    get_user_model().objects.create_user("sam", password=PASSWORD, first_name="Sam", is_staff=True)
    conversation = async_to_sync(chat_then_staff_reply)(processes)
    assert Message.objects.filter(role=Role.STAFF, conversation__public_id=conversation).count() == 1

    # An article posted to the ingestion API on A is written by the worker; its run is read back on B.
    token = IngestionToken(collection=small_helpcentre, name="CMS hook")
    key = issue_token(token)
    token.save()
    headers = {"Authorization": f"Bearer {key}"}
    posted = httpx2.post(f"http://127.0.0.1:{processes.ports['a']}/api/v1/articles", json=ARTICLE, headers=headers)
    # Planned in the request (so a bad field is refused at once), written by the worker.
    assert posted.status_code == 202 and posted.json()["status"] in {"indexing", "finished"}, posted.text
    run_url = f"http://127.0.0.1:{processes.ports['b']}{posted.json()['url']}"
    deadline = time.monotonic() + 120
    while (run := httpx2.get(run_url, headers=headers).json())["status"] != "finished":
        assert time.monotonic() < deadline, processes.log("worker")
        time.sleep(0.5)
    assert (run["articles_done"], run["documents"]["new"], run["errors"]) == (1, 1, [])
    version = ArticleVersion.objects.get(article__slug="delivery-times")
    assert version.status == "published" and version.chunks.count() == run["chunks_written"] > 0
