"""manage.py bench_chat: chat latency as customers see it, with several websocket clients at once."""

import asyncio
import itertools
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test.utils import override_settings

from answering.services import warm_up
from conversations.models import Conversation
from knowledge.models import Collection
from lab import metrics
from lab.calibration import SAMPLE_SET, read_calibration_set
from lab.errors import CalibrationError


@dataclass
class ChatRun:
    """What the customers saw: per-message latencies, and every frame that was not a plain answer."""

    timings: dict[str, list[float]] = field(default_factory=lambda: {"ack": [], "first_token": [], "reply": []})
    decisions: Counter[str] = field(default_factory=Counter)
    notices: Counter[str] = field(default_factory=Counter)  # "queued" and "busy" frames
    errors: list[str] = field(default_factory=list)
    replies: Counter[str] = field(default_factory=Counter)  # per message id: more than 1 is answered twice
    lost: int = 0  # no reply within the timeout
    conversations: list[str] = field(default_factory=list)


class Command(BaseCommand):
    help = (
        "Chat latency as customers see it: several websocket clients ask the labelled questions at once "
        "through the real ASGI application (origin check, consumer, channel layer) while turns run where "
        "CHAT_TURN_RUNNER sends them (start `celery -A supportbot worker -Q turns -c N` first for the Celery "
        "runner); prints p50/p95 of the acknowledgement, the first streamed token and the final reply, turns "
        "per second, queue notices, errors, messages lost and answered twice. The per-connection message and "
        "per-address connection limits are lifted for the run (every client comes from this machine); the "
        "conversations it creates are deleted afterwards."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", type=Path, default=SAMPLE_SET)
        parser.add_argument("--clients", type=int, default=4, help="customers chatting at the same time")
        parser.add_argument(
            "--limit", type=int, default=40, help="questions in all (the set's questions repeat when it is shorter)"
        )
        parser.add_argument("--timeout", type=float, default=600.0, help="seconds a customer waits for a reply")
        parser.add_argument(
            "--storm",
            action="store_true",
            help="each customer asks as soon as its own chat is open, while the others are still connecting "
            "(by default everyone connects first, then all ask at the same moment)",
        )
        parser.add_argument("--json", type=Path, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["limit"] < 1 or options["clients"] < 1 or options["timeout"] <= 0:
            raise CommandError("--limit, --clients and --timeout must be positive numbers.")
        if not Collection.objects.filter(name=settings.CHAT_COLLECTION).exists():
            raise CommandError(f"No collection {settings.CHAT_COLLECTION!r} (CHAT_COLLECTION); ingest it first.")
        try:
            labelled = [q.question for q in read_calibration_set(options["dataset"])]
        except CalibrationError as exc:
            raise CommandError(str(exc)) from None
        questions = list(itertools.islice(itertools.cycle(labelled), options["limit"]))
        if settings.CHAT_TURN_RUNNER == "threads":
            warm_up()  # the workers load their own models
        run = ChatRun()
        started = time.perf_counter()
        try:
            with override_settings(
                CHAT_MESSAGE_BURST=len(questions), CHAT_MESSAGES_PER_S=100.0, RATE_LIMIT_CONNECTIONS_PER_IP=1_000_000
            ):
                async_to_sync(self._chat)(questions, options["clients"], options["timeout"], options["storm"], run)
        finally:
            Conversation.objects.filter(public_id__in=run.conversations).delete()
        elapsed = time.perf_counter() - started
        answered = sum(run.decisions.values())
        twice = sum(1 for count in run.replies.values() if count > 1)
        figures = {name: metrics.latency_summary(values) for name, values in run.timings.items() if values}
        self.stdout.write(
            f"{len(questions)} questions from {options['clients']} clients at once "
            f"({'each as soon as connected' if options['storm'] else 'after all connected'}), turns in "
            f"{settings.CHAT_TURN_RUNNER}, in {elapsed:.1f} s ({answered / elapsed:.2f} turns/s)\n"
            f"acknowledged {len(run.timings['ack'])}, answered {answered} {dict(run.decisions)}, "
            f"lost {run.lost}, answered twice {twice}, errors {len(run.errors)}, "
            f"told they wait {dict(run.notices) or 0}"
        )
        for name, values in figures.items():
            self.stdout.write(f"{name:>12}: p50 {values['p50_ms']:>9.1f} ms   p95 {values['p95_ms']:>9.1f} ms")
        for error in sorted(set(run.errors))[:5]:
            self.stdout.write(f"error: {error}")
        if options["json"]:
            report = {
                "questions": len(questions),
                "clients": options["clients"],
                "storm": options["storm"],
                "runner": settings.CHAT_TURN_RUNNER,
                "turns_per_s": round(answered / elapsed, 2),
                "acknowledged": len(run.timings["ack"]),
                "decisions": dict(run.decisions),
                "lost": run.lost,
                "answered_twice": twice,
                "errors": run.errors,
                "notices": dict(run.notices),
                "latency": figures,
            }
            options["json"].write_text(json.dumps(report, indent=2))

    async def _chat(self, questions: list[str], clients: int, timeout_s: float, storm: bool, run: ChatRun) -> None:
        from supportbot.asgi import application

        origin = f"http://{settings.ALLOWED_HOSTS[0]}".encode()
        everyone_connected = asyncio.Barrier(clients)

        async def customer(n: int) -> None:
            socket = WebsocketCommunicator(application, "/ws/chat/", headers=[(b"origin", origin)])
            connected, _ = await socket.connect(timeout=timeout_s)
            if not connected:
                raise CommandError("The chat socket refused the connection (is ALLOWED_HOSTS right?).")
            await socket.send_json_to({"type": "hello", "token": None, "after": 0})
            run.conversations.append((await socket.receive_json_from(timeout=timeout_s))["conversation"])
            if not storm:
                await everyone_connected.wait()
            for i, text in enumerate(questions[n::clients]):
                await ask(socket, f"bench-{n}-{i}", text)
            # A reply sent twice would arrive within a turn's time of the first. (A receive that times out
            # would cancel the application, so wait with receive_nothing.)
            while not await socket.receive_nothing(timeout=2):
                frame = await socket.receive_json_from()
                if frame["type"] == "reply":
                    run.replies[frame["id"]] += 1
            await socket.disconnect()

        async def ask(socket: WebsocketCommunicator, message_id: str, text: str) -> None:
            sent = time.perf_counter()
            first_token = None
            await socket.send_json_to({"type": "message", "id": message_id, "text": text})
            deadline = sent + timeout_s
            while True:
                try:
                    frame = await socket.receive_json_from(timeout=max(0.01, deadline - time.perf_counter()))
                except TimeoutError:
                    run.lost += 1
                    return
                elapsed_ms = (time.perf_counter() - sent) * 1000
                if frame["type"] == "error":
                    run.errors.append(f"{frame.get('code')}: {frame.get('message')}")
                if frame["type"] == "reply":
                    run.replies[frame["id"]] += 1
                if frame.get("id") != message_id:
                    continue
                if frame["type"] == "ack":
                    run.timings["ack"].append(elapsed_ms)
                elif frame["type"] in ("queued", "busy"):
                    run.notices[frame["type"]] += 1
                elif frame["type"] == "token" and first_token is None:
                    first_token = elapsed_ms
                    run.timings["first_token"].append(elapsed_ms)
                elif frame["type"] == "reply":
                    run.timings["reply"].append(elapsed_ms)
                    run.decisions[frame["decision"]] += 1
                    return

        await asyncio.gather(*(customer(n) for n in range(clients)))
