"""What answering produces for one question: the decision, the reply, the claims and every step's record,
and the words it uses for why a reply went to a person."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from django.db import models

from answering.replies import ABSTAIN_REPLY, REFER_REPLY

if TYPE_CHECKING:
    # Types only: the models of `conversations` import this module for its choices, and need none of these.
    from answering.evidence.context import Context
    from answering.ground.grounding import ClaimVerdict
    from customers.models import Order
    from knowledge.retrieval import Hit


class Decision(models.TextChoices):
    """Which kind of reply a turn shipped: a direct answer; a suggestion (the section that looks like what
    was asked, quoted, with "Did this answer your question?"); "I don't know"; or a hand-off to a person."""

    ANSWERED = "answered", "Answered"
    SUGGESTED = "suggested", "Suggested a section"
    ABSTAINED = "abstained", "Abstained"
    REFERRED = "referred", "Referred to a person"


class HandoffReason(models.TextChoices):
    """Why a conversation went to a person: a fixed set, shown in the queue and counted in analytics."""

    CUSTOMER_ASKED = "customer_asked", "Customer asked for a person"
    NO_KNOWLEDGE = "no_knowledge", "No knowledge"
    UNSUPPORTED_CLAIM = "unsupported_claim", "Unsupported claim cut"
    POLICY = "policy", "Policy"
    PROVIDER_FAILURE = "provider_failure", "Provider failure"
    STAFF_TOOK_OVER = "staff_took_over", "Staff took over"
    SUGGESTION_DECLINED = "suggestion_declined", "Suggestion did not answer"


@dataclass(frozen=True)
class RefundDecided:
    """The gatekeeper's decision on a refund request for one of the customer's own orders, to be recorded."""

    order: Order
    amount: Decimal
    approved: bool
    reason: str
    via: str  # the provider whose tool call asked, or "intent"


@dataclass
class Outcome:
    """What the pipeline produced, before anyone writes it down."""

    query: str = ""
    hits: list[Hit] = field(default_factory=list)
    context: Context | None = None
    evidence_score: float | None = None
    signals: dict[str, float] = field(default_factory=dict)
    reading: list[dict[str, object]] = field(default_factory=list)
    units: list[dict[str, object]] = field(default_factory=list)
    generator: str = ""
    draft: str = ""
    verdicts: list[ClaimVerdict] = field(default_factory=list)
    decision: str = Decision.ABSTAINED
    reply: str = ABSTAIN_REPLY
    referral_reason: str = ""
    # Which of the fixed hand-off reasons referral_reason details; set with it wherever a turn refers.
    referral_code: str = HandoffReason.NO_KNOWLEDGE
    refund: RefundDecided | None = None
    notes: list[str] = field(default_factory=list)


def failed(exc: Exception) -> Outcome:
    """The outcome of a turn that broke: a person takes over, and the note says what broke."""
    return Outcome(
        decision=Decision.REFERRED,
        reply=REFER_REPLY,
        referral_reason=f"the assistant failed: {type(exc).__name__}",
        referral_code=HandoffReason.PROVIDER_FAILURE,
        notes=[f"{type(exc).__name__}: {exc}"],
    )
