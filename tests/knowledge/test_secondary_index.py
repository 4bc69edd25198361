"""The second dense index: a packaged asymmetric model (bge-small, int8 ONNX) fused with the first."""

import numpy as np
import pytest

from knowledge.dense import dense_search
from knowledge.embeddings import BGE_QUERY_PREFIX, Embedder, embed_query, secondary_embedder
from knowledge.errors import EmbeddingSpaceMismatch
from knowledge.ingest import embed_secondary, get_or_create_collection
from knowledge.models import Chunk, Collection
from knowledge.retrieval import RetrievalConfig, search
from knowledge.scope import Scope
from tests.knowledge.helpers import sync_folder

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="session")
def bge() -> Embedder:
    embedder = secondary_embedder()
    assert embedder is not None and embedder.model_name.startswith("BAAI/bge-small")
    return embedder


@pytest.fixture
def indexed(sample_dir, embedder, bge) -> Collection:
    sync_folder(sample_dir, embedder, secondary=bge)
    return Collection.objects.select_related("embedding_space", "secondary_space").get(name="helpcentre")


def test_the_packaged_bge_model_embeds_queries_with_its_instruction(bge: Embedder):
    assert bge.query_prefix == BGE_QUERY_PREFIX
    passages = bge.encode(["Refunds reach your card in 5 to 10 business days.", "Our shop opens at nine."])
    assert passages.shape == (2, 384)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    query = bge.encode_query("how long does a refund take")
    assert np.allclose(query, bge.encode([BGE_QUERY_PREFIX + "how long does a refund take"])[0], atol=1e-6)
    assert not np.allclose(query, bge.encode(["how long does a refund take"])[0], atol=1e-3)
    assert float(passages[0] @ query) > float(passages[1] @ query)


def test_padding_and_batch_order_do_not_change_a_vector(bge: Embedder):
    texts = ["short", "a much longer passage about refunds, returns and the card they go back to " * 3, "mid length"]
    together = bge.encode(texts)
    alone = np.stack([bge.encode([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-6)


def test_ingestion_fills_the_secondary_index_once(sample_dir, embedder, bge, indexed: Collection):
    assert indexed.secondary_space.model_name == bge.fingerprint.model_name
    chunks = Chunk.objects.filter(version__article__collection=indexed)
    assert not chunks.filter(secondary_embedding__isnull=True).exists()
    calls = bge.calls
    again = sync_folder(sample_dir, embedder, secondary=bge)
    assert again.secondary_embedded == 0 and bge.calls == calls

    # An interrupted run leaves chunks without their secondary vector; the next sync embeds exactly those.
    missing = list(chunks.values_list("id", flat=True)[:5])
    Chunk.objects.filter(pk__in=missing).update(secondary_embedding=None)
    assert sync_folder(sample_dir, embedder, secondary=bge).secondary_embedded == 5


def test_a_secondary_index_refuses_another_model(embedder, indexed: Collection):
    # The primary model posing as the secondary one: a different fingerprint from the index's.
    with pytest.raises(EmbeddingSpaceMismatch, match="secondary dense index"):
        get_or_create_collection("helpcentre", embedder, secondary=embedder)
    with pytest.raises(EmbeddingSpaceMismatch, match="secondary dense index"):
        embed_secondary(indexed, embedder)
    with pytest.raises(EmbeddingSpaceMismatch, match="secondary dense index"):
        embed_query(indexed, "refund", embedder, secondary=True)


def test_a_collection_without_a_secondary_index_says_how_to_build_one(sample_dir, embedder, bge):
    sync_folder(sample_dir, embedder, secondary=None, collection="plain")
    plain = Collection.objects.get(name="plain")
    config = RetrievalConfig(stages=("dense", "dense_secondary"))
    with pytest.raises(EmbeddingSpaceMismatch, match="EMBEDDING_SECONDARY_MODEL"):
        search("refund", collection=plain, audience="public", config=config, secondary=bge)


def test_the_secondary_stage_finds_the_answer_and_keeps_to_the_audience(indexed: Collection, bge):
    config = RetrievalConfig(stages=("bm25", "dense", "dense_secondary"), fusion="weighted")
    hits = search(
        "how long until my money back shows on my card",
        collection=indexed,
        audience="public",
        config=config,
        secondary=bge,
    )
    assert "dense_secondary" in hits[0].stages
    assert any(h.chunk.version.article.slug == "refunds" for h in hits[:3])

    secret = Chunk.objects.filter(version__audience="staff", text__contains="Ledger").first()
    vector = embed_query(indexed, secret.text[:300], bge, secondary=True)
    staff = dense_search(Scope(indexed.pk, "staff"), vector, k=5, index="secondary_embedding")
    assert staff[0].chunk_id == secret.pk
    public = dense_search(Scope(indexed.pk, "public"), vector, k=100, index="secondary_embedding")
    staff_chunks = set(Chunk.objects.filter(version__audience="staff").values_list("id", flat=True))
    assert public and not {h.chunk_id for h in public} & staff_chunks
