"""Experiments on the golden set: how retrieval settings and the abstention threshold trade quality, and
what each retrieval stage contributes.

Retrieval is measured alone here (no generation): each question is rewritten by the same rule a turn uses
and searched with the asker's audience on the day it is asked; recall@3 and MRR over the answerable
questions.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from django.utils import timezone

from answering.decide.abstention import Row, roc_auc, tradeoff
from answering.rewrite import question_focus, rewrite_by_rule
from answering.services import TurnServices
from conversations.records.turns import answer_model
from knowledge.embeddings import Embedder
from knowledge.fusion import fuse
from knowledge.fuzzy import find_typos
from knowledge.models import Chunk, Collection
from knowledge.rerank import CrossEncoder
from knowledge.retrieval import (
    Hit,
    RetrievalConfig,
    default_config,
    prepare_query,
    rerank,
    run_stages,
    search,
)
from knowledge.scope import Scope
from knowledge.stages import Stage
from lab import metrics
from lab.answer_evaluation import TOP_K, GoldenQuestion, is_gold, versions_then
from lab.calibration import LabelledQuestion, calibrate, pairs_of
from lab.retrieval_evaluation import DEPTH as STAGE_DEPTH
from lab.retrieval_evaluation import StageFigures

DEPTH = 6  # what a turn retrieves (ANSWER_PASSAGES)


@dataclass(frozen=True)
class RetrievalFigures:
    setting: str
    recall_at_3: float
    mrr: float

    def as_dict(self) -> dict[str, Any]:
        return {"setting": self.setting, f"recall@{TOP_K}": self.recall_at_3, "mrr": self.mrr}


def _record(hit: Hit) -> dict[str, str]:
    """A hit in the shape a turn stores its candidates."""
    version = hit.chunk.version
    return {"article": version.article.slug, "heading_path": hit.heading_path, "version": version.version_label}


def search_query(question: GoldenQuestion) -> str:
    """The query a turn would search with (the rule rewrite; no model)."""
    return question_focus(rewrite_by_rule(list(question.history), question.question))


def golden_retrieval(
    questions: Iterable[GoldenQuestion],
    collection: Collection,
    *,
    config: RetrievalConfig,
    embedder: Embedder,
    setting: str,
) -> RetrievalFigures:
    ranks: list[int | None] = []
    for question in questions:
        if not question.answerable:
            continue
        versions = versions_then(question, collection)
        hits = search(
            search_query(question),
            collection=collection,
            audience=question.audience,
            as_of=question.as_of or timezone.localdate(),
            k=DEPTH,
            config=config,
            embedder=embedder,
        )
        records = [_record(h) for h in hits]
        ranks.append(next((i for i, r in enumerate(records, start=1) if is_gold(question, r, versions)), None))
    found = [r for r in ranks if r is not None]
    return RetrievalFigures(
        setting,
        round(sum(r <= TOP_K for r in found) / len(ranks), 3) if ranks else 0.0,
        round(sum(1 / r for r in found) / len(ranks), 3) if ranks else 0.0,
    )


def fusion_settings(base: RetrievalConfig) -> list[tuple[str, RetrievalConfig]]:
    """RRF at several k, and weighted fusion from all-BM25 (α 0) to all-dense (α 1), each with and without
    the reranker. α splits the dense weight evenly between the two dense models; fuzzy keeps its weight."""
    base = replace(base, rerank=False)
    settings: list[tuple[str, RetrievalConfig]] = []
    for k in (10, 30, 60, 100):
        settings.append((f"rrf k={k}", replace(base, fusion="rrf", rrf_k=k)))
    dense = [s for s in base.stages if s in (Stage.DENSE, Stage.DENSE_SECONDARY)]
    for alpha in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0):
        weights = {**base.weights, Stage.BM25: round(1 - alpha, 2), **{s: round(alpha / len(dense), 3) for s in dense}}
        settings.append((f"weighted α={alpha}", replace(base, fusion="weighted", weights=MappingProxyType(weights))))
    return settings + [(f"{name} + rerank", replace(config, rerank=True)) for name, config in settings]


def fusion_experiment(
    questions: list[GoldenQuestion],
    collection: Collection,
    *,
    embedder: Embedder,
    progress: Callable[[str], None] | None = None,
) -> list[RetrievalFigures]:
    rows = []
    for name, config in fusion_settings(default_config()):
        rows.append(golden_retrieval(questions, collection, config=config, embedder=embedder, setting=name))
        if progress is not None:
            progress(name)
    return rows


def as_labelled(question: GoldenQuestion) -> LabelledQuestion:
    """A golden question as calibration asks it: searched as a turn would, on its day, right when the reply
    states one of its facts."""
    return LabelledQuestion(
        search_query(question), question.audience, question.answerable, None, question.as_of, question.facts
    )


@dataclass(frozen=True)
class ModelFigures:
    """One answer-scoring cross-encoder on one labelled set: for how many answerable questions the reader's
    reply states the fact, and how well the best statement's score tells those replies from all others (the
    decision's first signal; ROC AUC, independent of any fitted decision)."""

    model: str
    labelled_set: str
    answerable: int
    read_right: int
    auc: float
    ms_per_question: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "set": self.labelled_set,
            "answerable": self.answerable,
            "read_right": self.read_right,
            # Undefined (None) when every reply, or none, is right.
            "sentence_top_auc": None if math.isnan(self.auc) else round(self.auc, 3),
            "ms_per_question": round(self.ms_per_question),
        }


