"""The answer turn: one customer message in; one grounded reply, an honest "I don't know", or a referral out.

Synchronous on purpose: the websocket consumer runs it in a thread, the evaluator and `manage.py ask`
call it directly. Every step is persisted on the Turn so staff can see why a reply said what it said.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import date, timedelta
from functools import cache
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from conversations.abstention import AnswerModel, HitSignals, default_model, signals_of, unknown_codes
from conversations.claims import split_claims
from conversations.context import Context, Evidence, Trust, assemble_context
from conversations.generation import (
    ABSTAIN_REPLY,
    ORDER_NOT_FOUND_REPLY,
    REFER_REPLY,
    REFUND_APPROVED_REPLY,
    REFUND_REFERRED_REPLY,
    SIGN_IN_REPLY,
    model_reply,
)
from conversations.grounding import ClaimVerdict, Grounder
from conversations.models import (
    AbstentionThreshold,
    Claim,
    Conversation,
    ConversationStatus,
    Decision,
    Message,
    Referral,
    Role,
    SystemPolicy,
    Turn,
)
from conversations.pii import searchable, without_placeholders
from conversations.providers import LanguageModel, ProviderUnavailable, answered_by, language_model_from_settings
from conversations.reader import (
    ScoredSentence,
    as_reply,
    best_reading,
    choose_statements,
    reading_record,
    score_sentences,
)
from conversations.rewrite import question_focus, rewrite_by_rule, rewrite_query
from customers.corpus import CustomerKnowledge, customer_knowledge, order_numbers
from customers.gatekeeper import (
    RefundRequest,
    mentions_refund,
    order_number_of,
    parse_amount,
    refund_request_in,
    request_refund,
)
from customers.memory import background_for, remember
from knowledge.embeddings import Embedder, default_embedder
from knowledge.fuzzy import corrected, find_typos
from knowledge.help import help_url
from knowledge.models import Collection
from knowledge.rerank import CrossEncoder, default_reranker, rerank_passage
from knowledge.retrieval import Hit, prepare_query, search, visible_chunks
from knowledge.scope import Scope
from supportbot.stopwatch import Stopwatch

logger = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 2000
PROBABILITY = "answer_probability"  # the signal a calibrated decision is stored under
HISTORY_MESSAGES = 6
DEFAULT_POLICY = (
    "Be accurate, brief and polite. Only state what the help-centre passages say. Never promise refunds, "
    "discounts, compensation or exceptions that the passages do not state. Never ask for full card numbers "
    "or passwords."
)


class TurnError(Exception):
    """The message cannot be answered as sent (empty, too long); the text says what to change."""


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

    def as_json(self) -> dict[str, Any]:
        return {
            "turn": self.turn_id,
            "reply": self.reply,
            "decision": self.decision,
            "citations": [c.as_json() for c in self.citations],
            "claims": [
                {"text": c.text, "verdict": "supported" if c.supported else "unsupported", "tier": c.tier.value}
                for c in self.claims
            ],
            "evidence_score": self.evidence_score,
            "generator": self.generator,
            "latency_ms": {name: round(ms, 1) for name, ms in self.latency_ms.items()},
        }


@dataclass
class TurnServices:
    """What a turn needs, loaded once per process; tests build their own."""

    embedder: Embedder
    reranker: CrossEncoder
    grounder: Grounder
    mask: Callable[[str], str]
    # The language model that writes replies, rewrites follow-ups and proposes refund tool calls (its
    # judge sits in the grounder); None: the offline reader and the rules.
    model: LanguageModel | None = None


_services_lock = threading.Lock()


def default_services() -> TurnServices:
    """The process's models, loaded once; the server warms them at start while the first chat may arrive."""
    with _services_lock:
        return _load_services()


@cache
def _load_services() -> TurnServices:
    from conversations.nli import load_nli
    from conversations.pii import mask_pii

    embedder, reranker = default_embedder(), default_reranker()
    client = language_model_from_settings()
    grounder = Grounder(
        embedder,
        reranker,
        similarity_threshold=settings.GROUNDING_SIMILARITY_THRESHOLD,
        support_threshold=settings.GROUNDING_SUPPORT_THRESHOLD,
        entailment=load_nli(settings.NLI_MODEL) if settings.NLI_MODEL else None,
        entailment_threshold=settings.NLI_THRESHOLD,
        judge=(lambda claim, passage: client.judge(claim=claim, passage=passage)) if client else None,
    )
    return TurnServices(
        embedder,
        reranker,
        grounder,
        mask=lambda text: mask_pii(text).text,
        model=client,
    )


def warm_up() -> None:
    """Load every model a turn uses (~10 s on 2 cores), so the first customer does not wait for it."""
    from conversations.pii import mask_pii

    default_services()
    mask_pii("warming up")


