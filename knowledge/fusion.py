"""Rank fusion: combine the ranked lists of several retrieval stages into one. Pure functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from knowledge.sparse import StageHit

FusionMethod = Literal["rrf", "weighted"]


@dataclass(frozen=True)
class Fused:
    chunk_id: int
    score: float


def rrf(
    rankings: Mapping[str, Sequence[StageHit]],
    *,
    k: int = 60,
    depth: int = 20,
    weights: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Reciprocal Rank Fusion (Cormack et al. 2009): score = Σ weight / (k + rank), over the top `depth`
    of each list. Ties keep the order of first appearance, so the result is deterministic."""
    scores: dict[int, float] = {}
    for name, hits in rankings.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        for hit in hits[:depth]:
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + weight / (k + hit.rank)
    return [Fused(chunk_id, score) for chunk_id, score in sorted(scores.items(), key=lambda item: -item[1])]


def weighted(
    rankings: Mapping[str, Sequence[StageHit]],
    *,
    depth: int = 20,
    weights: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Weighted score fusion: each list's scores min-max normalised to [0, 1] over its top `depth`, then
    summed with per-list weights (for two lists, weights α and 1 − α). A chunk missing from a list gets 0
    from it."""
    scores: dict[int, float] = {}
    for name, hits in rankings.items():
        top = hits[:depth]
        if not top:
            continue
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        high, low = max(h.score for h in top), min(h.score for h in top)
        span = high - low
        for hit in top:
            normalised = (hit.score - low) / span if span > 0 else 1.0
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + weight * normalised
    return [Fused(chunk_id, score) for chunk_id, score in sorted(scores.items(), key=lambda item: -item[1])]


def fuse(
    rankings: Mapping[str, Sequence[StageHit]],
    *,
    method: FusionMethod,
    depth: int,
    weights: Mapping[str, float] | None = None,
    rrf_k: int = 60,
) -> list[Fused]:
    if method == "rrf":
        return rrf(rankings, k=rrf_k, depth=depth, weights=weights)
    return weighted(rankings, depth=depth, weights=weights)


def blend_rerank(shortlist: Sequence[Fused], rerank_scores: Sequence[float], *, blend: float) -> list[Fused]:
    """Reorder a fused shortlist by (1 − blend) × minmax(fused score) + blend × minmax(reranker score).

    blend = 1 is a pure rerank; blending keeps what fusion knew, which the reranker alone can lose.
    """
    if len(shortlist) != len(rerank_scores):
        raise ValueError(f"{len(rerank_scores)} rerank scores for {len(shortlist)} candidates")

    def minmax(values: Sequence[float]) -> list[float]:
        high, low = max(values, default=0.0), min(values, default=0.0)
        return [(v - low) / (high - low) if high > low else 1.0 for v in values]

    fused_norm, rerank_norm = minmax([f.score for f in shortlist]), minmax(list(rerank_scores))
    mixed = [
        Fused(f.chunk_id, (1 - blend) * a + blend * b)
        for f, a, b in zip(shortlist, fused_norm, rerank_norm, strict=True)
    ]
    return sorted(mixed, key=lambda f: -f.score)
