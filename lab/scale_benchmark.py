"""Search at a size no test corpus has: a synthetic collection of N chunks, its build, and dense search on it.

The chunks are real text with real vectors as far as a real corpus goes (an indexed collection, SciFact
by default: 11,269 chunks embedded by both models), and stand-ins beyond it: the text of chunk i is the
sample's chunk i mod S (so lengths and words are real), and its vectors are two random sample vectors
mixed, plus noise, normalised. Stand-in vectors spread like the sample's but are not what a model would
give those words; the figures say so. Articles hold ten chunks each; their audience is public, member or
staff in the shares below, so the audience filter removes as much as it would on a real help centre.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from django.db import connection, transaction
from pgvector.psycopg import register_vector

from knowledge.dense import DenseIndex, dense_search, vector_literal
from knowledge.ingest import refresh_term_statistics
from knowledge.models import Chunk, Collection
from knowledge.scope import FROM_CHUNKS, Scope
from knowledge.vector_indexes import create_vector_indexes, drop_vector_indexes, index_name
from lab import metrics

CHUNKS_PER_ARTICLE = 10
# Share of articles per audience: most of a help centre is public.
AUDIENCE_SHARES = (("public", 0.6), ("member", 0.25), ("staff", 0.15))
# How far a stand-in vector strays from its two parents (per dimension, before normalising).
STAND_IN_NOISE = 0.02
BUILD_MEMORY = "3GB"  # maintenance_work_mem for the graph builds: a 1 M-chunk graph must fit, or builds crawl
SHARED_GRAPH = "bench_shared_embedding_hnsw"
# ann-benchmarks' tolerance: a hit at most this much farther than the k-th true neighbour counts as found.
TIE_DISTANCE = 1e-3


@dataclass(frozen=True)
class Sample:
    texts: list[tuple[str, str, int]]  # heading path, text, token count
    vectors: dict[DenseIndex, np.ndarray]


@dataclass(frozen=True)
class BuildFigures:
    chunks: int
    real_chunks: int
    load_seconds: float
    index_seconds: dict[str, float]
    sizes_mb: dict[str, float]


def read_sample(source: Collection, columns: tuple[DenseIndex, ...]) -> Sample:
    rows = list(
        Chunk.objects.filter(collection=source)
        .order_by("pk")
        .values_list("heading_path", "text", "token_count", *columns)
    )
    if not rows:
        raise ValueError(f"collection {source.name!r} has no chunks to sample")
    missing = [column for i, column in enumerate(columns) if any(row[3 + i] is None for row in rows)]
    if missing:
        raise ValueError(f"collection {source.name!r} has chunks without {', '.join(missing)}")
    return Sample(
        [(path, text, tokens) for path, text, tokens, *_ in rows],
        {
            column: np.stack([np.asarray(row[3 + i], dtype=np.float32) for row in rows])
            for i, column in enumerate(columns)
        },
    )


def stand_in_vectors(sample: np.ndarray, start: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """Vectors for chunks start … start+count−1: the sample's own for i < len(sample), then stand-ins."""
    size = len(sample)
    out = np.empty((count, sample.shape[1]), dtype=np.float32)
    real = max(0, min(count, size - start))
    out[:real] = sample[start : start + real]
    rest = count - real
    if rest:
        a, b = rng.integers(0, size, rest), rng.integers(0, size, rest)
        mixed = sample[a] + 0.5 * sample[b] + rng.normal(0, STAND_IN_NOISE, (rest, sample.shape[1]))
        out[real:] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
    return out


def _audiences(articles: int, rng: np.random.Generator) -> list[str]:
    names = [name for name, _ in AUDIENCE_SHARES]
    shares = [share for _, share in AUDIENCE_SHARES]
    return [str(name) for name in rng.choice(names, size=articles, p=shares)]


