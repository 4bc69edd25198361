"""Retrieval evaluation on BEIR-layout datasets: every stage alone, their fusion, and the final pipeline."""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from knowledge.embeddings import Embedder
from knowledge.errors import KnowledgeError
from knowledge.fusion import fuse
from knowledge.fuzzy import find_typos
from knowledge.models import Chunk, Collection
from knowledge.rerank import CrossEncoder
from knowledge.retrieval import RetrievalConfig, rerank, run_stages, search
from knowledge.scope import Scope
from knowledge.stages import SEARCH_STAGES, Stage
from lab import metrics

CUTOFFS = (1, 3, 5, 10, 20, 100)
DEPTH = 100


@dataclass(frozen=True)
class Query:
    query_id: str
    text: str
    relevant: dict[str, int]


@dataclass
class StageFigures:
    ndcg: list[float] = field(default_factory=list)
    mrr: list[float] = field(default_factory=list)
    recall: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in CUTOFFS})
    latency_ms: list[float] = field(default_factory=list)

    def add(self, ranked: list[str], relevant: dict[str, int], latency_ms: float | None) -> None:
        self.ndcg.append(metrics.ndcg_at(ranked, relevant, 10))
        self.mrr.append(metrics.mrr_at(ranked, relevant, 10))
        for k in CUTOFFS:
            self.recall[k].append(metrics.recall_at(ranked, relevant, k))
        if latency_ms is not None:
            self.latency_ms.append(latency_ms)

    def summary(self) -> dict[str, float]:
        def mean(values: list[float]) -> float:
            return round(sum(values) / len(values), 4) if values else 0.0

        out = {"ndcg@10": mean(self.ndcg), "mrr@10": mean(self.mrr)}
        out.update({f"recall@{k}": mean(v) for k, v in self.recall.items()})
        if self.latency_ms:
            out.update(metrics.latency_summary(self.latency_ms))
        return out


def read_queries(dataset: Path, split: str) -> list[Query]:
    qrels_path = dataset / "qrels" / f"{split}.tsv"
    if not qrels_path.exists():
        raise KnowledgeError(f"No qrels for split {split!r}: {qrels_path} does not exist.")
    relevant: dict[str, dict[str, int]] = {}
    with qrels_path.open() as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            relevant.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    texts = {}
    with (dataset / "queries.jsonl").open() as fh:
        for line in fh:
            record = json.loads(line)
            texts[str(record["_id"])] = record["text"]
    return [Query(qid, texts[qid], rel) for qid, rel in relevant.items() if qid in texts]


def _documents(collection: Collection) -> dict[int, str]:
    return dict(
        Chunk.objects.filter(version__article__collection=collection).values_list("id", "version__article__slug")
    )


def _searched(
    query: Query, collection: Collection, *, embedder: Embedder, config: RetrievalConfig, document_of: dict[int, str]
) -> tuple[list[str], dict[str, int], float]:
    """What search() ranks for the query, as documents, with the query's relevant documents and the time taken."""
    started = time.perf_counter()
    hits = search(query.text, collection=collection, audience="staff", k=DEPTH, config=config, embedder=embedder)
    elapsed = (time.perf_counter() - started) * 1000
    return metrics.roll_up([h.chunk.pk for h in hits], document_of), query.relevant, elapsed


def evaluate_search(
    collection: Collection,
    queries: list[Query],
    *,
    embedder: Embedder,
    config: RetrievalConfig,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, float]:
    """The figures of search() alone with this configuration: the cheap measure when only the final ranking
    matters (comparing indexes rather than stages)."""
    document_of = _documents(collection)
    figures = StageFigures()
    for done, query in enumerate(queries, start=1):
        figures.add(*_searched(query, collection, embedder=embedder, config=config, document_of=document_of))
        if progress:
            progress(done, len(queries))
    return figures.summary()


