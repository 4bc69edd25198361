"""A customer message answered: the question read from the conversation's records, answered by
`answering`, and the turn written down, so staff can see why a reply said what it said."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import date
from functools import cache

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from answering.decide.abstention import PROBABILITY, AnswerModel, default_model, fits_in_force
from answering.outcome import Outcome, failed
from answering.pipeline import answer
from answering.question import DEFAULT_POLICY, Question
from answering.services import TurnServices, default_services
from conversations.chat.intake import store_customer_message
from conversations.models import AbstentionThreshold, Conversation, Message, Role, SystemPolicy
from conversations.records.memory import background_for
from conversations.records.recording import TurnResult, record_turn
from knowledge.models import Collection
from knowledge.rerank import PACKAGED_RERANKER
from supportbot.stopwatch import Stopwatch

logger = logging.getLogger(__name__)

HISTORY_MESSAGES = 6


def current_policy(collection: Collection) -> str:
    policy = SystemPolicy.objects.filter(collection=collection).order_by("-version").first()
    return policy.text if policy else DEFAULT_POLICY


def answer_model(collection: Collection) -> AnswerModel:
    """The collection's newest decision calibrated with the cross-encoder in force, else the shipped
    default; ABSTAIN_THRESHOLD, when set, moves the cut (a probability). A decision fitted on another
    cross-encoder's scores (RERANK_MODEL changed since) would read them on the wrong scale."""
    model = stored_decision(collection)
    if model is None:
        model = default_model()
        if not fits_in_force(model):
            warn_stale_decision(collection.name, model.scored_with)
    return model if settings.ABSTAIN_THRESHOLD is None else replace(model, cut=settings.ABSTAIN_THRESHOLD)


def stored_decision(collection: Collection, scored_with: str | None = None) -> AnswerModel | None:
    """The newest decision stored for the collection that was fitted on the scores of `scored_with`
    (default: the cross-encoder in force)."""
    wanted = scored_with or settings.RERANK_MODEL
    fits = Q(model__scored_with=wanted)
    if wanted == PACKAGED_RERANKER:  # a decision stored before the model was recorded was fitted on it
        fits |= ~Q(model__has_key="scored_with")
    stored = (
        AbstentionThreshold.objects.filter(fits, collection=collection, signal=PROBABILITY)
        .order_by("-created_at")
        .first()
    )
    return AnswerModel.from_json(stored.model) if stored is not None else None


@cache
def warn_stale_decision(collection: str, scored_with: str) -> None:
    """Once a process: the collection has no decision for the cross-encoder in force, and the shipped default
    was fitted on another's scores."""
    logger.warning(
        "%s: the shipped answer decision was fitted on %s's scores, not RERANK_MODEL=%s's; it decides, on the "
        "wrong scale, until `manage.py calibrate --collection %s` fits one.",
        collection,
        scored_with,
        settings.RERANK_MODEL,
        collection,
    )


def _history(conversation: Conversation, before: Message) -> list[tuple[str, str]]:
    earlier = conversation.messages.filter(id__lt=before.pk).exclude(role=Role.STAFF).order_by("-id")
    return [(m.role, m.text) for m in reversed(earlier[:HISTORY_MESSAGES])]


def question_of(message: Message, today: date) -> Question:
    """A stored customer message as answering's question: the conversation's collection, audience,
    policy, decision, earlier messages and verified customer."""
    conversation = message.conversation
    customer = conversation.customer
    return Question(
        text=message.text,
        collection=conversation.collection,
        audience=conversation.audience,
        today=today,
        decision=answer_model(conversation.collection),
        policy=current_policy(conversation.collection),
        history=_history(conversation, message),
        customer=customer,
        background=background_for(customer, conversation) if customer else [],
    )


def answer_turn(
    conversation: Conversation,
    text: object,
    *,
    services: TurnServices | None = None,
    on_delta: Callable[[str], None] | None = None,
    on_reset: Callable[[], None] | None = None,
    today: date | None = None,
) -> TurnResult:
    """Store one customer message and answer it (the command line's and the evaluator's entry point).
    `today` is the date the message is asked on (default: today), which decides the versions in force."""
    message, _ = store_customer_message(conversation, text)
    return answer_message(message, services=services, on_delta=on_delta, on_reset=on_reset, today=today)


def answer_message(
    message: Message,
    *,
    services: TurnServices | None = None,
    on_delta: Callable[[str], None] | None = None,
    on_reset: Callable[[], None] | None = None,
    today: date | None = None,
) -> TurnResult:
    """Answer a stored customer message. Every failure ends in a referral, so a customer's words are never
    lost and always get a reply."""
    conversation = message.conversation
    watch = Stopwatch()
    outcome: Outcome
    try:
        with watch.lap("total"):
            question = question_of(message, today or timezone.localdate())
            outcome = answer(
                question, services=services or default_services(), watch=watch, on_delta=on_delta, on_reset=on_reset
            )
    # Whatever broke, the customer still gets a reply and staff get the turn.
    except Exception as exc:
        logger.exception("turn %s of conversation %s failed", message.pk, conversation.public_id)
        outcome = failed(exc)
    return record_turn(conversation, message, outcome, watch)
