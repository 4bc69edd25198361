"""Fitting the abstention decision on labelled questions: answerable ones the collection covers, and
related-but-unanswerable ones it does not. Each question is also read as a reply would be: the decision is
fitted to tell the questions the reader answers right (an answerable question whose reply states the fact
the set names, where it names one) from all others, since a confident reply without the fact is as
wrong as an answer to an unanswerable question. Each signal, and the fitted probability, gets its ROC AUC and
trade-off table."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from answering.evidence.gather import FoundEvidence, gather_evidence
from answering.question import DEFAULT_POLICY
from answering.read.reader import as_reply, choose_statements, quoted_units
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
    answers: tuple[str, ...] = ()  # the facts a right reply states one of, where the set names them

    def states_answer(self, reply: str) -> bool:
        """Whether a reply states one of the question's facts; without facts, any reply does: which of
        several relevant articles it quotes is no measure (StackFAQ lists many answers to one question)."""
        return not self.answers or any(fact.casefold() in reply.casefold() for fact in self.answers)


@dataclass(frozen=True)
class Asked:
    """A labelled question as calibration saw it: its signals, whether it is answerable, and whether the
    reader's reply to it is right (answerable, and stating its fact where the set names one)."""

    signals: dict[str, float]
    answerable: bool
    right: bool


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
        answer = record.get("answer")
        questions.append(
            LabelledQuestion(
                question,
                audience,
                answerable,
                record.get("article"),
                answers=(answer,) if isinstance(answer, str) else (),
            )
        )
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


def ask(question: LabelledQuestion, collection: Collection, services: TurnServices) -> Asked:
    """The question's signals, and whether the reply the reader makes from the same evidence is right."""
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
    return Asked(found.signals, question.answerable, question.answerable and _reads_right(question, found, services))


def _reads_right(question: LabelledQuestion, found: FoundEvidence, services: TurnServices) -> bool:
    chosen = choose_statements(found.scored, embed=services.embedder.encode)
    if not chosen:
        return False
    return question.states_answer(as_reply(quoted_units(found.scored, chosen)))


def calibrate(
    questions: list[LabelledQuestion],
    collection: Collection,
    services: TurnServices,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> list[Asked]:
    """Every question as asked: its signals and labels."""
    rows = []
    for done, question in enumerate(questions, start=1):
        rows.append(ask(question, collection, services))
        if progress:
            progress(done, len(questions))
    return rows


def pairs_of(rows: list[Asked], signal: str) -> list[tuple[float, bool]]:
    """A signal's value for every question, with whether the reader's reply to it is right."""
    return [(row.signals[signal], row.right) for row in rows]
