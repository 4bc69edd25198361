"""Fitting the abstention decision on labelled questions: answerable ones the collection covers, and
related-but-unanswerable ones it does not. Each signal, and the fitted probability, gets its ROC AUC and
trade-off table."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from answering.evidence.gather import gather_evidence
from answering.question import DEFAULT_POLICY
from answering.services import TurnServices
from knowledge.models import Collection
from knowledge.scope import VISIBLE_AUDIENCES
from lab.errors import CalibrationError
from supportbot.stopwatch import Stopwatch

SAMPLE_SET = Path(__file__).resolve().parent / "sample" / "calibration.jsonl"
# The sample help centre's labelled questions, written for tuning: short English ones, Hinglish ones, and long
# conversational ones (typos, paraphrases, codes, staff and member questions).
SAMPLE_SETS = tuple(
    SAMPLE_SET.with_name(name)
    for name in ("calibration.jsonl", "calibration_hinglish.jsonl", "calibration_conversational.jsonl")
)


@dataclass(frozen=True)
class LabelledQuestion:
    question: str
    audience: str
    answerable: bool
    article: str | None
    asked_on: date | None = None  # the versions in force then; None: today


def read_calibration_set(path: Path) -> list[LabelledQuestion]:
    """The JSON-lines set; every line is checked, and an error names its line."""
    if not path.is_file():
        raise CalibrationError(f"{path} does not exist.")
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            question, audience, answerable = record["question"], record["audience"], record["answerable"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise CalibrationError(f"{path}:{number}: not a labelled question ({exc}).") from None
        if not isinstance(question, str) or not question.strip() or not isinstance(answerable, bool):
            raise CalibrationError(f"{path}:{number}: question must be text and answerable true or false.")
        if audience not in VISIBLE_AUDIENCES:
            raise CalibrationError(f"{path}:{number}: unknown audience {audience!r}.")
        questions.append(LabelledQuestion(question, audience, answerable, record.get("article")))
    if not any(q.answerable for q in questions) or all(q.answerable for q in questions):
        raise CalibrationError(f"{path} needs both answerable and unanswerable questions.")
    return questions


def _shown(path: Path) -> str:
    """The path as recorded with a fit: relative to the project when inside it, so that a file of signals
    written on one machine (conversations/sample/helpcentre_signals.json) names the same sets on another."""
    try:
        return str(path.resolve().relative_to(settings.BASE_DIR))
    except ValueError:
        return str(path)


def labelled_set(spec: str, default_collection: str) -> tuple[str, list[LabelledQuestion], Collection]:
    """A labelled set named "FILE" or "FILE@COLLECTION", read and checked, with the collection it is asked of."""
    path, _, name = spec.partition("@")
    name = name or default_collection
    questions = read_calibration_set(Path(path))
    try:
        return _shown(Path(path)), questions, Collection.objects.get(name=name)
    except Collection.DoesNotExist:
        raise CalibrationError(f"No collection {name!r} for {spec}; ingest it first, or name one after '@'.") from None


def signals_for(question: LabelledQuestion, collection: Collection, services: TurnServices) -> dict[str, float]:
    found = gather_evidence(
        question.question,
        collection=collection,
        audience=question.audience,
        today=question.asked_on or timezone.localdate(),
        policy=DEFAULT_POLICY,
        history=[],
        services=services,
        watch=Stopwatch(),
    )
    return found.signals


def calibrate(
    questions: list[LabelledQuestion],
    collection: Collection,
    services: TurnServices,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> list[tuple[dict[str, float], bool]]:
    """Every question's signals and label."""
    rows = []
    for done, question in enumerate(questions, start=1):
        rows.append((signals_for(question, collection, services), question.answerable))
        if progress:
            progress(done, len(questions))
    return rows


def pairs_of(rows: list[tuple[dict[str, float], bool]], signal: str) -> list[tuple[float, bool]]:
    return [(signals[signal], answerable) for signals, answerable in rows]
