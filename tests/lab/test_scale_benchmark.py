"""`bench scale`: a synthetic collection built from a real one, searched, and measured against exact scans."""

import json
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from knowledge.models import Chunk, Collection
from knowledge.vector_indexes import VECTOR_COLUMNS, index_name
from lab.scale_benchmark import CHUNKS_PER_ARTICLE, stand_in_vectors
from tests.knowledge.test_vector_indexes import existing_indexes

pytestmark = pytest.mark.django_db


def test_stand_ins_follow_the_real_vectors_and_are_unit_length():
    rng = np.random.default_rng(0)
    sample = rng.normal(size=(50, 8)).astype(np.float32)
    sample /= np.linalg.norm(sample, axis=1, keepdims=True)
    vectors = stand_in_vectors(sample, 40, 30, rng)
    assert np.array_equal(vectors[:10], sample[40:])  # the real ones first, as far as they go
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # A stand-in is near the real vectors it was mixed from, not noise: its best match is close.
    assert (vectors[10:] @ sample.T).max(axis=1).min() > 0.5


@pytest.mark.skipif(not (settings.SHARED_DATA_DIR / "scifact").exists(), reason="needs ../shared/data/scifact")
def test_bench_scale_builds_searches_and_compares_with_exact_scans(helpcentre: Collection, tmp_path: Path):
    report = tmp_path / "scale.json"
    out = StringIO()
    call_command(
        "bench", "scale", "--source", "helpcentre", "--chunks", "1000", "--small", "100", "--limit", "6",
        "--ef-search", "40", "--compare-shared", "--json", str(report), stdout=out,
    )  # fmt: skip
    figures = json.loads(report.read_text())
    big = Collection.objects.get(name="scale-1000")
    assert big.chunk_count == figures["chunks"] == 1000
    chunks = Chunk.objects.filter(collection=big)
    assert chunks.values("version").distinct().count() == 1000 // CHUNKS_PER_ARTICLE
    assert set(chunks.values_list("version__audience", flat=True)) == {"public", "member", "staff"}
    assert figures["built"]["scale-1000"]["real_chunks"] == helpcentre.chunk_count
    for key in ("large public ef_search=40", "large staff ef_search=40", "small public ef_search=40"):
        assert 0.5 < figures[key]["recall@10"] <= figures[key]["recall@10_ties"] <= 1.0 and figures[key]["p50_ms"] > 0
    assert figures["small public ef_search=40, shared graph"]["p50_ms"] > 0
    assert figures["search_without_rerank"]["p50_ms"] > 0
    # The shared graph of the comparison is gone and each collection has its own graphs back.
    names = existing_indexes()
    assert "bench_shared_embedding_hnsw" not in names
    assert {index_name(big.pk, column) for column in VECTOR_COLUMNS} <= names


def test_bench_scale_refuses_sizes_it_cannot_build(tmp_path: Path):
    (tmp_path / "corpus.jsonl").write_text("")
    with pytest.raises(CommandError, match="--chunks"):
        call_command("bench", "scale", "--dataset", str(tmp_path), "--chunks", "10")
    with pytest.raises(CommandError, match="--small"):
        call_command("bench", "scale", "--dataset", str(tmp_path), "--chunks", "1000", "--small", "5000")
