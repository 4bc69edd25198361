"""The question answering is asked: the customer's words and what the pipeline may use around them (the
collection and audience, the date, the policy, the calibrated decision, the conversation so far, the
verified customer and their earlier conversations)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from answering.decide.abstention import AnswerModel
from customers.models import Customer
from knowledge.models import Collection

# Who said an earlier message; staff messages are not part of what the pipeline reads.
CUSTOMER = "customer"
ASSISTANT = "assistant"

DEFAULT_POLICY = (
    "Be accurate, brief and polite. Only state what the help-centre passages say. Never promise refunds, "
    "discounts, compensation or exceptions that the passages do not state. Never ask for full card numbers "
    "or passwords."
)


@dataclass(frozen=True)
class Question:
    text: str  # as the customer wrote it: the pipeline masks it before anything may leave
    collection: Collection
    audience: str
    today: date  # the date it is asked on, which decides the article versions in force
    decision: AnswerModel  # the collection's calibrated answer / suggest / abstain decision
    policy: str = DEFAULT_POLICY
    history: Sequence[tuple[str, str]] = ()  # (CUSTOMER or ASSISTANT, text), oldest first
    customer: Customer | None = None  # verified; None for an anonymous visitor
    background: Sequence[str] = ()  # summaries of the customer's earlier conversations (never evidence)
