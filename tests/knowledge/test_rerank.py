import pytest

from knowledge.models import Chunk, Collection
from knowledge.rerank import CrossEncoder, RerankerUnavailable, default_reranker, resolve_reranker_dir
from knowledge.retrieval import RetrievalConfig, search


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
    config = RetrievalConfig(rerank=True, rerank_candidates=10)
    hits = search("goodwill credit limit in Ledger", collection=helpcentre, audience="public", k=10, config=config)
    assert hits and not any(h.chunk.version.audience == "staff" for h in hits)
    assert sum("rerank" in h.stages for h in hits) == 10
    staff = search("goodwill credit limit in Ledger", collection=helpcentre, audience="staff", k=3, config=config)
    assert staff[0].chunk.version.article.slug == "refund-escalation-procedure"
    assert Chunk.objects.filter(pk=staff[0].chunk.pk, version__audience="staff").exists()
