import asyncio
import json
import time
from pathlib import Path
from typing import Any

from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test.utils import override_settings

from conversations.models import Conversation
from conversations.services import warm_up
from knowledge.models import Collection
from lab import metrics
from lab.calibration import SAMPLE_SET, read_calibration_set
from lab.errors import CalibrationError

REPLY_TIMEOUT_S = 120


class Command(BaseCommand):
    help = (
        "Chat latency as a customer sees it: several websocket clients ask the labelled questions at once "
        "through the real ASGI application (origin check, consumer, worker threads, channel layer); prints "
        "p50/p95 of the acknowledgement, the first streamed token and the final reply, and turns per second. "
        "The per-connection message limit is lifted for the run (each client asks as fast as it is answered); "
        "the conversations it creates are deleted afterwards."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", type=Path, default=SAMPLE_SET)
        parser.add_argument("--clients", type=int, default=4, help="customers chatting at the same time")
        parser.add_argument("--limit", type=int, default=40, help="questions in all")
        parser.add_argument("--json", type=Path, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["limit"] < 1 or options["clients"] < 1:
            raise CommandError("--limit and --clients must be positive numbers.")
        if not Collection.objects.filter(name=settings.CHAT_COLLECTION).exists():
            raise CommandError(f"No collection {settings.CHAT_COLLECTION!r} (CHAT_COLLECTION); ingest it first.")
        try:
            questions = [q.question for q in read_calibration_set(options["dataset"])[: options["limit"]]]
        except CalibrationError as exc:
            raise CommandError(str(exc)) from None
        warm_up()
        timings: dict[str, list[float]] = {"ack": [], "first_token": [], "reply": []}
        decisions: dict[str, int] = {}
        conversations: list[str] = []
        started = time.perf_counter()
        try:
            with override_settings(CHAT_MESSAGE_BURST=len(questions), CHAT_MESSAGES_PER_S=100.0):
                async_to_sync(self._chat)(questions, options["clients"], timings, decisions, conversations)
        finally:
            Conversation.objects.filter(public_id__in=conversations).delete()
        elapsed = time.perf_counter() - started
        figures = {name: metrics.latency_summary(values) for name, values in timings.items() if values}
        self.stdout.write(
            f"{len(questions)} questions from {options['clients']} clients at once in {elapsed:.1f} s "
            f"({len(questions) / elapsed:.2f} turns/s): {decisions}"
        )
        for name, values in figures.items():
            self.stdout.write(f"{name:>12}: p50 {values['p50_ms']:>8.1f} ms   p95 {values['p95_ms']:>8.1f} ms")
        if options["json"]:
            report = {
                "questions": len(questions),
                "clients": options["clients"],
                "turns_per_s": round(len(questions) / elapsed, 2),
                "decisions": decisions,
                "latency": figures,
            }
            options["json"].write_text(json.dumps(report, indent=2))

    async def _chat(
        self,
        questions: list[str],
        clients: int,
        timings: dict[str, list[float]],
        decisions: dict[str, int],
        conversations: list[str],
    ) -> None:
        from supportbot.asgi import application

        origin = f"http://{settings.ALLOWED_HOSTS[0]}".encode()

        async def customer(n: int) -> None:
            socket = WebsocketCommunicator(application, "/ws/chat/", headers=[(b"origin", origin)])
            connected, _ = await socket.connect()
            if not connected:
                raise CommandError("The chat socket refused the connection (is ALLOWED_HOSTS right?).")
            await socket.send_json_to({"type": "hello", "token": None, "after": 0})
            conversations.append((await socket.receive_json_from(timeout=REPLY_TIMEOUT_S))["conversation"])
            for i, text in enumerate(questions[n::clients]):
                message_id = f"bench-{n}-{i}"
                sent = time.perf_counter()
                first_token = None
                await socket.send_json_to({"type": "message", "id": message_id, "text": text})
                while True:
                    frame = await socket.receive_json_from(timeout=REPLY_TIMEOUT_S)
                    elapsed_ms = (time.perf_counter() - sent) * 1000
                    if frame.get("id") != message_id:
                        continue
                    if frame["type"] == "ack":
                        timings["ack"].append(elapsed_ms)
                    elif frame["type"] == "token" and first_token is None:
                        first_token = elapsed_ms
                        timings["first_token"].append(elapsed_ms)
                    elif frame["type"] == "reply":
                        timings["reply"].append(elapsed_ms)
                        decisions[frame["decision"]] = decisions.get(frame["decision"], 0) + 1
                        break
                    elif frame["type"] == "error":
                        raise CommandError(f"The server refused a question: {frame['message']}")
            await socket.disconnect()

        await asyncio.gather(*(customer(n) for n in range(clients)))
