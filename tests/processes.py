"""The production shape as real processes on loopback, for tests: Redis, daphne servers (each on its own port)
and a Celery worker, sharing the running test's database."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import websockets
from django.conf import settings as django_settings
from django.db import connection
from websockets.asyncio.client import ClientConnection
from websockets.typing import Origin

from tests.loopback import free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


class Processes:
    """Redis, the named daphne servers and one Celery worker taking ``queues``; each started by name (``redis``,
    ``worker`` or a server's), its output in ``logs/<name>.log``."""

    def __init__(self, logs: Path, *, servers: Sequence[str] = ("server",), queues: Sequence[str] = ("turns",)) -> None:
        db = connection.settings_dict
        self.redis_port = free_port()
        self.ports = {name: free_port() for name in servers}
        self.queues = queues
        self.logs = logs
        self.env = {
            **os.environ,
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            "REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "CHAT_TURN_RUNNER": "celery",
            "INGEST_RUNNER": "celery",
            "CHAT_COLLECTION": django_settings.CHAT_COLLECTION,
            "CHAT_BUSY_RETRY_S": "0.5",
            "HF_HUB_OFFLINE": "1",
        }
        self.running: dict[str, subprocess.Popen[bytes]] = {}

    def command(self, name: str) -> list[str]:
        if name == "redis":
            return ["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port), "--save", "", "--appendonly", "no"]  # fmt: skip
        if name == "worker":
            return [str(BIN / "celery"), "-A", "supportbot", "worker", "-Q", ",".join(self.queues), "-c", "1",
                    "-P", "solo", "--without-mingle", "--without-gossip", "-l", "warning"]  # fmt: skip
        return [str(BIN / "daphne"), "-b", "127.0.0.1", "-p", str(self.ports[name]), "supportbot.asgi:application"]

    def start(self, name: str) -> None:
        """Start the process; Redis and servers are waited for until they listen (the worker has no port)."""
        with (self.logs / f"{name}.log").open("ab") as log:
            self.running[name] = subprocess.Popen(self.command(name), cwd=ROOT, env=self.env, stdout=log, stderr=log)
        if name != "worker":
            wait_for_port(self.redis_port if name == "redis" else self.ports[name], within_s=60, what=name)

    def start_all(self) -> None:
        """Redis, then the worker (its models load while the servers start), then every server."""
        for name in ("redis", "worker", *self.ports):
            self.start(name)

    async def connect(self, server: str, path: str = "/ws/chat/", *, cookie: str | None = None) -> ClientConnection:
        """A websocket to one of the servers, from a page on an allowed host; ``cookie`` for a signed-in user."""
        return await websockets.connect(
            f"ws://127.0.0.1:{self.ports[server]}{path}",
            origin=Origin("http://127.0.0.1"),
            additional_headers={"Cookie": cookie} if cookie else None,
            open_timeout=30,
        )

    def kill(self, name: str) -> None:
        process = self.running.pop(name)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    def stop_all(self) -> None:
        for name in list(self.running):
            self.kill(name)

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")[-3000:]


async def frames_until(
    socket: ClientConnection, done: Callable[[dict[str, Any]], bool], within_s: float = 180
) -> list[dict[str, Any]]:
    """The frames the socket receives up to and including the first one ``done`` accepts."""
    frames: list[dict[str, Any]] = []
    deadline = time.monotonic() + within_s
    while not frames or not done(frames[-1]):
        frames.append(json.loads(await asyncio.wait_for(socket.recv(), timeout=deadline - time.monotonic())))
    return frames
