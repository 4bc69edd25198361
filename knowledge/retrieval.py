"""The retrieval service: run the stages, fuse their rankings, and return explainable hits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from types import MappingProxyType
from typing import cast

from django.conf import settings
from django.db import connection

from knowledge.chunking import HEADING_SEPARATOR
from knowledge.dense import dense_search
from knowledge.embeddings import Embedder, default_embedder, embed_query, secondary_embedder
from knowledge.errors import QueryError
from knowledge.fusion import Fused, FusionMethod, blend_rerank, fuse
from knowledge.fuzzy import Typos, corrected, expand_with_corrections, find_typos, fuzzy_search
from knowledge.models import Chunk, Collection, GlossaryEntry
from knowledge.query import expand_identifiers, expand_with_glossary, gloss_hinglish, normalise_query
from knowledge.rerank import CrossEncoder, Reading, default_reranker, read_passages
from knowledge.scope import FROM_CHUNKS, Scope, VersionPolicy
from knowledge.sparse import BM25Parameters, CorpusStatistics, StageHit, bm25_search
from knowledge.stages import RANKING_STAGES, SEARCH_STAGES, Stage
from supportbot.stopwatch import Stopwatch


@dataclass(frozen=True)
class RetrievalConfig:
    stages: tuple[str, ...] = SEARCH_STAGES
    fusion: FusionMethod = "rrf"
    weights: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    rrf_k: int = 60
    depth: int = 20
    bm25: BM25Parameters = field(default_factory=BM25Parameters)
    ef_search: int = 100
    rerank: bool = False
    rerank_candidates: int = 5
    rerank_confident_candidates: int = 3  # read when fusion is confident: the reranker rarely moves its order
    rerank_blend: float = 0.5
    rerank_paired: int = 5  # leading candidates whose statements are also read after their predecessor

    def __post_init__(self) -> None:
        unknown = set(self.stages) - set(SEARCH_STAGES)
        if unknown or not self.stages:
            raise ValueError(f"stages must be a non-empty subset of {SEARCH_STAGES}, got {self.stages}")


@dataclass(frozen=True)
class StageResult:
    rank: int
    score: float


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    rank: int
    score: float
    stages: Mapping[str, StageResult]
    # The statements the reranker read, with their scores (None: not reranked): the reader's evidence,
    # scored once per turn.
    readings: tuple[Reading, ...] | None = None

    @property
    def heading_path(self) -> str:
        return self.chunk.heading_path


def default_config(collection: Collection | None = None) -> RetrievalConfig:
    """The settings' retrieval, with the fusion fitted to the collection when it has one: its weights (over
    the stages enabled) and its rerank blend."""
    fitted = collection.fusion if collection is not None else {}
    weights = fitted.get("weights") or settings.RETRIEVAL_WEIGHTS
    return RetrievalConfig(
        stages=tuple(settings.RETRIEVAL_STAGES),
        fusion="weighted" if fitted.get("weights") else cast(FusionMethod, settings.RETRIEVAL_FUSION),
        weights=MappingProxyType(dict(weights)),
        rrf_k=settings.RETRIEVAL_RRF_K,
        depth=settings.RETRIEVAL_DEPTH,
        bm25=BM25Parameters(k1=settings.BM25_K1, b=settings.BM25_B),
        ef_search=settings.HNSW_EF_SEARCH,
        rerank=settings.RERANK_ENABLED,
        rerank_candidates=settings.RERANK_CANDIDATES,
        rerank_confident_candidates=settings.RERANK_CONFIDENT_CANDIDATES,
        rerank_blend=float(fitted.get("rerank_blend", settings.RERANK_BLEND)),
        rerank_paired=settings.RERANK_PAIRED_CANDIDATES,
    )


def run_stages(
    scope: Scope,
    query: str,
    *,
    collection: Collection,
    embedder: Embedder,
    config: RetrievalConfig,
    k: int,
    secondary: Embedder | None = None,
    stopwatch: Stopwatch | None = None,
    typos: Typos | None = None,
) -> dict[str, list[StageHit]]:
    """Each enabled stage's own ranking of the chunks in scope. Misspelt words are corrected against the
    collection's vocabulary first; the corrections are added to what BM25 and dense retrieval see.
    Each step's time is added to the stopwatch when one is given."""
    watch = stopwatch or Stopwatch()
    stats = CorpusStatistics(collection.chunk_count, collection.average_chunk_length)
    if typos is None:
        with watch.lap("typos"):
            typos = find_typos(collection.pk, query)
    expanded = expand_with_corrections(query, typos)
    rankings: dict[str, list[StageHit]] = {}
    if Stage.BM25 in config.stages:
        with watch.lap(Stage.BM25):
            rankings[Stage.BM25] = bm25_search(scope, expanded, stats=stats, k=k, params=config.bm25)
    if Stage.DENSE in config.stages:
        with watch.lap("embed_query"):
            vector = embed_query(collection, expanded, embedder)
        with watch.lap(Stage.DENSE):
            rankings[Stage.DENSE] = dense_search(scope, vector, k=k, ef_search=config.ef_search)
    if Stage.DENSE_SECONDARY in config.stages:
        second = secondary or secondary_embedder()
        if second is None:
            raise QueryError("The dense_secondary stage needs EMBEDDING_SECONDARY_MODEL.")
        with watch.lap("embed_query_secondary"):
            vector = embed_query(collection, expanded, second, secondary=True)
        with watch.lap("dense_secondary"):
            rankings[Stage.DENSE_SECONDARY] = dense_search(
                scope, vector, k=k, ef_search=config.ef_search, index="secondary_embedding"
            )
    if Stage.FUZZY in config.stages:
        with watch.lap(Stage.FUZZY):
            rankings[Stage.FUZZY] = fuzzy_search(scope, query, stats=stats, k=k, params=config.bm25, typos=typos)
    return rankings


