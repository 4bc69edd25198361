"""Sparse retrieval: Okapi BM25 (Robertson–Zaragoza) computed in PostgreSQL.

Terms are the English-stemmed lexemes of each chunk's generated tsvector, kept with their frequencies in
an inverted index (Posting) by a database trigger. Document frequencies live in TermStatistic and the
collection's chunk count and mean chunk length on Collection, all refreshed by ingestion. Unlike ts_rank,
this has IDF and term saturation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.db import connection

from knowledge.scope import FROM_CHUNKS, Scope


@dataclass(frozen=True)
class StageHit:
    chunk_id: int
    rank: int
    score: float


@dataclass(frozen=True)
class BM25Parameters:
    k1: float = 1.2
    b: float = 0.75

    def __post_init__(self) -> None:
        if self.k1 < 0 or not 0 <= self.b <= 1:
            raise ValueError(f"BM25 needs k1 ≥ 0 and 0 ≤ b ≤ 1, got k1={self.k1}, b={self.b}")


def idf(document_frequency: int, documents: int) -> float:
    """Lucene's non-negative BM25 IDF."""
    return math.log(1 + (documents - document_frequency + 0.5) / (document_frequency + 0.5))


def bm25_score(
    term_frequencies: Mapping[str, int],
    length: int,
    query_terms: Sequence[str],
    document_frequencies: Mapping[str, int],
    documents: int,
    average_length: float,
    params: BM25Parameters = BM25Parameters(),
) -> float:
    """The BM25 score of one document, in plain Python: the reference the SQL is tested against."""
    score = 0.0
    for term in set(query_terms):
        tf = term_frequencies.get(term, 0)
        if not tf or term not in document_frequencies:
            continue
        norm = params.k1 * (1 - params.b + params.b * length / average_length)
        score += idf(document_frequencies[term], documents) * tf * (params.k1 + 1) / (tf + norm)
    return score


_TERMS_SQL = """
SELECT t.lexeme, t.document_frequency
FROM knowledge_termstatistic t
WHERE t.collection_id = %(collection)s
  AND t.lexeme = ANY(tsvector_to_array(to_tsvector('english', %(query)s)))
"""

_TERM_SCORE = """{idf} * {tf} * (%(k1)s + 1)
    / ({tf} + %(k1)s * (1 - %(b)s + %(b)s * {length} / %(avgdl)s))"""
_WEIGHTED = "SELECT * FROM unnest(%(lexemes)s::text[], %(idfs)s::float8[]) AS w(lexeme, idf)"

# The k best scored chunks that the scope lets through.
# The scores are computed once (MATERIALIZED) and only then joined with the scope: inlined, the planner can
# put the whole scoring inside a loop over article versions when its statistics are stale (a collection
# just ingested), which cost seconds per query instead of milliseconds.
_BEST_IN_SCOPE = f"""
SELECT c.id, s.score
FROM scored s JOIN {FROM_CHUNKS} ON c.id = s.chunk_id
WHERE {{where}}
ORDER BY s.score DESC, c.id
LIMIT %(k)s
"""

# Exact: every posting of every query term. The fallback, and the reference the fast path is tested against.
_BM25_EXACT_SQL = f"""
WITH weighted AS ({_WEIGHTED}), scored AS MATERIALIZED (
    SELECT p.chunk_id, SUM({_TERM_SCORE.format(idf="w.idf", tf="p.term_frequency", length="p.chunk_length")}) AS score
    FROM knowledge_posting p JOIN weighted w ON w.lexeme = p.lexeme
    WHERE p.collection_id = %(scope_collection)s
    GROUP BY p.chunk_id
)
{_BEST_IN_SCOPE}"""

