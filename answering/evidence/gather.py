"""The evidence for a question: retrieve the passages in force for its audience, assemble the
trust-labelled context, score its sentences against the question, and follow a pointer one hop. Everything
answering knows before it decides whether to answer; calibration runs exactly this."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from django.conf import settings

from answering.decide.abstention import BestStatements, HitSignals, signals_of, unknown_codes
from answering.evidence.context import Context, Evidence, Trust, assemble_context
from answering.evidence.pointers import follow_pointer
from answering.privacy.masking import without_placeholders
from answering.read.reader import ScoredSentence, best_reading, score_sentences
from answering.rewrite import question_focus
from answering.services import TurnServices
from knowledge.fuzzy import corrected, find_typos
from knowledge.models import Chunk, Collection
from knowledge.rerank import rerank_passage
from knowledge.retrieval import Hit, prepare_query, search
from knowledge.scope import Scope
from supportbot.stopwatch import Stopwatch


def chunk_evidence(chunk: Chunk, score: float) -> Evidence:
    return Evidence(
        chunk_id=chunk.pk,
        article=chunk.version.article.slug,
        title=chunk.version.article.title,
        # A page without a version of its own is named by a hash of its text, which nobody should be shown.
        version="" if chunk.version.named_by_content else chunk.version.version_label,
        effective_date=chunk.version.effective_date.isoformat(),
        heading_path=chunk.heading_path,
        text=chunk.text,
        score=score,
    )


def evidence_of(hits: list[Hit]) -> list[Evidence]:
    return [chunk_evidence(h.chunk, h.score) for h in hits]


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
    they stand on `today`: the version in force then, not one published with a later effective date. A
    strong statement that points elsewhere ("see Refunds") is followed one hop: the section it names joins
    the context after the passage that points there, and its answer is said instead of the pointer."""
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
    evidence = [*verified, *evidence_of(hits)]

    def context_of(evidence: list[Evidence]) -> Context:
        return assemble_context(
            policy,
            evidence,
            history,
            budget_tokens=settings.CONTEXT_BUDGET_TOKENS,
            count_tokens=services.embedder.count_tokens,
            background=background,
        )

    with watch.lap("context"):
        context = context_of(evidence)
    with watch.lap("score_evidence"):
        # The cross-encoder reads words, not stems: misspellings are put right in the article's own spelling.
        scoring_query = corrected(prepared, typos, [p.text for p in context.evidence])
        read = {h.chunk.pk: h.readings for h in hits if h.readings is not None}
        scored = score_sentences(scoring_query, context, services.reranker, read=read)
    with watch.lap("follow_pointer"):
        scope = Scope(collection.pk, audience, "as_of", today)
        followed = follow_pointer(scoring_query, scored, context, scope, services.reranker)
        if followed is not None:
            # The section pointed to is read right after the passage that points there (moved up, when it
            # was retrieved lower down).
            evidence = [e for e in evidence if e.chunk_id != followed.chunk.pk]
            at = next(i for i, e in enumerate(evidence) if e.chunk_id == followed.pointed_from) + 1
            evidence.insert(at, chunk_evidence(followed.chunk, followed.score))
            context = context_of(evidence)
            read[followed.chunk.pk] = followed.readings
            retrieved = [p for p in context.evidence if p.trust is not Trust.VERIFIED]
            reach = next((i + 1 for i, p in enumerate(retrieved) if p.chunk_id == followed.chunk.pk), 0)
            scored = score_sentences(scoring_query, context, services.reranker, read=read, passages=max(4, reach))
            scored = [s for s in scored if not followed.replaces(s, context)]
    with watch.lap("score_evidence"):
        signals = signals_of(
            scoring_query,
            [HitSignals(rerank_passage(h.heading_path, h.chunk.text), _stage_scores(h)) for h in hits],
            best_statements(scored),
        )
    codes = unknown_codes(search_query, [f"{p.heading_path}\n{p.text}" for p in context.evidence])
    return FoundEvidence(hits, context, scored, signals, codes)


def best_statements(scored: Sequence[ScoredSentence]) -> BestStatements | None:
    """The best statement (alone or read after its predecessor) and the best of any other passage."""
    if not scored:
        return None
    best = max(scored, key=lambda s: s.best_reading)
    others = [s.best_reading for s in scored if s.passage != best.passage]
    return BestStatements(
        best.best_reading,
        best.text,
        best.step or best.statement.introduces,
        max(others) if others else None,
    )


def _stage_scores(hit: Hit) -> dict[str, tuple[int, float]]:
    return {name: (stage.rank, stage.score) for name, stage in hit.stages.items()}