@dataclass(frozen=True)
class Reranked:
    fused: list[Fused]
    ranking: list[StageHit]  # the reranker's own ranking of the shortlist (for explanations)
    readings: dict[int, tuple[Reading, ...]]


def shortlist_size(fused: list[Fused], rankings: Mapping[str, list[StageHit]], config: RetrievalConfig) -> int:
    """How many fused candidates the reranker reads: fewer when at least two of the ranking stages put the
    fused first hit first (on the calibration sets the reranker then ranked as well with 3 as with 5)."""
    if not fused:
        return 0
    agreeing = sum(1 for s in RANKING_STAGES if rankings.get(s) and rankings[s][0].chunk_id == fused[0].chunk_id)
    return config.rerank_confident_candidates if agreeing >= 2 else config.rerank_candidates


def rerank(
    query: str,
    fused: list[Fused],
    rankings: Mapping[str, list[StageHit]],
    config: RetrievalConfig,
    *,
    typos: Typos,
    reranker: CrossEncoder,
) -> Reranked:
    """Rerank the top candidates of a fused list (as many as `shortlist_size` says) by their best statement
    as the cross-encoder reads it; the rest keep their order below. Misspelt words are put right in the
    candidates' own spelling first: the cross-encoder reads words, not stems."""
    candidates = shortlist_size(fused, rankings, config)
    shortlist = fused[:candidates]
    rows = {
        chunk_id: (path, text)
        for chunk_id, path, text in Chunk.objects.filter(pk__in=[f.chunk_id for f in shortlist]).values_list(
            "id", "heading_path", "text"
        )
    }
    passages = [rows[f.chunk_id] for f in shortlist]
    read = read_passages(
        reranker,
        corrected(query, typos, [text for _, text in passages]),
        passages,
        paired=config.rerank_paired,
    )
    scores = [r.score for r in read]
    own = sorted(zip(shortlist, scores, strict=True), key=lambda pair: -pair[1])
    return Reranked(
        blend_rerank(shortlist, scores, blend=config.rerank_blend) + fused[candidates:],
        [StageHit(f.chunk_id, rank, score) for rank, (f, score) in enumerate(own, start=1)],
        {f.chunk_id: r.readings for f, r in zip(shortlist, read, strict=True)},
    )


def _newest_first_within_article(hits: list[Hit]) -> list[Hit]:
    """prefer_latest: each article keeps the place of its best hit, and its versions follow newest first."""
    order: dict[int, int] = {}
    for hit in hits:
        order.setdefault(hit.chunk.version.article_id, len(order))
    ranked = sorted(
        hits,
        key=lambda h: (order[h.chunk.version.article_id], -h.chunk.version.effective_date.toordinal(), h.rank),
    )
    return [Hit(h.chunk, rank, h.score, h.stages, h.readings) for rank, h in enumerate(ranked, start=1)]


def prepare_query(query: str, collection: Collection) -> str:
    """Normalised, with the collection's glossary meanings and both spellings of identifiers added, and
    Hinglish words put into English."""
    glossary = dict(GlossaryEntry.objects.filter(collection=collection).values_list("phrase", "meaning"))
    return expand_identifiers(gloss_hinglish(expand_with_glossary(normalise_query(query), glossary)))


