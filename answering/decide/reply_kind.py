"""Which kind of reply the evidence allows: an answer, the section suggested, or "I don't know", from the
calibrated probability, the customer's own records, and the codes the articles do not name."""

from __future__ import annotations

from dataclasses import dataclass

from answering.decide.abstention import AnswerModel
from answering.evidence.context import Context, Trust
from answering.evidence.gather import FoundEvidence
from answering.read.reader import ScoredSentence


@dataclass(frozen=True)
class ReplyKind:
    kind: str  # "answer", "suggest" or "abstain"
    probability: float  # that the evidence answers the question
    why_not: str = ""  # for a suggestion or an abstention: the reason, as the turn notes it


def reply_kind(found: FoundEvidence, model: AnswerModel) -> ReplyKind:
    probability = model.probability(found.signals) if found.scored else 0.0
    if found.unknown_codes:
        return ReplyKind("abstain", probability, f"the articles do not name {', '.join(sorted(found.unknown_codes))}")
    if answered_by_record(found.context, found.scored):
        return ReplyKind("answer", probability)
    kind = model.kind(probability)
    if kind == "answer":
        return ReplyKind(kind, probability)
    return ReplyKind(
        kind, probability, f"probability the evidence answers {probability:.2f} is below the cut {model.cut:.2f}"
    )


def answered_by_record(context: Context, scored: list[ScoredSentence]) -> bool:
    """The customer's own record (looked up by the order number they gave, not ranked) holds the best
    statement, and the cross-encoder finds it relevant (logit ≥ 0, its even odds). The decision's model was
    fitted on help-article retrieval, whose signals say nothing about such a record."""
    best = context.passage(scored[0].passage) if scored else None
    return best is not None and best.trust is Trust.VERIFIED and scored[0].score >= 0.0
