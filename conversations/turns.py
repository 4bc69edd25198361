"""The answer turn: one customer message in; one grounded reply, an honest "I don't know", or a referral out.

Synchronous on purpose: the websocket consumer runs it in a thread, the evaluator and `manage.py ask`
call it directly. Every step is persisted on the Turn so staff can see why a reply said what it said.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.conf import settings
from django.utils import timezone

from conversations.abstention import HitSignals, signals_of, unknown_codes
from conversations.claims import split_claims
from conversations.context import Context, Evidence, Trust, assemble_context
from conversations.customer_step import customer_step
from conversations.generation import (
    REFER_REPLY,
    model_reply,
)
from conversations.intake import store_customer_message
from conversations.memory import background_for
from conversations.models import (
    Conversation,
    Decision,
    HandoffReason,
    Message,
    Role,
    SystemPolicy,
)
from conversations.pii import searchable, without_placeholders
from conversations.providers import ProviderUnavailable, answered_by
from conversations.reader import (
    QuotedUnit,
    ScoredSentence,
    as_reply,
    best_reading,
    choose_statements,
    quoted_units,
    reading_record,
    score_sentences,
)
from conversations.recording import TurnOutcome, TurnResult, record_turn
from conversations.rewrite import question_focus, rewrite_by_rule, rewrite_query
from conversations.services import PROBABILITY, TurnServices, answer_model, default_services
from conversations.suggestion import (
    SuggestedSection,
    suggested_sections,
    suggestion_draft,
    suggestion_reply,
    units_record,
)
from knowledge.fuzzy import corrected, find_typos
from knowledge.injection import without_outside_links
from knowledge.models import Collection
from knowledge.rerank import rerank_passage
from knowledge.retrieval import Hit, prepare_query, search, visible_chunks
from knowledge.scope import Scope
from supportbot.stopwatch import Stopwatch

logger = logging.getLogger(__name__)

HISTORY_MESSAGES = 6
DEFAULT_POLICY = (
    "Be accurate, brief and polite. Only state what the help-centre passages say. Never promise refunds, "
    "discounts, compensation or exceptions that the passages do not state. Never ask for full card numbers "
    "or passwords."
)


def current_policy(conversation: Conversation) -> str:
    policy = SystemPolicy.objects.filter(collection=conversation.collection).order_by("-version").first()
    return policy.text if policy else DEFAULT_POLICY


def evidence_of(hits: list[Hit]) -> list[Evidence]:
    return [
        Evidence(
            chunk_id=h.chunk.pk,
            article=h.chunk.version.article.slug,
            title=h.chunk.version.article.title,
            version=h.chunk.version.version_label,
            effective_date=h.chunk.version.effective_date.isoformat(),
            heading_path=h.heading_path,
            text=h.chunk.text,
            score=h.score,
        )
        for h in hits
    ]


def _history(conversation: Conversation, before: Message) -> list[Message]:
    earlier = conversation.messages.filter(id__lt=before.pk).exclude(role=Role.STAFF).order_by("-id")
    return list(reversed(earlier[:HISTORY_MESSAGES]))


def _generate(
    question: str,
    context: Context,
    scored: list[ScoredSentence],
    services: TurnServices,
    outcome: TurnOutcome,
    on_delta: Callable[[str], None] | None,
    on_reset: Callable[[], None] | None,
) -> str:
    if services.model is not None:
        try:
            outcome.generator = answered_by(services.model)
            return model_reply(question, context, services.model, on_delta=on_delta, on_reset=on_reset)
        except ProviderUnavailable as exc:
            outcome.notes.append(f"{outcome.generator} unavailable ({exc}); the extractive generator answered instead.")
            if on_reset is not None:
                on_reset()
    outcome.generator = answered_by(None)
    chosen = choose_statements(scored, embed=services.embedder.encode)
    outcome.reading = reading_record(scored, chosen)
    units = quoted_units(scored, chosen)
    outcome.units = [unit_record(u, context) for u in units]
    draft = as_reply(units)
    if draft and on_delta is not None:
        on_delta(draft)
    return draft


@dataclass(frozen=True)
class FoundEvidence:
    hits: list[Hit]
    context: Context
    scored: list[ScoredSentence]
    signals: dict[str, float]
    unknown_codes: set[str]

    @property
    def evidence_score(self) -> float | None:
        """The cross-encoder logit of the best statement in the top passages, alone or read after its
        predecessor (one of the signals)."""
        return best_reading(self.scored)


def gather_evidence(
    query: str,
    *,
    collection: Collection,
    audience: str,
    today: date,
    policy: str,
    history: list[tuple[str, str]],
    services: TurnServices,
    watch: Stopwatch,
    verified: Sequence[Evidence] = (),
    background: Sequence[str] = (),
) -> FoundEvidence:
    """Retrieve, assemble the context, and score its sentences against the question: everything a turn
    knows before deciding whether to answer (calibration runs exactly this). Articles are searched as
    they stand on `today`: the version in force then, not one published with a later effective date."""
    search_query = question_focus(without_placeholders(query) or query)
    with watch.lap("normalise"):
        prepared = prepare_query(search_query, collection)
    # Found once: retrieval searches the corrections, the cross-encoder reads them (below).
    with watch.lap("typos"):
        typos = find_typos(collection.pk, prepared)
    with watch.lap("retrieve"):
        hits = search(
            prepared,
            prepared=True,
            collection=collection,
            audience=audience,
            as_of=today,
            k=settings.ANSWER_PASSAGES,
            embedder=services.embedder,
            stopwatch=watch,
            typos=typos,
            reranker=services.reranker,
        )
    with watch.lap("context"):
        context = assemble_context(
            policy,
            [*verified, *evidence_of(hits)],
            history,
            budget_tokens=settings.CONTEXT_BUDGET_TOKENS,
            count_tokens=services.embedder.count_tokens,
            background=background,
        )
    with watch.lap("score_evidence"):
        # The cross-encoder reads words, not stems: misspellings are put right in the article's own spelling.
        scoring_query = corrected(prepared, typos, [p.text for p in context.evidence])
        read = {h.chunk.pk: h.readings for h in hits if h.readings is not None}
        scored = score_sentences(scoring_query, context, services.reranker, read=read)
        signals = signals_of(
            scoring_query,
            [HitSignals(rerank_passage(h.heading_path, h.chunk.text), _stage_scores(h)) for h in hits],
            best_reading(scored),
        )
    codes = unknown_codes(search_query, [f"{p.heading_path}\n{p.text}" for p in context.evidence])
    return FoundEvidence(hits, context, scored, signals, codes)


def _stage_scores(hit: Hit) -> dict[str, tuple[int, float]]:
    return {name: (stage.rank, stage.score) for name, stage in hit.stages.items()}


def _run(
    conversation: Conversation,
    message: Message,
    today: date,
    services: TurnServices,
    watch: Stopwatch,
    on_delta: Callable[[str], None] | None,
    on_reset: Callable[[], None] | None,
) -> TurnOutcome:
    outcome = TurnOutcome()
    history = _history(conversation, message)
    with watch.lap("mask"):
        masked = services.mask(message.text)
        masked_history = [(m.role, services.mask(m.text) if m.role == Role.CUSTOMER else m.text) for m in history]
    with watch.lap("rewrite"):
        previous_questions = [text for role, text in masked_history if role == Role.CUSTOMER]
        outcome.query = rewrite_query(previous_questions, masked, model=services.model)
        # Retrieval runs on this machine, so it may read the customer's own words: masking costs recall when
        # a country ("the UK"), a programme's name or a Hinglish word is taken for a name or a place. Only a
        # model's rewrite, which saw masked text, is searched as the model wrote it.
        if outcome.query == rewrite_by_rule(previous_questions, masked):
            last_question = [m.text for m in history if m.role == Role.CUSTOMER][-1:]
            search_text = rewrite_by_rule([searchable(q) for q in last_question], searchable(message.text))
        else:
            search_text = outcome.query
    with watch.lap("customer"):
        known = customer_step(conversation, message, today, services, outcome)
    if known is None:
        return outcome
    found = gather_evidence(
        search_text,
        collection=conversation.collection,
        audience=conversation.audience,
        today=today,
        policy=current_policy(conversation),
        history=masked_history,
        services=services,
        watch=watch,
        verified=known.evidence,
        background=background_for(conversation.customer, conversation) if conversation.customer else [],
    )
    outcome.hits, outcome.context, scored = found.hits, found.context, found.scored
    context = found.context  # the narrowed type: outcome.context may be None before this point
    outcome.evidence_score = found.evidence_score
    model = answer_model(conversation.collection)
    probability = model.probability(found.signals) if scored else 0.0
    outcome.signals = {**found.signals, PROBABILITY: round(probability, 4)}
    kind = "answer" if _answered_by_record(context, scored) else model.kind(probability)
    if found.unknown_codes:
        outcome.notes.append(f"the articles do not name {', '.join(sorted(found.unknown_codes))}")
        kind = "abstain"
    elif kind != "answer":
        outcome.notes.append(f"probability the evidence answers {probability:.2f} is below the cut {model.cut:.2f}")
    if kind == "abstain":
        outcome.reading = reading_record(scored, [])
        return outcome
    sections: list[SuggestedSection] = []
    with watch.lap("generate"):
        if kind == "suggest":
            # A suggestion quotes the articles, so no model is asked, whatever the configuration.
            sections = suggested_sections(scored, choose_statements(scored, embed=services.embedder.encode), context)
            outcome.generator = answered_by(None)
            quoted = [s for section in sections for unit in section.units for s in unit.statements]
            outcome.reading = reading_record(scored, quoted)
            outcome.units = [section.as_record() for section in sections]
            outcome.draft = suggestion_draft(sections)
        else:
            # Whatever a generator wrote, no image, HTML or link out of the help centre is shipped.
            outcome.draft = without_outside_links(
                _generate(outcome.query, context, scored, services, outcome, on_delta, on_reset)
            )
    if not outcome.draft.strip() or not split_claims(outcome.draft):
        return outcome
    with watch.lap("ground"):
        scope = Scope(conversation.collection_id, conversation.audience, "as_of", today)
        visible = visible_chunks(scope, [p.chunk_id for p in context.evidence if p.chunk_id is not None])
        outcome.verdicts = services.grounder.ground_reply(outcome.draft, context, visible)
    cut = [v for v in outcome.verdicts if not v.supported]
    if cut:
        outcome.decision, outcome.reply = Decision.REFERRED, REFER_REPLY
        outcome.referral_code = HandoffReason.UNSUPPORTED_CLAIM
        outcome.referral_reason = "; ".join(f"“{v.text}”: {v.reason} ({v.tier.value})" for v in cut)
    elif all(v.tier == "not_a_claim" for v in outcome.verdicts):
        # Nothing checkable was said: an answer without substance is an abstention.
        outcome.notes.append("the draft stated nothing checkable")
    elif kind == "suggest":
        outcome.decision, outcome.reply = Decision.SUGGESTED, suggestion_reply(sections)
    else:
        outcome.decision, outcome.reply = Decision.ANSWERED, outcome.draft
    return outcome


def unit_record(unit: QuotedUnit, context: Context) -> dict[str, Any]:
    """A quoted unit as the turn stores it, with the section it comes from."""
    passage = context.passage(unit.passage)
    article = passage.article if passage is not None and passage.source == "article" else ""
    return units_record([unit], article, passage.heading_path if passage is not None else "")


def _answered_by_record(context: Context, scored: list[ScoredSentence]) -> bool:
    """The customer's own record (looked up by the order number they gave, not ranked) holds the best
    statement, and the cross-encoder finds it relevant (logit ≥ 0, its even odds). The decision's model was
    fitted on help-article retrieval, whose signals say nothing about such a record."""
    best = context.passage(scored[0].passage) if scored else None
    return best is not None and best.trust is Trust.VERIFIED and scored[0].score >= 0.0


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
    try:
        with watch.lap("total"):
            outcome = _run(
                conversation,
                message,
                today or timezone.localdate(),
                services or default_services(),
                watch,
                on_delta,
                on_reset,
            )
    # Whatever broke, the customer still gets a reply and staff get the turn.
    except Exception as exc:
        logger.exception("turn %s of conversation %s failed", message.pk, conversation.public_id)
        outcome = TurnOutcome(
            decision=Decision.REFERRED,
            reply=REFER_REPLY,
            referral_reason=f"the assistant failed: {type(exc).__name__}",
            referral_code=HandoffReason.PROVIDER_FAILURE,
            notes=[f"{type(exc).__name__}: {exc}"],
        )
    return record_turn(conversation, message, outcome, watch)