def validate_message(text: object) -> str:
    if not isinstance(text, str):
        raise TurnError("A message must be text.")
    cleaned = text.replace("\x00", "").strip()
    if not cleaned:
        raise TurnError("The message is empty.")
    if len(cleaned) > MAX_MESSAGE_CHARS:
        raise TurnError(f"The message is {len(cleaned)} characters long; the limit is {MAX_MESSAGE_CHARS}.")
    return cleaned


def current_policy(conversation: Conversation) -> str:
    policy = SystemPolicy.objects.filter(collection=conversation.collection).order_by("-version").first()
    return policy.text if policy else DEFAULT_POLICY


def answer_model(collection: Collection) -> AnswerModel:
    """The collection's calibrated decision, else the shipped default; ABSTAIN_THRESHOLD, when set, moves
    the cut (a probability)."""
    chosen = AbstentionThreshold.objects.filter(collection=collection, signal=PROBABILITY).order_by("-created_at")
    stored = chosen.first()
    model = AnswerModel.from_json(stored.model) if stored is not None else default_model()
    return model if settings.ABSTAIN_THRESHOLD is None else replace(model, cut=settings.ABSTAIN_THRESHOLD)


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


@dataclass
class _Outcome:
    """What the pipeline produced, before it is written down."""

    query: str = ""
    hits: list[Hit] = field(default_factory=list)
    context: Context | None = None
    evidence_score: float | None = None
    signals: dict[str, float] = field(default_factory=dict)
    reading: list[dict[str, object]] = field(default_factory=list)
    generator: str = ""
    draft: str = ""
    verdicts: list[ClaimVerdict] = field(default_factory=list)
    decision: str = Decision.ABSTAINED
    reply: str = ABSTAIN_REPLY
    referral_reason: str = ""
    notes: list[str] = field(default_factory=list)


def _history(conversation: Conversation, before: Message) -> list[Message]:
    earlier = conversation.messages.filter(id__lt=before.pk).exclude(role=Role.STAFF).order_by("-id")
    return list(reversed(earlier[:HISTORY_MESSAGES]))


