"""The packaged cross-encoder: it prefers the passage that answers, truncates long ones, refuses unknown models."""

import pytest

from knowledge.errors import RerankerUnavailable
from knowledge.fusion import Fused
from knowledge.models import Chunk, Collection
from knowledge.rerank import CrossEncoder, default_reranker, read_passages, resolve_reranker_dir
from knowledge.retrieval import RetrievalConfig, search, shortlist_size
from knowledge.sparse import StageHit


def test_the_packaged_cross_encoder_prefers_the_passage_that_answers():
    scores = default_reranker().score(
        "when will my refund show on my card",
        [
            "Our pendant lamps take E27 bulbs up to 60 watts.",
            "Card refunds show on your statement 5 to 10 business days after approval.",
            "Express delivery costs $12 and arrives the next business day.",
        ],
    )
    assert scores.shape == (3,)
    assert int(scores.argmax()) == 1
    assert scores[1] - max(scores[0], scores[2]) > 5


def test_long_passages_are_truncated_not_refused():
    reranker = CrossEncoder(resolve_reranker_dir("ms-marco-MiniLM-L-12-v2-int8"), max_tokens=32)
    scores = reranker.score("refund", ["refund " * 2000, "lamp " * 5])
    assert scores.shape == (2,) and scores[0] > scores[1]


def test_an_unknown_reranker_is_refused_clearly(tmp_path):
    with pytest.raises(RerankerUnavailable, match="neither"):
        resolve_reranker_dir(str(tmp_path))


@pytest.mark.django_db
def test_reranking_keeps_the_audience_rule_and_explains_itself(helpcentre: Collection):
    config = RetrievalConfig(rerank=True, rerank_candidates=10, rerank_confident_candidates=10)
    hits = search("goodwill credit limit in Ledger", collection=helpcentre, audience="public", k=10, config=config)
    assert hits and not any(h.chunk.version.audience == "staff" for h in hits)
    assert sum("rerank" in h.stages for h in hits) == 10
    staff = search("goodwill credit limit in Ledger", collection=helpcentre, audience="staff", k=3, config=config)
    assert staff[0].chunk.version.article.slug == "refund-escalation-procedure"
    assert Chunk.objects.filter(pk=staff[0].chunk.pk, version__audience="staff").exists()


def test_scores_come_back_in_the_order_given_whatever_the_batches():
    reranker = CrossEncoder(resolve_reranker_dir("ms-marco-MiniLM-L-12-v2-int8"), batch_tokens=64)
    passages = [
        "Our pendant lamps take E27 bulbs up to 60 watts, and the shades are sold apart in three colours.",
        "Express delivery costs $12.",
        "Card refunds show on your statement 5 to 10 business days after approval.",
        "Gift cards never expire.",
    ]
    scores = reranker.score("when will my refund show on my card", passages)
    assert scores.shape == (4,) and int(scores.argmax()) == 2
    alone = [float(reranker.score("when will my refund show on my card", [p])[0]) for p in passages]
    assert scores.tolist() == pytest.approx(alone, abs=1.0)


def test_a_passage_is_read_statement_by_statement_and_scored_by_its_best():
    reranker = default_reranker()
    text = (
        "Refunds go back to the way you paid. If your order has shipped, you cannot cancel it. "
        "Refuse the delivery when the carrier arrives."
    )
    [passage, bare] = read_passages(
        reranker, "my order shipped, how do I cancel it", [("Orders › Cancelling", text), ("Contact", "Call us.")]
    )
    assert [r.statement.text for r in passage.readings] == [
        "Refunds go back to the way you paid.",
        "If your order has shipped, you cannot cancel it.",
        "Refuse the delivery when the carrier arrives.",
    ]
    first, second, third = passage.readings
    assert first.after_previous is None and second.after_previous is not None
    assert passage.score == max(r.best for r in passage.readings) == max(second.best, third.best)
    assert second.alone > first.alone
    # Too short to be a statement: the passage is read whole.
    assert bare.readings == () and bare.score == pytest.approx(
        float(reranker.score("my order shipped, how do I cancel it", ["Contact\n\nCall us."])[0]), abs=1.0
    )


def test_only_the_first_paired_passages_are_read_after_their_predecessor():
    text = "If your order has shipped, you cannot cancel it. Refuse the delivery when the carrier arrives."
    first, second = read_passages(default_reranker(), "cancel", [("Orders", text), ("Orders", text)], paired=1)
    assert first.readings[1].after_previous is not None
    assert second.readings[1].after_previous is None
    assert second.readings[1].alone == pytest.approx(first.readings[1].alone, abs=0.05)


def test_a_long_passage_is_read_up_to_the_token_budget():
    reranker = CrossEncoder(resolve_reranker_dir("ms-marco-MiniLM-L-12-v2-int8"), max_tokens=24)
    text = " ".join(f"Sentence number {n} says something about refunds." for n in range(10))
    [passage] = read_passages(reranker, "refunds", [("Refunds", text)])
    assert 1 <= len(passage.readings) < 10
    assert sum(reranker.count_tokens(r.statement.text) for r in passage.readings) <= 24


@pytest.mark.django_db
def test_reranked_hits_carry_the_readings_and_the_rest_none(helpcentre: Collection):
    config = RetrievalConfig(rerank=True, rerank_candidates=3, rerank_confident_candidates=3)
    hits = search("how long do card refunds take", collection=helpcentre, audience="public", k=8, config=config)
    read = [h for h in hits if h.readings is not None]
    assert len(read) == 3 and all(h.rank <= 3 for h in read)
    assert all(h.stages["rerank"].score == max(r.best for r in h.readings) for h in read if h.readings)


def test_fewer_candidates_are_read_when_two_ranking_stages_agree_with_fusion():
    config = RetrievalConfig(rerank_candidates=5, rerank_confident_candidates=3)
    fused = [Fused(7, 0.9), Fused(8, 0.5)]
    agreeing = {"bm25": [StageHit(7, 1, 9.0)], "dense": [StageHit(7, 1, 0.8)], "dense_secondary": [StageHit(8, 1, 0.7)]}
    assert shortlist_size(fused, agreeing, config) == 3
    alone = {"bm25": [StageHit(7, 1, 9.0)], "dense": [StageHit(8, 1, 0.8)], "fuzzy": [StageHit(7, 1, 2.0)]}
    assert shortlist_size(fused, alone, config) == 5  # fuzzy matches spelling, not the question: it does not count
    assert shortlist_size([], agreeing, config) == 0
