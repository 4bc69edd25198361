"""The chat through faults: Postgres dropping every connection mid-conversation, the websocket server killed
mid-turn, and Redis gone while REDIS_URL is set. The last two run real processes on loopback: daphne, a Celery
worker and a Redis of their own, against this test's database."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import websockets
from asgiref.sync import async_to_sync
from django.db import connection

from conversations.models import Turn
from tests.conversations.test_chat_socket import ask, hello, open_chat
from tests.processes import Processes, frames_until

pytestmark = pytest.mark.django_db(transaction=True)
QUESTION = "When is the phone line open?"


def drop_every_connection() -> int:
    """What clients see when Postgres restarts: every session of the database is cut."""
    db = connection.settings_dict
    with psycopg.connect(
        host=db["HOST"], port=db["PORT"], user=db["USER"], password=db["PASSWORD"], dbname=db["NAME"], autocommit=True
    ) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return len(rows)


@pytest.mark.usefixtures("answers_when_relevant")
def test_postgres_dropping_its_connections_mid_conversation_costs_no_message(small_helpcentre) -> None:
    async def conversation() -> tuple[dict[str, Any], dict[str, Any], int]:
        socket = await open_chat()
        await hello(socket)
        _, first, _ = await ask(socket, QUESTION, "before")
        dropped = await asyncio.to_thread(drop_every_connection)
        _, second, _ = await ask(socket, "Are you open on public holidays?", "after")
        await socket.disconnect()
        return first, second, dropped

    # Run from this synchronous test, the server's database calls use this thread's connection, which the
    # drop cuts as well: the test's own queries afterwards prove it reconnected.
    first, second, dropped = async_to_sync(conversation)()
    assert dropped >= 1
    assert first["decision"] == "answered" and second["decision"] in {"answered", "abstained"}
    assert list(Turn.objects.values_list("customer_message__client_id", flat=True).order_by("pk")) == [
        "before",
        "after",
    ]


# --- Real processes ---------------------------------------------------------------------------------


@pytest.fixture
def processes(small_helpcentre, tmp_path: Path) -> Iterator[Processes]:
    running = Processes(tmp_path)
    try:
        running.start_all()
        yield running
    finally:
        running.stop_all()


def replied_to(message_id: str) -> Any:
    def done(frame: dict[str, Any]) -> bool:
        # The customer's own message carries the id too; the reply is the one with a decision.
        history = frame["messages"] if frame["type"] == "welcome" else []
        in_history = any(m.get("id") == message_id and "decision" in m for m in history)
        return in_history or (frame["type"] == "reply" and frame["id"] == message_id)

    return done


@pytest.mark.asyncio
async def test_the_server_killed_mid_turn_the_customer_gets_the_answer_on_return(processes: Processes) -> None:
    socket = await processes.connect("server")
    await socket.send(json.dumps({"type": "hello", "token": None, "after": 0}))
    welcome = (await frames_until(socket, lambda f: f["type"] == "welcome"))[-1]
    await socket.send(json.dumps({"type": "message", "id": "q1", "text": QUESTION}))
    await frames_until(socket, lambda f: f["type"] == "ack")
    processes.kill("server")  # the turn is the worker's: it goes on without the server
    processes.start("server")

    socket = await processes.connect("server")
    await socket.send(json.dumps({"type": "hello", "token": welcome["token"], "after": 0}))
    frames = await frames_until(socket, replied_to("q1"))
    await socket.close()
    assert frames[0]["type"] == "welcome" and frames[0]["conversation"] == welcome["conversation"]
    assert await Turn.objects.filter(customer_message__client_id="q1").acount() == 1, processes.log("worker")


@pytest.mark.asyncio
async def test_redis_gone_chats_close_and_work_again_when_it_returns(processes: Processes) -> None:
    socket = await processes.connect("server")
    await socket.send(json.dumps({"type": "hello", "token": None, "after": 0}))
    welcome = (await frames_until(socket, lambda f: f["type"] == "welcome"))[-1]
    await socket.send(json.dumps({"type": "message", "id": "q1", "text": QUESTION}))
    await frames_until(socket, replied_to("q1"))

    processes.kill("redis")
    # Nothing can reach a chat without its channel layer: the server closes open chats and new ones (the
    # widget shows it is reconnecting, retries with backoff and keeps what the customer types), ...
    # saying why first.
    said = json.loads(await asyncio.wait_for(socket.recv(), timeout=30))
    assert said["type"] == "error" and said["code"] == "unavailable" and "nothing you wrote is lost" in said["message"]
    await asyncio.wait_for(socket.wait_closed(), timeout=30)
    assert socket.close_code == 1011
    socket = await processes.connect("server")
    await socket.send(json.dumps({"type": "hello", "token": welcome["token"], "after": 0}))
    assert json.loads(await asyncio.wait_for(socket.recv(), timeout=30))["code"] == "unavailable"
    await asyncio.wait_for(socket.wait_closed(), timeout=30)
    assert socket.close_code == 1011

    # ... and when Redis is back the same chat goes on, without a restart of the server or the worker.
    processes.start("redis")
    # The server's first use of a pooled Redis connection from before finds it dead, so the first attempts
    # may still be closed; the widget simply tries again (with its message resent under the same id).
    for _attempt in range(5):
        try:
            socket = await processes.connect("server")
            await socket.send(json.dumps({"type": "hello", "token": welcome["token"], "after": 0}))
            await socket.send(json.dumps({"type": "message", "id": "q2", "text": "Are you open on public holidays?"}))
            frames = await frames_until(socket, replied_to("q2"))
            break
        except websockets.exceptions.ConnectionClosed:
            await asyncio.sleep(1)
    else:
        pytest.fail(f"no reply after Redis came back, in 5 attempts:\n{processes.log('server')}")
    await socket.close()
    assert frames[0]["conversation"] == welcome["conversation"]
    assert await Turn.objects.filter(customer_message__client_id="q2").acount() == 1, processes.log("server")