def _generate(
    question: str,
    context: Context,
    scored: list[ScoredSentence],
    services: TurnServices,
    outcome: _Outcome,
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
    draft = as_reply(chosen)
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
    prepared = prepare_query(search_query, collection)
    # Found once: retrieval searches the corrections, the cross-encoder reads them (below).
    with watch.lap("typos"):
        typos = find_typos(collection.pk, prepared)
    with watch.lap("retrieve"):
        hits = search(
            search_query,
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
) -> _Outcome:
    outcome = _Outcome()
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
        known = _customer_step(conversation, message, today, services, outcome)
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
    if found.unknown_codes:
        unanswered = f"the articles do not name {', '.join(sorted(found.unknown_codes))}"
    elif probability < model.cut and not _answered_by_record(context, scored):
        unanswered = f"probability the evidence answers {probability:.2f} is below the cut {model.cut:.2f}"
    else:
        unanswered = ""
    if unanswered:
        outcome.reading = reading_record(scored, [])
        outcome.notes.append(unanswered)
        return outcome
    with watch.lap("generate"):
        outcome.draft = _generate(outcome.query, context, scored, services, outcome, on_delta, on_reset)
    if not outcome.draft.strip() or not split_claims(outcome.draft):
        return outcome
    with watch.lap("ground"):
        scope = Scope(conversation.collection_id, conversation.audience, "as_of", today)
        visible = visible_chunks(scope, [p.chunk_id for p in context.evidence if p.chunk_id is not None])
        outcome.verdicts = services.grounder.ground_reply(outcome.draft, context, visible)
    cut = [v for v in outcome.verdicts if not v.supported]
    if cut:
        outcome.decision, outcome.reply = Decision.REFERRED, REFER_REPLY
        outcome.referral_reason = "; ".join(f"“{v.text}”: {v.reason} ({v.tier.value})" for v in cut)
    elif all(v.tier == "not_a_claim" for v in outcome.verdicts):
        # Nothing checkable was said: an answer without substance is an abstention.
        outcome.notes.append("the draft stated nothing checkable")
    else:
        outcome.decision, outcome.reply = Decision.ANSWERED, outcome.draft
    return outcome


def _answered_by_record(context: Context, scored: list[ScoredSentence]) -> bool:
    """The customer's own record (looked up by the order number they gave, not ranked) holds the best
    statement, and the cross-encoder finds it relevant (logit ≥ 0, its even odds). The decision's model was
    fitted on help-article retrieval, whose signals say nothing about such a record."""
    best = context.passage(scored[0].passage) if scored else None
    return best is not None and best.trust is Trust.VERIFIED and scored[0].score >= 0.0


def store_customer_message(conversation: Conversation, text: object, client_id: str = "") -> tuple[Message, bool]:
    """Store a customer message before anything acts on it. A client id already stored in this
    conversation (a resend after a reconnect) returns the stored message and False."""
    cleaned = validate_message(text)
    if client_id:
        message, created = Message.objects.get_or_create(
            conversation=conversation, client_id=client_id, defaults={"role": Role.CUSTOMER, "text": cleaned}
        )
        return message, created
    return Message.objects.create(conversation=conversation, role=Role.CUSTOMER, text=cleaned), True


def claim_answer(message: Message) -> bool:
    """Take the job of answering this message; False when it is answered, or being answered elsewhere.
    A claim older than CHAT_STALE_TURN_S (a worker that died) may be taken again."""
    stale = timezone.now() - timedelta(seconds=settings.CHAT_STALE_TURN_S)
    claimed = (
        Message.objects.filter(pk=message.pk, role=Role.CUSTOMER, turn__isnull=True)
        .filter(Q(answer_started_at__isnull=True) | Q(answer_started_at__lt=stale))
        .update(answer_started_at=timezone.now())
    )
    return claimed == 1


def _customer_step(
    conversation: Conversation, message: Message, today: date, services: TurnServices, outcome: _Outcome
) -> CustomerKnowledge | None:
    """What only a verified customer may get: their orders and facts, and refunds the gatekeeper certifies.
    None when this step already decided the turn (sign in first, not your order, a refund decision)."""
    customer = conversation.customer
    if customer is None:
        if order_numbers(message.text):
            outcome.reply, outcome.notes = SIGN_IN_REPLY, [*outcome.notes, "an order number from an anonymous visitor"]
            return None
        return CustomerKnowledge()
    known = customer_knowledge(customer, message.text, today)
    if known.not_found and not any(e.source == "order" for e in known.evidence):
        numbers = ", ".join(f"#{n}" for n in known.not_found)
        outcome.reply = ORDER_NOT_FOUND_REPLY.format(numbers=numbers)
        outcome.notes.append(f"order {numbers} is not on this customer's account")
        return None
    request, via = _refund_request(message.text, services, outcome)
    if request is not None:
        certified = request_refund(customer, request, conversation=conversation, via=via, today=today)
        outcome.generator = "gatekeeper"
        if certified.approved:
            outcome.decision = Decision.ANSWERED
            outcome.reply = REFUND_APPROVED_REPLY.format(amount=certified.amount, number=request.order_number)
        else:
            outcome.decision = Decision.REFERRED
            outcome.reply = REFUND_REFERRED_REPLY.format(number=request.order_number, reason=certified.reason)
            outcome.referral_reason = f"refund request for order #{request.order_number}: {certified.reason}"
        outcome.notes.append(f"gatekeeper: {'approved' if certified.approved else 'to staff'} ({certified.reason})")
        return None
    # Facts may hold a name: masked like every text that may leave for a model.
    verified = [replace(e, text=services.mask(e.text)) if e.source == "facts" else e for e in known.evidence]
    return CustomerKnowledge(verified, known.not_found)


def _refund_request(text: str, services: TurnServices, outcome: _Outcome) -> tuple[RefundRequest | None, str]:
    """A refund request in the message: the model's tool call with a provider (asked only when refunds are
    mentioned), otherwise the intent rule. Either way it is only a request; the gatekeeper decides."""
    if services.model is None or not mentions_refund(text):
        return refund_request_in(text), "intent"
    via = services.model.provider
    try:
        call = services.model.refund_tool_call(message=services.mask(text))
    except ProviderUnavailable as exc:
        outcome.notes.append(f"{via} unavailable for the refund tool ({exc}); the intent rule decided instead.")
        return refund_request_in(text), "intent"
    if call is None:
        return None, via
    try:
        return RefundRequest(order_number_of(call.get("order_number")), parse_amount(call.get("amount"))), via
    except ValueError as exc:
        outcome.notes.append(f"The model's request_refund call was not usable ({exc}); no refund was requested.")
        return None, via


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
        outcome = _Outcome(
            decision=Decision.REFERRED,
            reply=REFER_REPLY,
            referral_reason=f"the assistant failed: {type(exc).__name__}",
            notes=[f"{type(exc).__name__}: {exc}"],
        )
    return _record(conversation, message, outcome, watch)


def _citations(outcome: _Outcome) -> list[Citation]:
    if outcome.decision != Decision.ANSWERED or outcome.context is None:
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
def _record(conversation: Conversation, message: Message, outcome: _Outcome, watch: Stopwatch) -> TurnResult:
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
    remember(conversation)
    if outcome.decision == Decision.REFERRED:
        Referral.objects.create(turn=turn, conversation=conversation, reason=outcome.referral_reason)
        if conversation.status == ConversationStatus.OPEN:
            conversation.status = ConversationStatus.REFERRED
    conversation.save(update_fields=["status", "updated_at"])
    return TurnResult(
        turn.pk,
        outcome.reply,
        outcome.decision,
        citations,
        outcome.verdicts,
        dict(watch.laps_ms),
        outcome.evidence_score,
        outcome.generator,
    )
