"""The evidence for a question: retrieve the passages in force for its audience, assemble the
trust-labelled context, and score its sentences against the question. Everything answering knows before it
decides whether to answer; calibration runs exactly this."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from django.conf import settings

from answering.decide.abstention import HitSignals, signals_of, unknown_codes
from answering.evidence.context import Context, Evidence, assemble_context
from answering.privacy.masking import without_placeholders
from answering.read.reader import ScoredSentence, best_reading, score_sentences
from answering.rewrite import question_focus
from answering.services import TurnServices
from knowledge.fuzzy import corrected, find_typos
from knowledge.models import Collection
from knowledge.rerank import rerank_passage
from knowledge.retrieval import Hit, prepare_query, search
from supportbot.stopwatch import Stopwatch


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