def evaluate_retrieval(
    collection: Collection,
    queries: list[Query],
    *,
    embedder: Embedder,
    config: RetrievalConfig,
    reranker: CrossEncoder,
    with_rerank: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, dict[str, float]]:
    """Figures per stage (bm25, dense, fuzzy), for their fusion, for the reranked fusion (with_rerank), and
    for `final`: what search() returns with this configuration."""
    document_of = _documents(collection)
    scope = Scope(collection.pk, "staff")
    figures: dict[str, StageFigures] = {}
    for done, query in enumerate(queries, start=1):
        rankings = {}
        for stage in config.stages:
            started = time.perf_counter()
            rankings.update(
                run_stages(
                    scope,
                    query.text,
                    collection=collection,
                    embedder=embedder,
                    config=RetrievalConfig(stages=(stage,), bm25=config.bm25, ef_search=config.ef_search),
                    k=DEPTH,
                )
            )
            elapsed = (time.perf_counter() - started) * 1000
            ranked = metrics.roll_up([h.chunk_id for h in rankings[stage]], document_of)
            figures.setdefault(stage, StageFigures()).add(ranked, query.relevant, elapsed)
        fused = fuse(rankings, method=config.fusion, depth=config.depth, weights=config.weights, rrf_k=config.rrf_k)
        figures.setdefault(Stage.FUSED, StageFigures()).add(
            metrics.roll_up([f.chunk_id for f in fused], document_of), query.relevant, None
        )
        if with_rerank:
            started = time.perf_counter()
            typos = find_typos(collection.pk, query.text)
            reranked = rerank(query.text, fused, rankings, config, typos=typos, reranker=reranker).fused
            elapsed = (time.perf_counter() - started) * 1000
            figures.setdefault("reranked", StageFigures()).add(
                metrics.roll_up([f.chunk_id for f in reranked], document_of), query.relevant, elapsed
            )
        figures.setdefault(Stage.FINAL, StageFigures()).add(
            *_searched(query, collection, embedder=embedder, config=config, document_of=document_of)
        )
        if progress:
            progress(done, len(queries))
    return {name: stage.summary() for name, stage in figures.items()}


def _grid_entry(
    method: str, bm25: float, dense: float, fuzzy: float, secondary: float = 0
) -> tuple[str, RetrievalConfig]:
    weights: dict[str, float] = {Stage.BM25: bm25, Stage.DENSE: dense, Stage.FUZZY: fuzzy}
    if secondary:
        weights[Stage.DENSE_SECONDARY] = secondary
    name = f"{method} " + " ".join(f"{stage}×{weight}" for stage, weight in weights.items())
    return name, RetrievalConfig(
        stages=tuple(weights), fusion="rrf" if method == "rrf" else "weighted", weights=MappingProxyType(weights)
    )


FUSION_GRID: tuple[tuple[str, RetrievalConfig], ...] = (
    _grid_entry("rrf", 1, 1, 1),
    _grid_entry("rrf", 0, 1, 0),
    _grid_entry("rrf", 1, 0, 0),
    *(_grid_entry("rrf", w, 1, 0) for w in (0.25, 0.5, 0.75, 1)),
    *(_grid_entry("rrf", w, 1, 0.25) for w in (0.25, 0.5)),
    *(_grid_entry("weighted", a, round(1 - a, 2), 0) for a in (0.1, 0.2, 0.3, 0.4, 0.5)),
    *(_grid_entry("weighted", a, round(1 - a, 2), 0.1) for a in (0.2, 0.3)),
)
# Settings that fuse the collection's secondary dense index too; run only where it has one.
SECONDARY_GRID: tuple[tuple[str, RetrievalConfig], ...] = (
    _grid_entry("rrf", 1, 1, 0, 1),
    _grid_entry("rrf", 0, 1, 0, 1),
    _grid_entry("rrf", 0.5, 1, 0, 1),
    *(_grid_entry("weighted", 0, round(1 - s, 2), 0, s) for s in (0.3, 0.5)),
    *(_grid_entry("weighted", b, round((1 - b) / 2, 3), 0.1, round((1 - b) / 2, 3)) for b in (0.2, 0.3, 0.4)),
    *(_grid_entry("weighted", b, round(1 - b - 0.25, 2), 0.1, 0.25) for b in (0.2, 0.3)),
)


def fusion_grid(
    collection: Collection,
    queries: list[Query],
    *,
    embedder: Embedder,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, float]:
    """nDCG@10 of each fusion setting in FUSION_GRID (and SECONDARY_GRID where the collection has a
    secondary dense index), every stage run once per query."""
    document_of = _documents(collection)
    scope = Scope(collection.pk, "staff")
    grid = FUSION_GRID + (SECONDARY_GRID if collection.secondary_space_id else ())
    stages = tuple(sorted({stage for _, config in grid for stage in config.stages}, key=SEARCH_STAGES.index))
    totals = {name: 0.0 for name, _ in grid}
    for done, query in enumerate(queries, start=1):
        rankings = run_stages(
            scope, query.text, collection=collection, embedder=embedder, config=RetrievalConfig(stages=stages), k=DEPTH
        )
        for name, config in grid:
            chosen = {stage: rankings[stage] for stage in config.stages}
            fused = fuse(chosen, method=config.fusion, depth=config.depth, weights=config.weights, rrf_k=config.rrf_k)
            ranked = metrics.roll_up([f.chunk_id for f in fused], document_of)
            totals[name] += metrics.ndcg_at(ranked, query.relevant, 10)
        if progress:
            progress(done, len(queries))
    return {name: round(total / len(queries), 4) for name, total in totals.items()}
