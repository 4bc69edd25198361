"""The index fingerprint: vectors and queries from another embedding model are refused, loudly."""

import shutil
from pathlib import Path

import numpy as np
import pytest
from django.db import IntegrityError, transaction

from knowledge.embeddings import Embedder, embed_query
from knowledge.errors import EmbeddingSpaceMismatch
from knowledge.models import Chunk, EmbeddingSpace
from tests.knowledge.helpers import sync_folder

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="session")
def other_model_dir(tmp_path_factory, embedder) -> Path:
    """A genuinely different sentence-transformers model: one randomly initialised BERT layer, 384 dims,
    with the real model's tokenizer. Built here because no second 384-d model ships offline."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Pooling, Transformer
    from transformers import BertConfig, BertModel

    base = tmp_path_factory.mktemp("tiny-bert")
    config = BertConfig(hidden_size=384, num_hidden_layers=1, num_attention_heads=4, intermediate_size=128)
    BertModel(config).save_pretrained(base)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(embedder.model_dir / name, base / name)
    target = tmp_path_factory.mktemp("tiny-st")
    transformer = Transformer(str(base), max_seq_length=128)
    SentenceTransformer(modules=[transformer, Pooling(384, "mean")]).save(str(target))
    return target


def test_the_other_model_has_another_fingerprint(other_model_dir, embedder):
    other = Embedder.load(str(other_model_dir))
    assert other.fingerprint.dimension == embedder.fingerprint.dimension == 384
    assert other.fingerprint.weights_sha256 != embedder.fingerprint.weights_sha256
    assert other.encode(["refund"]).shape == (1, 384)


def test_ingesting_with_another_model_is_refused(helpcentre, sample_dir, other_model_dir):
    other = Embedder.load(str(other_model_dir))
    before = Chunk.objects.count()
    with pytest.raises(EmbeddingSpaceMismatch, match="Collection 'helpcentre' is indexed with sentence-transformers"):
        sync_folder(sample_dir, other)
    assert other.calls == 0
    assert Chunk.objects.count() == before


def test_a_query_with_another_model_is_refused(helpcentre, other_model_dir, embedder):
    other = Embedder.load(str(other_model_dir))
    with pytest.raises(EmbeddingSpaceMismatch, match="Load the collection's model"):
        embed_query(helpcentre, "when does my refund arrive", other)
    assert embed_query(helpcentre, "when does my refund arrive", embedder).shape == (384,)


def test_the_database_refuses_a_vector_from_another_space(helpcentre, other_model_dir):
    fp = Embedder.load(str(other_model_dir)).fingerprint
    other_space = EmbeddingSpace.objects.create(
        model_name=fp.model_name, dimension=fp.dimension, weights_sha256=fp.weights_sha256
    )
    version = Chunk.objects.first().version
    refused = 'refused: collection "helpcentre" is indexed with embedding space'
    with pytest.raises(IntegrityError, match=refused), transaction.atomic():
        Chunk.objects.create(
            version=version,
            collection=helpcentre,
            embedding_space=other_space,
            ordinal=999,
            heading_path="x",
            text="x",
            token_count=1,
            embedding=np.ones(384, dtype=np.float32),
        )
    chunk = Chunk.objects.first()
    chunk.embedding_space = other_space
    with pytest.raises(IntegrityError), transaction.atomic():
        chunk.save()
