"""Retrieval latency at scale: a collection replicated to a target size, and per-stage timings of queries."""

from __future__ import annotations

import time
from dataclasses import replace

from django.db import connection, transaction

from knowledge.embeddings import Embedder
from knowledge.ingest import refresh_term_statistics
from knowledge.models import Collection
from knowledge.rerank import CrossEncoder, read_passages
from knowledge.retrieval import RetrievalConfig, search
from lab import metrics
from supportbot.stopwatch import Stopwatch

# Copy n of article "slug" is "slug~n"; versions and chunks follow their article.
_COPY_ARTICLES = """
INSERT INTO knowledge_article (collection_id, slug, title, product, language, retired_at, created_at, updated_at)
SELECT %(target)s, a.slug || '~' || n, a.title, a.product, a.language, a.retired_at, now(), now()
FROM knowledge_article a CROSS JOIN generate_series(1, %(copies)s) n
WHERE a.collection_id = %(source)s
"""
_COPY_VERSIONS = """
INSERT INTO knowledge_articleversion (article_id, version_label, effective_date, status, audience, summary, body,
    content_hash, chunking, source_path, created_at, updated_at, indexed_at)
SELECT copy.id, v.version_label, v.effective_date, v.status, v.audience, v.summary, v.body,
    v.content_hash, v.chunking, v.source_path, now(), now(), v.indexed_at
FROM knowledge_articleversion v
    JOIN knowledge_article a ON a.id = v.article_id AND a.collection_id = %(source)s
    JOIN knowledge_article copy ON copy.collection_id = %(target)s AND split_part(copy.slug, '~', 1) = a.slug
"""
_COPY_CHUNKS = """
INSERT INTO knowledge_chunk (version_id, collection_id, embedding_space_id, ordinal, heading_path, text, token_count,
    embedding, secondary_embedding)
SELECT copy_v.id, %(target)s, c.embedding_space_id, c.ordinal, c.heading_path, c.text, c.token_count,
    c.embedding, c.secondary_embedding
FROM knowledge_chunk c
    JOIN knowledge_articleversion v ON v.id = c.version_id
    JOIN knowledge_article a ON a.id = v.article_id AND a.collection_id = %(source)s
    JOIN knowledge_article copy ON copy.collection_id = %(target)s AND split_part(copy.slug, '~', 1) = a.slug
    JOIN knowledge_articleversion copy_v ON copy_v.article_id = copy.id AND copy_v.version_label = v.version_label
"""


def replicate_collection(source: Collection, *, copies: int, name: str) -> Collection:
    """A new collection (replacing any of that name) holding `copies` copies of every article of source,
    chunks and vectors included: a corpus of realistic text at any size without embedding it again.
    Duplicated text scales every document frequency alike, so each query matches `copies` times as many
    chunks: the work per query grows as it would on a corpus that size."""
    if copies < 1:
        raise ValueError("copies must be at least 1")
    with transaction.atomic():
        Collection.objects.filter(name=name).delete()
        target = Collection.objects.create(
            name=name,
            embedding_space=source.embedding_space,
            secondary_space=source.secondary_space,
            description=f"{copies} copies of {source.name}, for benchmarks.",
        )
        params = {"source": source.pk, "target": target.pk, "copies": copies}
        with connection.cursor() as cursor:
            for sql in (_COPY_ARTICLES, _COPY_VERSIONS, _COPY_CHUNKS):
                cursor.execute(sql, params)
    refresh_term_statistics(target)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE knowledge_chunk, knowledge_posting")
    target.refresh_from_db()
    return target


def time_retrieval(
    collection: Collection,
    queries: list[str],
    *,
    config: RetrievalConfig,
    embedder: Embedder,
    reranker: CrossEncoder,
    audience: str = "public",
    warm_up: int = 3,
) -> dict[str, dict[str, float]]:
    """p50/p95 per stage of search() without rerank, of the whole call, and of reranking its top
    `config.rerank_candidates` chunks (timed apart, so each figure can be read against its own target)."""
    plain = replace(config, rerank=False)
    laps: dict[str, list[float]] = {}
    for index, query in enumerate(queries):
        watch = Stopwatch()
        started = time.perf_counter()
        hits = search(
            query,
            collection=collection,
            audience=audience,
            k=config.rerank_candidates,
            config=plain,
            embedder=embedder,
            stopwatch=watch,
        )
        total = (time.perf_counter() - started) * 1000
        rerank_started = time.perf_counter()
        read_passages(reranker, query, [(h.heading_path, h.chunk.text) for h in hits])
        rerank_ms = (time.perf_counter() - rerank_started) * 1000
        if index < warm_up:
            continue
        for name, ms in watch.laps_ms.items():
            laps.setdefault(name, []).append(ms)
        laps.setdefault("retrieval_total", []).append(total)
        laps.setdefault(f"rerank_{config.rerank_candidates}", []).append(rerank_ms)
    return {name: metrics.latency_summary(values) for name, values in laps.items()}
