"""The chat through faults: Postgres dropping every connection mid-conversation, the websocket server killed
mid-turn, and Redis gone while REDIS_URL is set. The last two run real processes on loopback: daphne, a Celery
worker and a Redis of their own, against this test's database."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import websockets
from asgiref.sync import async_to_sync
from django.conf import settings as django_settings
from django.db import connection
from websockets.typing import Origin

from conversations.models import Turn
from tests.conversations.test_chat_socket import ask, hello, open_chat
from tests.loopback import free_port, wait_for_port

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
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


class Processes:
    """daphne, a Celery worker and Redis on loopback, sharing this test's database."""

    def __init__(self, tmp_path: Path) -> None:
        db = connection.settings_dict
        self.redis_port, self.http_port = free_port(), free_port()
        self.logs = tmp_path
        self.env = {
            **os.environ,
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            "REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "CHAT_TURN_RUNNER": "celery",
            "CHAT_COLLECTION": django_settings.CHAT_COLLECTION,
            "CHAT_BUSY_RETRY_S": "0.5",
            "HF_HUB_OFFLINE": "1",
        }
        self.running: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str) -> None:
        commands = {
            "redis": ["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port), "--save", "", "--appendonly", "no"],
            "worker": [str(BIN / "celery"), "-A", "supportbot", "worker", "-Q", "turns", "-c", "1", "-P", "solo",
                       "--without-mingle", "--without-gossip", "-l", "warning"],
            "server": [str(BIN / "daphne"), "-b", "127.0.0.1", "-p", str(self.http_port), "supportbot.asgi:application"],
        }  # fmt: skip
        log = (self.logs / f"{name}.log").open("ab")
        self.running[name] = subprocess.Popen(commands[name], cwd=ROOT, env=self.env, stdout=log, stderr=log)
        if name != "worker":
            wait_for_port(self.redis_port if name == "redis" else self.http_port, within_s=60, what=name)

    def kill(self, name: str) -> None:
        process = self.running.pop(name)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    def stop_all(self) -> None:
        for name in list(self.running):
            self.kill(name)

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")[-3000:]


@pytest.fixture
def processes(small_helpcentre, tmp_path: Path) -> Iterator[Processes]:
    running = Processes(tmp_path)
    running.start("redis")
    running.start("worker")
    running.start("server")
    try:
        yield running
    finally:
        running.stop_all()


async def connect(processes: Processes) -> Any:
    return await websockets.connect(
        f"ws://127.0.0.1:{processes.http_port}/ws/chat/", origin=Origin("http://127.0.0.1"), open_timeout=30
    )


async def frames_until(socket: Any, done: Any, within_s: float = 180) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    deadline = time.monotonic() + within_s
    while not frames or not done(frames[-1]):
        frames.append(json.loads(await asyncio.wait_for(socket.recv(), timeout=deadline - time.monotonic())))
    return frames


def replied_to(message_id: str) -> Any:
    def done(frame: dict[str, Any]) -> bool:
        # The customer's own message carries the id too; the reply is the one with a decision.
        history = frame["messages"] if frame["type"] == "welcome" else []
        in_history = any(m.get("id") == message_id and "decision" in m for m in history)
        return in_history or (frame["type"] == "reply" and frame["id"] == message_id)

    return done


@pytest.mark.asyncio
async def test_the_server_killed_mid_turn_the_customer_gets_the_answer_on_return(processes: Processes) -> None:
    socket = await connect(processes)
    await socket.send(json.dumps({"type": "hello", "token": None, "after": 0}))
    welcome = (await frames_until(socket, lambda f: f["type"] == "welcome"))[-1]
    await socket.send(json.dumps({"type": "message", "id": "q1", "text": QUESTION}))
    await frames_until(socket, lambda f: f["type"] == "ack")
    processes.kill("server")  # the turn is the worker's: it goes on without the server
    processes.start("server")

    socket = await connect(processes)
    await socket.send(json.dumps({"type": "hello", "token": welcome["token"], "after": 0}))
    frames = await frames_until(socket, replied_to("q1"))
    await socket.close()
    assert frames[0]["type"] == "welcome" and frames[0]["conversation"] == welcome["conversation"]
    assert await Turn.objects.filter(customer_message__client_id="q1").acount() == 1, processes.log("worker")


@pytest.mark.asyncio
async def test_redis_gone_chats_close_and_work_again_when_it_returns(processes: Processes) -> None:
    socket = await connect(processes)
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
    socket = await connect(processes)
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
            socket = await connect(processes)
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
