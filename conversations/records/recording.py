"""Writing a turn down: what answering produced becomes the reply message, the Turn with every step, its
claims, the refund decision, and a referral when it refers; and the result the caller shows."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import transaction

from answering.ground.grounding import ClaimVerdict
from answering.outcome import Decision, Outcome
from conversations.handoff.assignment import assign
from conversations.models import (
    Claim,
    Conversation,
    ConversationStatus,
    Message,
    Referral,
    RefundDecision,
    Role,
    Turn,
)
from conversations.records.memory import remember
from knowledge.help import help_url
from knowledge.retrieval import Hit
from supportbot.stopwatch import Stopwatch


@dataclass(frozen=True)
class Citation:
    number: int
    article: str
    title: str
    heading_path: str
    version: str
    url: str  # the help page section; empty for the customer's own records (an order has no public page)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def label(self) -> str:
        """As the widget shows it: title › section, the title said once, and the version only when the
        article has one of its own (never a hash)."""
        headings = [h.strip() for h in self.heading_path.split(" › ") if h.strip()]
        if headings and headings[0] == self.title:
            headings.pop(0)
        label = " › ".join([self.title or self.article, *headings])
        return f"{label} (v{self.version.removeprefix('v')})" if self.version else label


@dataclass(frozen=True)
class TurnResult:
    turn_id: int
    reply: str
    decision: str
    citations: list[Citation]
    claims: list[ClaimVerdict]
    latency_ms: dict[str, float]
    evidence_score: float | None
    generator: str
    units: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "turn": self.turn_id,
            "reply": self.reply,
            "decision": self.decision,
            "units": self.units,
            "citations": [c.as_json() for c in self.citations],
            "claims": [
                {"text": c.text, "verdict": "supported" if c.supported else "unsupported", "tier": c.tier.value}
                for c in self.claims
            ],
            "evidence_score": self.evidence_score,
            "generator": self.generator,
            "latency_ms": {name: round(ms, 1) for name, ms in self.latency_ms.items()},
        }


def candidates_record(hits: list[Hit]) -> list[dict[str, Any]]:
    return [
        {
            "chunk": h.chunk.pk,
            "article": h.chunk.version.article.slug,
            "version": h.chunk.version.version_label,
            "heading_path": h.heading_path,
            "rank": h.rank,
            "score": round(h.score, 4),
            "stages": {name: {"rank": s.rank, "score": round(s.score, 4)} for name, s in h.stages.items()},
        }
        for h in hits
    ]


def _citations(outcome: Outcome) -> list[Citation]:
    if outcome.decision not in (Decision.ANSWERED, Decision.SUGGESTED) or outcome.context is None:
        return []
    numbers = sorted({n for v in outcome.verdicts for n in v.citations})
    found = [(n, outcome.context.passage(n)) for n in numbers]
    return [
        Citation(
            n,
            p.article,
            p.title,
            p.heading_path,
            p.version,
            help_url(p.article, p.heading_path) if p.source == "article" else "",
        )
        for n, p in found
        if p is not None
    ]


@transaction.atomic
def record_turn(conversation: Conversation, message: Message, outcome: Outcome, watch: Stopwatch) -> TurnResult:
    reply = Message.objects.create(conversation=conversation, role=Role.ASSISTANT, text=outcome.reply)
    citations = _citations(outcome)
    turn = Turn.objects.create(
        conversation=conversation,
        customer_message=message,
        reply_message=reply,
        rewritten_query=outcome.query,
        candidates=candidates_record(outcome.hits),
        context=outcome.context.as_records() if outcome.context else [],
        generator=outcome.generator,
        draft=outcome.draft,
        reply=outcome.reply,
        decision=outcome.decision,
        citations=[c.as_json() for c in citations],
        evidence_score=outcome.evidence_score,
        signals=outcome.signals,
        reading=outcome.reading,
        units=outcome.units if outcome.decision in (Decision.ANSWERED, Decision.SUGGESTED) else [],
        latency_ms={name: round(ms, 1) for name, ms in watch.laps_ms.items()},
        notes=outcome.notes,
    )
    Claim.objects.bulk_create(
        Claim(
            turn=turn,
            ordinal=i,
            text=v.text,
            citations=list(v.citations),
            verdict="supported" if v.supported else "unsupported",
            tier=v.tier.value,
            score=v.score,
            reason=v.reason,
        )
        for i, v in enumerate(outcome.verdicts)
    )
    if outcome.refund is not None:
        refund = outcome.refund
        RefundDecision.objects.create(
            order=refund.order,
            amount=refund.amount,
            approved=refund.approved,
            reason=refund.reason,
            requested_via=refund.via,
            conversation=conversation,
        )
    remember(conversation)
    if outcome.decision == Decision.REFERRED:
        Referral.objects.create(
            turn=turn, conversation=conversation, reason_code=outcome.referral_code, reason=outcome.referral_reason
        )
        if conversation.status == ConversationStatus.OPEN:
            conversation.status = ConversationStatus.REFERRED
    conversation.save(update_fields=["status", "updated_at"])
    if outcome.decision == Decision.REFERRED:
        assign(conversation)
    return TurnResult(
        turn.pk,
        outcome.reply,
        outcome.decision,
        citations,
        outcome.verdicts,
        dict(watch.laps_ms),
        outcome.evidence_score,
        outcome.generator,
        turn.units,
    )
