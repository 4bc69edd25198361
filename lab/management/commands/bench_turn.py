"""manage.py bench_turn: per-stage latency of whole answer turns over the labelled questions."""

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from answering.services import default_services
from conversations.models import Conversation
from conversations.records.turns import answer_turn
from knowledge.models import Collection
from lab import metrics
from lab.calibration import SAMPLE_SET, read_calibration_set
from lab.errors import CalibrationError

TARGET_P50_MS = 200


class Command(BaseCommand):
    help = (
        "Per-stage latency of whole answer turns (the configured generator: extractive without an API key) "
        "over the labelled questions, after a warm-up; prints p50/p95 per stage against the 200 ms target."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", type=Path, default=SAMPLE_SET)
        parser.add_argument("--collection", default="helpcentre")
        parser.add_argument("--limit", type=int, default=60)
        parser.add_argument("--json", type=Path, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["limit"] < 1:
            raise CommandError("--limit must be a positive number.")
        try:
            questions = read_calibration_set(options["dataset"])[: options["limit"]]
            collection = Collection.objects.get(name=options["collection"])
        except CalibrationError as exc:
            raise CommandError(str(exc)) from None
        except Collection.DoesNotExist:
            raise CommandError(f"No collection {options['collection']!r}; ingest it first.") from None
        services = default_services()
        warm_up = Conversation.objects.create(collection=collection, from_lab=True)
        answer_turn(warm_up, "How long do refunds take?", services=services)  # loads every model once
        laps: dict[str, list[float]] = {}
        decisions: dict[str, int] = {}
        for question in questions:
            chat = Conversation.objects.create(collection=collection, audience=question.audience, from_lab=True)
            result = answer_turn(chat, question.question, services=services)
            decisions[result.decision] = decisions.get(result.decision, 0) + 1
            for name, ms in result.latency_ms.items():
                laps.setdefault(name, []).append(ms)
        figures = {name: metrics.latency_summary(values) for name, values in laps.items()}
        self.stdout.write(f"{len(questions)} turns on {collection.name}: {decisions}")
        for name, values in figures.items():
            self.stdout.write(f"{name:>24}: p50 {values['p50_ms']:>8.1f} ms   p95 {values['p95_ms']:>8.1f} ms")
        self.stdout.write(f"turn p50 / {TARGET_P50_MS} ms target: {figures['total']['p50_ms'] / TARGET_P50_MS:.2f}")
        if options["json"]:
            options["json"].write_text(json.dumps({"decisions": decisions, "stages": figures}, indent=2))