def build(
    name: str,
    chunks: int,
    *,
    source: Collection,
    sample: Sample,
    seed: int = 0,
    postings: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Collection, BuildFigures]:
    """A collection of `chunks` chunks (replacing any of that name): articles and versions in SQL, chunks by
    binary COPY in batches, then the collection's graphs built once over all of them. Without `postings`
    the chunk triggers are off for the load (a superuser's session_replication_role): no BM25 postings,
    so only dense search can be measured on it, and the load takes less time."""
    rng = np.random.default_rng(seed)
    columns = tuple(sample.vectors)
    articles = -(-chunks // CHUNKS_PER_ARTICLE)
    started = time.perf_counter()
    with transaction.atomic():
        Collection.objects.filter(name=name).delete()
        target = Collection.objects.create(
            name=name,
            embedding_space=source.embedding_space,
            secondary_space=source.secondary_space if "secondary_embedding" in columns else None,
            description=f"{chunks} synthetic chunks for `bench scale` (sample: {source.name}).",
        )
        # Built once after the load: inserting a million chunks into a live graph one by one is far slower.
        drop_vector_indexes(target.pk)
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO knowledge_article (collection_id, slug, title, product, language, created_at, updated_at) "
                "SELECT %s, 'a' || n, 'Article ' || n, '', 'en', now(), now() FROM generate_series(1, %s) n",
                [target.pk, articles],
            )
            cursor.execute(
                "INSERT INTO knowledge_articleversion (article_id, version_label, effective_date, status, audience, "
                "summary, body, content_hash, chunking, source_path, created_at, updated_at, indexed_at) "
                "SELECT a.id, '1', DATE '2026-01-01', 'published', (%s::text[])[row_number() OVER (ORDER BY a.id)], "
                "'', '', md5(a.slug), 'synthetic', '', now(), now(), now() "
                "FROM knowledge_article a WHERE a.collection_id = %s",
                [_audiences(articles, rng), target.pk],
            )
            cursor.execute(
                "SELECT v.id FROM knowledge_articleversion v JOIN knowledge_article a ON a.id = v.article_id "
                "WHERE a.collection_id = %s ORDER BY a.id",
                [target.pk],
            )
            versions = [row[0] for row in cursor.fetchall()]
    _copy_chunks(target, versions, chunks, sample, rng, progress, postings=postings)
    load_seconds = time.perf_counter() - started
    index_seconds = build_graphs(target.pk, columns)
    create_vector_indexes(target.pk)  # the graph of a column left empty costs nothing, and ingestion expects it
    refresh_term_statistics(target)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE knowledge_chunk, knowledge_articleversion, knowledge_article, knowledge_posting")
    target.refresh_from_db()
    return target, BuildFigures(
        chunks, min(chunks, len(sample.texts)), load_seconds, index_seconds, sizes_mb(target.pk, columns)
    )