def model_experiment(
    models: dict[str, CrossEncoder],
    sets: list[tuple[str, list[LabelledQuestion], Collection]],
    services: TurnServices,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> list[ModelFigures]:
    """Every labelled set read with each cross-encoder in place of the one in force: as reranker and as
    the reader's evidence (the grounder keeps its own)."""
    figures = []
    for name, reranker in models.items():
        with_model = replace(services, reranker=reranker)
        for set_name, questions, collection in sets:
            started = time.perf_counter()
            rows = calibrate(questions, collection, with_model, progress=progress)
            elapsed = time.perf_counter() - started
            figures.append(
                ModelFigures(
                    name,
                    set_name,
                    sum(row.answerable for row in rows),
                    sum(row.right for row in rows),
                    roc_auc(pairs_of(rows, "sentence_top")),
                    1000 * elapsed / max(1, len(rows)),
                )
            )
    return figures


def threshold_experiment(
    questions: list[LabelledQuestion],
    collection: Collection,
    services: TurnServices,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[Row], list[tuple[float, bool]]]:
    """The probability the decision in force gives every question (from its signals, measured exactly as
    calibration measures them) and the trade-off table over cuts: share of answerable questions answered
    against share of unanswerable ones answered."""
    model = answer_model(collection)
    rows = calibrate(questions, collection, services, progress=progress)
    scores = [(model.probability(row.signals), row.answerable) for row in rows]
    return tradeoff(scores), scores


def golden_stage_figures(
    questions: Iterable[GoldenQuestion],
    collection: Collection,
    *,
    config: RetrievalConfig,
    embedder: Embedder,
    reranker: CrossEncoder,
    progress: Callable[[GoldenQuestion], None] | None = None,
) -> dict[str, dict[str, float]]:
    """nDCG@10, MRR@10 and recall@k of each retrieval stage alone, of their fusion and of the reranked fusion
    (whether or not the reranker is on), over the answerable questions, each searched as a turn would.

    A question has one relevant item, its answer: every chunk of any gold section counts as that one item,
    so recall@k is the share of questions with a gold section among the first k (as in `evaluate answers`)."""
    records = {
        pk: {"article": slug, "heading_path": path, "version": label}
        for pk, slug, path, label in Chunk.objects.filter(version__article__collection=collection).values_list(
            "id", "version__article__slug", "heading_path", "version__version_label"
        )
    }
    figures: dict[str, StageFigures] = {}
    for question in questions:
        if not question.answerable:
            continue
        versions = versions_then(question, collection)
        answer_of = {pk: "answer" if is_gold(question, r, versions) else str(pk) for pk, r in records.items()}
        query = prepare_query(search_query(question), collection)
        scope = Scope(collection.pk, question.audience, "as_of", question.as_of or timezone.localdate())
        typos = find_typos(collection.pk, query)
        rankings = run_stages(
            scope, query, collection=collection, embedder=embedder, config=config, k=STAGE_DEPTH, typos=typos
        )
        fused = fuse(rankings, method=config.fusion, depth=STAGE_DEPTH, weights=config.weights, rrf_k=config.rrf_k)
        reranked = rerank(query, fused, rankings, config, typos=typos, reranker=reranker).fused
        ranked = {
            **{stage: [h.chunk_id for h in hits] for stage, hits in rankings.items()},
            Stage.FUSED: [f.chunk_id for f in fused],
            "fused + rerank": [f.chunk_id for f in reranked],
        }
        for stage, chunk_ids in ranked.items():
            figures.setdefault(stage, StageFigures()).add(metrics.roll_up(chunk_ids, answer_of), {"answer": 1}, None)
        if progress is not None:
            progress(question)
    return {stage: stage_figures.summary() for stage, stage_figures in figures.items()}
