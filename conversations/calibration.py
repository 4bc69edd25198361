"""Choosing the abstention threshold on labelled questions: answerable ones the help centre covers, and
related-but-unanswerable ones it does not. Each candidate signal gets its trade-off table and ROC AUC."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from django.utils import timezone

from conversations.turns import DEFAULT_POLICY, TurnServices, gather_evidence
from knowledge.models import Collection
from knowledge.scope import VISIBLE_AUDIENCES
from supportbot.stopwatch import Stopwatch

SAMPLE_SET = Path(__file__).resolve().parent / "sample" / "calibration.jsonl"
# What the turn abstains on, and the alternative measured beside it.
SIGNALS = ("sentence_top", "dense_top")


class CalibrationError(ValueError):
    pass


@dataclass(frozen=True)
class LabelledQuestion:
    question: str
    audience: str
    answerable: bool
    article: str | None
    asked_on: date | None = None  # the versions in force then; None: today


@dataclass(frozen=True)
class Row:
    threshold: float
    answered: float  # share of answerable questions that would be answered
    wrongly_answered: float  # share of unanswerable questions that would be answered anyway


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
    dense = [h.stages["dense"].score for h in found.hits if "dense" in h.stages]
    lowest = -100.0  # no evidence at all: below any threshold
    return {
        "sentence_top": found.evidence_score if found.evidence_score is not None else lowest,
        "dense_top": max(dense, default=lowest),
    }


def tradeoff(scores: list[tuple[float, bool]]) -> list[Row]:
    """For every distinct score as a threshold (answer when score ≥ threshold): the two rates."""
    answerable = sum(1 for _, label in scores if label) or 1
    unanswerable = sum(1 for _, label in scores if not label) or 1
    rows = []
    for threshold in sorted({score for score, _ in scores}):
        answered = sum(1 for score, label in scores if label and score >= threshold)
        wrong = sum(1 for score, label in scores if not label and score >= threshold)
        rows.append(Row(threshold, answered / answerable, wrong / unanswerable))
    return rows


def roc_auc(scores: list[tuple[float, bool]]) -> float:
    """Probability that an answerable question outscores an unanswerable one (ties count half)."""
    positives = [s for s, label in scores if label]
    negatives = [s for s, label in scores if not label]
    if not positives or not negatives:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def best_row(rows: list[Row]) -> Row:
    """The threshold with the most answered minus wrongly answered (Youden's J); ties go to the stricter."""
    return max(rows, key=lambda r: (round(r.answered - r.wrongly_answered, 9), r.threshold))


def most_answered_within(rows: list[Row], max_wrongly_answered: float) -> Row:
    """The threshold that answers the most answerable questions while answering at most this share of the
    unanswerable ones (the strictest threshold when none does)."""
    allowed = [r for r in rows if r.wrongly_answered <= max_wrongly_answered]
    if not allowed:
        return max(rows, key=lambda r: r.threshold)
    return max(allowed, key=lambda r: (r.answered, -r.wrongly_answered, r.threshold))


def calibrate(
    questions: list[LabelledQuestion],
    collection: Collection,
    services: TurnServices,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, list[tuple[float, bool]]]:
    """Each signal's (score, answerable) pairs over the set."""
    pairs: dict[str, list[tuple[float, bool]]] = {signal: [] for signal in SIGNALS}
    for done, question in enumerate(questions, start=1):
        for signal, score in signals_for(question, collection, services).items():
            pairs[signal].append((score, question.answerable))
        if progress:
            progress(done, len(questions))
    return pairs