def _copy_chunks(
    target: Collection,
    versions: list[int],
    chunks: int,
    sample: Sample,
    rng: np.random.Generator,
    progress: Callable[[int, int], None] | None,
    *,
    postings: bool,
    batch: int = 20_000,
) -> None:
    columns = tuple(sample.vectors)
    fields = ["version_id", "collection_id", "embedding_space_id", "ordinal", "heading_path", "text", "token_count"]
    raw = connection.connection
    register_vector(raw)
    for start in range(0, chunks, batch):
        count = min(batch, chunks - start)
        vectors = {column: stand_in_vectors(sample.vectors[column], start, count, rng) for column in columns}
        copy_sql = f"COPY knowledge_chunk ({', '.join(fields + list(columns))}) FROM STDIN WITH (FORMAT BINARY)"
        with transaction.atomic(), raw.cursor() as cursor:
            if not postings:
                cursor.execute("SET LOCAL session_replication_role = replica")
            with cursor.copy(copy_sql) as copy:
                copy.set_types(["int8", "int8", "int8", "int4", "varchar", "text", "int4"] + ["vector"] * len(columns))
                for i in range(start, start + count):
                    path, text, tokens = sample.texts[i % len(sample.texts)]
                    copy.write_row(
                        [
                            versions[i // CHUNKS_PER_ARTICLE],
                            target.pk,
                            target.embedding_space_id,
                            i % CHUNKS_PER_ARTICLE,
                            path,
                            text,
                            tokens,
                            *(vectors[column][i - start] for column in columns),
                        ]
                    )
        if progress:
            progress(start + count, chunks)


def build_graphs(collection_id: int, columns: tuple[DenseIndex, ...]) -> dict[str, float]:
    """Seconds to build each of the collection's graphs, with room enough in memory to build it there."""
    seconds: dict[str, float] = {}
    with connection.cursor() as cursor:
        cursor.execute(f"SET maintenance_work_mem = '{BUILD_MEMORY}'")
        for column in columns:
            started = time.perf_counter()
            create_vector_indexes(collection_id, columns=(column,))
            seconds[column] = round(time.perf_counter() - started, 1)
        cursor.execute("RESET maintenance_work_mem")
    return seconds


def sizes_mb(collection_id: int, columns: tuple[DenseIndex, ...]) -> dict[str, float]:
    """Disk taken by the collection: its graphs, and its share of the shared tables and their indexes."""
    mb = 1024 * 1024
    with connection.cursor() as cursor:
        sizes = {}
        for column in columns:
            cursor.execute("SELECT pg_relation_size(%s::regclass)", [index_name(collection_id, column)])
            sizes[f"{column}_graph"] = round(cursor.fetchone()[0] / mb, 1)
        cursor.execute(
            "SELECT (SELECT count(*) FROM knowledge_chunk WHERE collection_id = %s)::float "
            "/ greatest(1, (SELECT count(*) FROM knowledge_chunk)), "
            "(SELECT count(*) FROM knowledge_posting WHERE collection_id = %s)::float "
            "/ greatest(1, (SELECT count(*) FROM knowledge_posting))",
            [collection_id, collection_id],
        )
        chunk_share, posting_share = cursor.fetchone()
        cursor.execute(
            "SELECT pg_table_size('knowledge_chunk'), "
            "pg_relation_size('chunk_search_vector_gin') + pg_relation_size('chunk_text_trgm'), "
            "pg_total_relation_size('knowledge_posting')"
        )
        table, text_indexes, postings = cursor.fetchone()
    sizes["chunks_table"] = round(chunk_share * table / mb, 1)
    sizes["text_indexes"] = round(chunk_share * text_indexes / mb, 1)
    sizes["bm25_postings"] = round(posting_share * postings / mb, 1)
    return sizes


@contextmanager
def shared_graph(collection_ids: tuple[int, ...]) -> Iterator[float]:
    """The layout before per-collection graphs, for comparison: these collections' first-model graphs
    replaced by one graph over every chunk of the table; put back afterwards. Yields the build seconds."""
    for collection_id in collection_ids:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {index_name(collection_id, 'embedding')}")
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(f"SET maintenance_work_mem = '{BUILD_MEMORY}'")
        cursor.execute(f"CREATE INDEX {SHARED_GRAPH} ON knowledge_chunk USING hnsw (embedding vector_cosine_ops)")
        cursor.execute("ANALYZE knowledge_chunk")
    try:
        yield time.perf_counter() - started
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {SHARED_GRAPH}")
        for collection_id in collection_ids:
            create_vector_indexes(collection_id, columns=("embedding",))
        with connection.cursor() as cursor:
            cursor.execute("RESET maintenance_work_mem")


def exact_neighbours(
    scope: Scope, vector: np.ndarray, k: int, column: DenseIndex = "embedding"
) -> list[tuple[int, float]]:
    """The true k nearest chunks in scope with their cosine distances: the distance written so that no
    graph can serve it."""
    where, params = scope.where()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT c.id, c.{column} <=> %(vector)s::vector FROM {FROM_CHUNKS} WHERE {where} "
            f"ORDER BY (c.{column} <=> %(vector)s::vector) + 0, c.id LIMIT %(k)s",
            {**params, "vector": vector_literal(vector), "k": k},
        )
        return [(chunk_id, float(distance)) for chunk_id, distance in cursor.fetchall()]


def time_dense(
    collection: Collection,
    queries: np.ndarray,
    *,
    audience: str,
    ef_search: int,
    k: int = 10,
    exact: dict[int, list[tuple[int, float]]] | None = None,
    warm_up: int = 3,
) -> dict[str, float]:
    """p50/p95 of dense search for each query vector and, against `exact` when given, recall@k two ways:
    the share of the true k chunks found, and the share of hits no farther than the k-th true one (plus
    TIE_DISTANCE), as ann-benchmarks counts it: among near-duplicates any of the tied chunks is as near."""
    scope = Scope(collection.pk, audience)
    latencies, recalls, within = [], [], []
    for index, vector in enumerate(queries):
        started = time.perf_counter()
        hits = dense_search(scope, vector, k=k, ef_search=ef_search)
        elapsed = (time.perf_counter() - started) * 1000
        if index < warm_up:
            continue
        latencies.append(elapsed)
        if exact is not None and exact[index]:
            truth = exact[index]
            recalls.append(len({c for c, _ in truth} & {h.chunk_id for h in hits}) / len(truth))
            farthest = truth[-1][1] + TIE_DISTANCE
            within.append(sum(1.0 - h.score <= farthest for h in hits) / len(truth))
    figures = metrics.latency_summary(latencies)
    if recalls:
        figures["recall@10"] = round(float(np.mean(recalls)), 4)
        figures["recall@10_ties"] = round(float(np.mean(within)), 4)
    return figures
