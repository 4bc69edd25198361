"""Rank fusion: RRF and weighted fusion combine the stages' rankings as their formulas say."""

import pytest

from knowledge.fusion import Fused, blend_rerank, fuse, rrf, weighted
from knowledge.sparse import StageHit


def ranking(*chunk_ids: int, scores: list[float] | None = None) -> list[StageHit]:
    return [
        StageHit(chunk_id, rank, scores[rank - 1] if scores else 1.0 / rank)
        for rank, chunk_id in enumerate(chunk_ids, start=1)
    ]


def test_rrf_prefers_consistent_agreement_over_one_top_rank():
    # The textbook case: A is 1st in one list and 30th in the other; B is 5th in both. B wins.
    first = ranking(1, 101, 102, 103, 2)  # A (id 1) at rank 1, B (id 2) at rank 5
    second = ranking(201, 202, 203, 204, 2, *range(205, 229), 1)  # B at rank 5, A at rank 30
    assert second[29].chunk_id == 1 and first[4].chunk_id == 2 and second[4].chunk_id == 2
    fused = rrf({"one": first, "two": second}, k=60, depth=30)
    scores = {f.chunk_id: f.score for f in fused}
    assert scores[1] == pytest.approx(1 / 61 + 1 / 90)
    assert scores[2] == pytest.approx(2 / 65)
    assert fused[0].chunk_id == 2


def test_rrf_only_counts_the_top_depth_of_each_list():
    fused = rrf({"one": ranking(1, 2, 3), "two": ranking(3, 2, 1)}, k=60, depth=1)
    assert [f.chunk_id for f in fused] == [1, 3]


def test_rrf_list_weights_scale_each_contribution():
    fused = rrf({"one": ranking(1), "two": ranking(2)}, weights={"one": 0.5, "two": 2.0})
    assert [f.chunk_id for f in fused] == [2, 1]
    assert fused[0].score == pytest.approx(2.0 / 61)


def test_weighted_fusion_normalises_each_list_then_mixes_with_alpha():
    bm25 = ranking(1, 2, 3, scores=[30.0, 20.0, 10.0])
    dense = ranking(3, 2, 1, scores=[0.9, 0.85, 0.5])
    alpha = 0.3
    fused = weighted({"bm25": bm25, "dense": dense}, weights={"bm25": alpha, "dense": 1 - alpha})
    scores = {f.chunk_id: f.score for f in fused}
    assert scores[1] == pytest.approx(alpha * 1.0 + (1 - alpha) * 0.0)
    assert scores[2] == pytest.approx(alpha * 0.5 + (1 - alpha) * 0.875)
    assert scores[3] == pytest.approx(alpha * 0.0 + (1 - alpha) * 1.0)
    assert [f.chunk_id for f in fused] == [2, 3, 1]


def test_a_single_list_keeps_its_order_under_either_method():
    only = {"dense": ranking(5, 4, 9, scores=[0.9, 0.8, 0.7])}
    for method in ("rrf", "weighted"):
        assert [f.chunk_id for f in fuse(only, method=method, depth=20)] == [5, 4, 9]


def test_blending_moves_the_rerankers_favourite_up_without_forgetting_fusion():
    shortlist = [Fused(1, 0.9), Fused(2, 0.8), Fused(3, 0.1)]
    rerank_scores = [-5.0, 7.0, 8.0]
    assert [f.chunk_id for f in blend_rerank(shortlist, rerank_scores, blend=1.0)] == [3, 2, 1]
    assert [f.chunk_id for f in blend_rerank(shortlist, rerank_scores, blend=0.0)] == [1, 2, 3]
    # Half and half: 2 is good on both counts, so it wins.
    assert blend_rerank(shortlist, rerank_scores, blend=0.5)[0].chunk_id == 2
    with pytest.raises(ValueError):
        blend_rerank(shortlist, [1.0], blend=0.5)
