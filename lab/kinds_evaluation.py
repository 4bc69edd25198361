"""The kinds of reply on a labelled question set (answerable and related-but-unanswerable, the format
`calibrate` reads): each question asked as a full turn, and counted by what the customer got: an answer, a
suggestion, "I don't know" or a hand-off; and, for answerable questions, whether what was answered or
suggested cites a relevant article (the set's own, or any the qrels list for it)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.utils import timezone

from answering.services import TurnServices
from conversations.models import Conversation
from conversations.records.turns import answer_turn
from knowledge.models import Collection
from lab.answer_evaluation import KINDS
from lab.calibration import LabelledQuestion
from lab.errors import CalibrationError


@dataclass
class KindResult:
    question: str
    answerable: bool
    decision: str
    relevant: bool  # answered or suggested, citing a relevant article
    # Where the set names the fact a right reply states: answered or suggested with it. Else: as `relevant`.
    reached: bool = False

    @property
    def confidently_wrong(self) -> bool:
        """Answered, and not with what answers it: an unanswerable question, or an answerable one whose
        answer lacks its fact (or, where the set names no fact, cites no relevant article)."""
        return self.decision == "answered" and not self.reached


@dataclass
class KindsEvaluation:
    results: list[KindResult] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        answerable = [r for r in self.results if r.answerable]
        unanswerable = [r for r in self.results if not r.answerable]

        def share(part: int, whole: list[KindResult]) -> float | None:
            return round(part / len(whole), 3) if whole else None

        return {
            "questions": len(self.results),
            "answerable": {kind: sum(r.decision == kind for r in answerable) for kind in KINDS},
            "unanswerable": {kind: sum(r.decision == kind for r in unanswerable) for kind in KINDS},
            "answerable_answered_or_suggested_relevant": share(sum(r.relevant for r in answerable), answerable),
            "answerable_answered_relevant": share(
                sum(r.relevant and r.decision == "answered" for r in answerable), answerable
            ),
            "unanswerable_answered": share(sum(r.decision == "answered" for r in unanswerable), unanswerable),
            "unanswerable_suggested": share(sum(r.decision == "suggested" for r in unanswerable), unanswerable),
            "reached": share(sum(r.reached for r in answerable), answerable),
            "confident_wrong": sum(r.confidently_wrong for r in self.results),
            "confident_wrong_share": share(sum(r.confidently_wrong for r in self.results), self.results),
        }


def read_co_relevant(path: Path) -> dict[str, set[str]]:
    """A BEIR qrels file (query id, corpus id, score) as corpus id → every corpus id relevant to a query it
    is relevant to: a labelled question names one relevant article, and its siblings answer it as well."""
    by_query: dict[str, set[str]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CalibrationError(f"--qrels {path}: {exc}") from None
    for number, line in enumerate(lines, start=1):
        cells = line.split("\t")
        if number == 1 and cells[0] == "query-id":
            continue
        if len(cells) < 2:
            raise CalibrationError(f"--qrels {path}:{number}: expected query-id, corpus-id and score")
        by_query.setdefault(cells[0], set()).add(cells[1])
    relevant: dict[str, set[str]] = {}
    for articles in by_query.values():
        for article in articles:
            relevant.setdefault(article, set()).update(articles)
    return relevant


def evaluate_kinds(
    questions: list[LabelledQuestion],
    collection: Collection,
    services: TurnServices,
    *,
    relevant: Mapping[str, set[str]] | None = None,
    progress: Callable[[], None] | None = None,
) -> KindsEvaluation:
    """Every question as a full turn of its own conversation. `relevant` maps a question's article to every
    article that also answers it (from qrels); without it, only the question's own article counts."""
    evaluation = KindsEvaluation()
    for question in questions:
        conversation = Conversation.objects.create(collection=collection, audience=question.audience, from_lab=True)
        result = answer_turn(conversation, question.question, services=services, today=timezone.localdate())
        cited = {c.article for c in result.citations}
        wanted = {question.article} if question.article else set()
        wanted |= (relevant or {}).get(question.article or "", set())
        relevant_reply = question.answerable and result.decision in ("answered", "suggested") and bool(cited & wanted)
        stated = question.states_answer(result.reply)
        evaluation.results.append(
            KindResult(
                question.question, question.answerable, result.decision, relevant_reply, relevant_reply and stated
            )
        )
        if progress is not None:
            progress()
    return evaluation