def search(
    query: str,
    *,
    collection: Collection,
    audience: str,
    as_of: date | None = None,
    version_policy: VersionPolicy = "current",
    k: int = 10,
    config: RetrievalConfig | None = None,
    embedder: Embedder | None = None,
    secondary: Embedder | None = None,
    stopwatch: Stopwatch | None = None,
    typos: Typos | None = None,
    reranker: CrossEncoder | None = None,
    prepared: bool = False,
) -> list[Hit]:
    """The k best chunks for the query that this audience may see, under the version policy. `prepared`:
    the query is prepare_query's already (a turn prepares it once, to find its typos and to search).

    Every hit carries each stage's rank and score, so any result can be explained.
    """
    if not 1 <= k <= 100:
        raise QueryError(f"k must be between 1 and 100, got {k}.")
    config = config or default_config(collection)
    watch = stopwatch or Stopwatch()
    if not prepared:
        with watch.lap("normalise"):
            query = prepare_query(query, collection)
    if as_of is not None:
        version_policy = "as_of"
    scope = Scope(collection.pk, audience, version_policy, as_of)
    if typos is None:
        with watch.lap("typos"):
            typos = find_typos(collection.pk, query)
    rankings = run_stages(
        scope,
        query,
        collection=collection,
        embedder=embedder or default_embedder(),
        config=config,
        k=max(k, config.depth),
        secondary=secondary,
        stopwatch=watch,
        typos=typos,
    )
    with watch.lap("fuse"):
        fused = fuse(rankings, method=config.fusion, depth=config.depth, weights=config.weights, rrf_k=config.rrf_k)
    readings: dict[int, tuple[Reading, ...]] = {}
    if config.rerank:
        with watch.lap("rerank"):
            reranked = rerank(query, fused, rankings, config, typos=typos, reranker=reranker or default_reranker())
        fused, rankings[Stage.RERANK], readings = reranked.fused, reranked.ranking, reranked.readings
    fused = fused[:k]
    with watch.lap("load"):
        # Not the vectors: turning two 384-number vectors into Python costs ~1 ms a chunk, and no caller reads them.
        chunks = (
            Chunk.objects.select_related("version__article")
            .defer("embedding", "secondary_embedding", "search_vector")
            .in_bulk([f.chunk_id for f in fused])
        )
    per_stage = {
        name: {hit.chunk_id: StageResult(hit.rank, hit.score) for hit in hits} for name, hits in rankings.items()
    }
    hits = [
        Hit(
            chunks[f.chunk_id],
            rank,
            f.score,
            {name: found[f.chunk_id] for name, found in per_stage.items() if f.chunk_id in found},
            readings.get(f.chunk_id),
        )
        for rank, f in enumerate(fused, start=1)
    ]
    return _newest_first_within_article(hits) if version_policy == "prefer_latest" else hits


def visible_chunks(scope: Scope, chunk_ids: list[int]) -> set[int]:
    """Which of these chunks the scope may see now: a citation to any other is refused."""
    if not chunk_ids:
        return set()
    where, params = scope.where()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT c.id FROM {FROM_CHUNKS} WHERE c.id = ANY(%(chunk_ids)s) AND {where}",
            {**params, "chunk_ids": chunk_ids},
        )
        return {row[0] for row in cursor.fetchall()}


def chunks_named(scope: Scope, names: Sequence[str], slugs: Sequence[str], *, limit: int) -> list[Chunk]:
    """The chunks in scope of the sections whose heading, or the articles whose title, is one of `names`
    (compared case-folded), and of the articles `slugs` name: where a pointer in a passage leads ("see
    Refunds", a link to /help/refunds). In article order, each article's sections in reading order, at most
    `limit`; the scope's audience and version rules apply as in every search."""
    if not names and not slugs:
        return []
    where, params = scope.where()
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT c.id FROM {FROM_CHUNKS} WHERE {where} AND (
                    lower(a.title) = ANY(%(names)s) OR a.slug = ANY(%(slugs)s)
                    OR lower(regexp_replace(c.heading_path, '^.*' || %(separator)s, '')) = ANY(%(names)s))
                ORDER BY a.slug, c.ordinal LIMIT %(limit)s""",
            {
                **params,
                "names": [n.casefold() for n in names],
                "slugs": list(slugs),
                "separator": HEADING_SEPARATOR,
                "limit": limit,
            },
        )
        ids = [row[0] for row in cursor.fetchall()]
    chunks = Chunk.objects.select_related("version__article").in_bulk(ids)
    return [chunks[i] for i in ids]