# Fast: read each term's postings best-first (by impact) and only the first %(per_term)s of them; the
# chunks they rank highest are rescored exactly with every query term, then checked against the scope.
# A common term ("cell", in a fifth of the chunks) costs %(per_term)s rows instead of all of them.
_BM25_FRONT_SQL = f"""
WITH weighted AS ({_WEIGHTED}), front AS (
    SELECT top.chunk_id, SUM({_TERM_SCORE.format(idf="w.idf", tf="top.term_frequency", length="top.chunk_length")})
    FROM weighted w CROSS JOIN LATERAL (
        SELECT p.chunk_id, p.term_frequency, p.chunk_length FROM knowledge_posting p
        WHERE p.collection_id = %(scope_collection)s AND p.lexeme = w.lexeme
        ORDER BY p.impact DESC
        LIMIT %(per_term)s
    ) top
    GROUP BY top.chunk_id
    ORDER BY 2 DESC, top.chunk_id
    LIMIT %(rescore)s
), scored AS MATERIALIZED (
    SELECT f.chunk_id, SUM({_TERM_SCORE.format(idf="w.idf", tf="p.term_frequency", length="p.chunk_length")}) AS score
    FROM front f CROSS JOIN weighted w
        JOIN knowledge_posting p
            ON p.collection_id = %(scope_collection)s AND p.lexeme = w.lexeme AND p.chunk_id = f.chunk_id
    GROUP BY f.chunk_id
)
{_BEST_IN_SCOPE}"""
POSTINGS_PER_TERM = 1000
RESCORED_PER_RESULT = 10


@dataclass(frozen=True)
class CorpusStatistics:
    documents: int
    average_length: float


def document_frequencies(collection_id: int, query: str) -> dict[str, int]:
    """The query's stemmed terms that the collection contains, with their document frequencies."""
    with connection.cursor() as cursor:
        cursor.execute(_TERMS_SQL, {"collection": collection_id, "query": query})
        return dict(cursor.fetchall())


def rank_by_term_weights(
    scope: Scope,
    weights: Mapping[str, float],
    *,
    stats: CorpusStatistics,
    k: int,
    params: BM25Parameters,
    exact: bool = False,
) -> list[StageHit]:
    """Chunks in scope ranked by Σ weight(term) × BM25 term saturation; with IDF weights, this is BM25.

    Every returned score is exact. Which chunks are considered is exact with `exact`; otherwise only those
    among the best-first postings of each term (POSTINGS_PER_TERM), which `evaluate retrieval` measures."""
    if not weights or stats.documents == 0 or stats.average_length <= 0:
        return []
    lexemes = sorted(weights)
    where, scope_params = scope.where()
    values = {
        **scope_params,
        "lexemes": lexemes,
        "idfs": [weights[lexeme] for lexeme in lexemes],
        "avgdl": stats.average_length,
        "k1": params.k1,
        "b": params.b,
        "k": k,
        "per_term": POSTINGS_PER_TERM,
        "rescore": k * RESCORED_PER_RESULT,
    }
    with connection.cursor() as cursor:
        cursor.execute((_BM25_EXACT_SQL if exact else _BM25_FRONT_SQL).replace("{where}", where), values)
        rows = cursor.fetchall()
        if len(rows) < k and not exact:
            # Too few of the front-runners are in scope (a narrow audience or date): score the whole scope.
            cursor.execute(_BM25_EXACT_SQL.replace("{where}", where), values)
            rows = cursor.fetchall()
    return [StageHit(chunk_id, rank, float(score)) for rank, (chunk_id, score) in enumerate(rows, start=1)]


def bm25_search(
    scope: Scope, query: str, *, stats: CorpusStatistics, k: int, params: BM25Parameters, exact: bool = False
) -> list[StageHit]:
    """The k chunks in scope with the highest BM25 score for the query (none when no term is known)."""
    frequencies = document_frequencies(scope.collection_id, query)
    weights = {lexeme: idf(df, stats.documents) for lexeme, df in frequencies.items()}
    return rank_by_term_weights(scope, weights, stats=stats, k=k, params=params, exact=exact)
