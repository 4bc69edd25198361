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
from django.conf import settings as django_settings
from django.db import connection

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


@pytest.mark.asyncio
async def test_postgres_dropping_its_connections_mid_conversation_costs_no_message(small_helpcentre) -> None:
    socket = await open_chat()
    await hello(socket)
    _, first, _ = await ask(socket, QUESTION, "before")
    assert first["decision"] == "answered"
    assert await asyncio.to_thread(drop_every_connection) >= 1  # the server's own connections among them
    ack, second, _ = await ask(socket, "Are you open on public holidays?", "after")
    assert ack["seq"] and second["decision"] in {"answered", "abstained"}
    assert await Turn.objects.acount() == 2
    await socket.disconnect()


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
        f"ws://127.0.0.1:{processes.http_port}/ws/chat/", origin="http://127.0.0.1", open_timeout=30
    )


async def frames_until(socket: Any, done: Any, within_s: float = 180) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    deadline = time.monotonic() + within_s
    while not frames or not done(frames[-1]):
        frames.append(json.loads(await asyncio.wait_for(socket.recv(), timeout=deadline - time.monotonic())))
    return frames


def replied_to(message_id: str) -> Any:
    def done(frame: dict[str, Any]) -> bool:
        in_history = frame["type"] == "welcome" and any(m.get("id") == message_id for m in frame["messages"])
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
async def test_redis_gone_the_customer_is_told_and_answered_when_it_returns(processes: Processes) -> None:
    socket = await connect(processes)
    await socket.send(json.dumps({"type": "hello", "token": None, "after": 0}))
    welcome = (await frames_until(socket, lambda f: f["type"] == "welcome"))[-1]
    await socket.send(json.dumps({"type": "message", "id": "warm", "text": QUESTION}))
    await frames_until(socket, replied_to("warm"))  # the worker has its models

    processes.kill("redis")
    await socket.send(json.dumps({"type": "message", "id": "q2", "text": "Are you open on public holidays?"}))
    frames = await frames_until(socket, lambda f: f["type"] == "busy", within_s=30)
    assert any(f["type"] == "ack" and f["id"] == "q2" for f in frames), frames  # stored before anything else
    assert "kept" in frames[-1]["message"]

    processes.start("redis")
    # Redis lost the chat's subscriptions with its memory; the widget reconnects, as it does after any drop.
    await socket.close()
    socket = await connect(processes)
    await socket.send(json.dumps({"type": "hello", "token": welcome["token"], "after": 0}))
    await frames_until(socket, replied_to("q2"))
    await socket.close()
    assert await Turn.objects.filter(customer_message__client_id="q2").acount() == 1, processes.log("server")
