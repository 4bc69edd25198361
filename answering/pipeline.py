"""How a reply is made: one question in, one outcome out (a grounded answer, a suggested section, an
honest "I don't know", or a hand-off to a person), with every step's record.

Synchronous on purpose: the chat runs it in a worker or a thread, and `manage.py ask` and the evaluator
wait for it, all through `conversations.records.turns`. It knows nothing of conversations: that caller
reads the question from the records and writes the outcome down.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from answering.customer.step import customer_step
from answering.decide.abstention import PROBABILITY
from answering.decide.reply_kind import reply_kind
from answering.evidence.context import Context
from answering.evidence.gather import gather_evidence
from answering.ground.claims import split_claims
from answering.outcome import Decision, HandoffReason, Outcome
from answering.privacy.masking import searchable
from answering.providers.base import ProviderUnavailable, answered_by
from answering.providers.generation import model_reply
from answering.question import CUSTOMER, Question
from answering.read.reader import (
    QuotedUnit,
    ScoredSentence,
    as_reply,
    choose_statements,
    quoted_units,
    reading_record,
)
from answering.read.suggestion import (
    SuggestedSection,
    suggested_sections,
    suggestion_draft,
    suggestion_reply,
    units_record,
)
from answering.replies import REFER_REPLY
from answering.rewrite import rewrite_by_rule, rewrite_query
from answering.services import TurnServices
from knowledge.injection import without_outside_links
from knowledge.retrieval import visible_chunks
from knowledge.scope import Scope
from knowledge.voice import Voice
from supportbot.stopwatch import Stopwatch


def answer(
    question: Question,
    *,
    services: TurnServices,
    watch: Stopwatch,
    on_delta: Callable[[str], None] | None = None,
    on_reset: Callable[[], None] | None = None,
) -> Outcome:
    """Answer one question: mask → rewrite → customer step → evidence → decide (answer, suggest or
    abstain) → draft (the reader, or a model) → ground. Each step's time is a lap of `watch`; `on_delta`
    receives the reply as it is written, `on_reset` voids what it received when a model's stream restarts.
    Reads the database (articles, the customer's orders) and writes nothing."""
    outcome = Outcome()
    with watch.lap("mask"):
        masked = services.mask(question.text)
        masked_history = [(role, services.mask(text) if role == CUSTOMER else text) for role, text in question.history]
    with watch.lap("rewrite"):
        previous_questions = [text for role, text in masked_history if role == CUSTOMER]
        outcome.query = rewrite_query(previous_questions, masked, model=services.model)
        # Retrieval runs on this machine, so it may read the customer's own words: masking costs recall when
        # a country ("the UK"), a programme's name or a Hinglish word is taken for a name or a place. Only a
        # model's rewrite, which saw masked text, is searched as the model wrote it.
        if outcome.query == rewrite_by_rule(previous_questions, masked):
            last_question = [text for role, text in question.history if role == CUSTOMER][-1:]
            search_text = rewrite_by_rule([searchable(q) for q in last_question], searchable(question.text))
        else:
            search_text = outcome.query
    with watch.lap("customer"):
        known = customer_step(question.customer, question.text, question.today, services, outcome)
    if known is None:
        return outcome
    found = gather_evidence(
        search_text,
        collection=question.collection,
        audience=question.audience,
        today=question.today,
        policy=question.policy,
        history=masked_history,
        services=services,
        watch=watch,
        verified=known.evidence,
        background=question.background,
    )
    outcome.hits, outcome.context, scored = found.hits, found.context, found.scored
    context = found.context  # the narrowed type: outcome.context may be None before this point
    outcome.evidence_score = found.evidence_score
    decided = reply_kind(found, question.decision)
    outcome.signals = {**found.signals, PROBABILITY: round(decided.probability, 4)}
    if decided.why_not:
        outcome.notes.append(decided.why_not)
    kind = decided.kind
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
                _generate(
                    outcome.query, context, scored, services, outcome, on_delta, on_reset, Voice.of(question.collection)
                )
            )
    if not outcome.draft.strip() or not split_claims(outcome.draft):
        return outcome
    with watch.lap("ground"):
        scope = Scope(question.collection.pk, question.audience, "as_of", question.today)
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


def _generate(
    question: str,
    context: Context,
    scored: list[ScoredSentence],
    services: TurnServices,
    outcome: Outcome,
    on_delta: Callable[[str], None] | None,
    on_reset: Callable[[], None] | None,
    voice: Voice,
) -> str:
    if services.model is not None:
        try:
            outcome.generator = answered_by(services.model)
            return model_reply(question, context, services.model, voice=voice, on_delta=on_delta, on_reset=on_reset)
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


def unit_record(unit: QuotedUnit, context: Context) -> dict[str, Any]:
    """A quoted unit as the turn stores it, with the section it comes from."""
    passage = context.passage(unit.passage)
    article = passage.article if passage is not None and passage.source == "article" else ""
    return units_record([unit], article, passage.heading_path if passage is not None else "")
