"""Sparse retrieval: Okapi BM25 (Robertson–Zaragoza) computed in PostgreSQL.

Terms are the English-stemmed lexemes of each chunk's generated tsvector. Document frequencies live in
TermStatistic and the collection's chunk count and mean chunk length on Collection, all refreshed by
ingestion; a chunk's length is a generated column. Unlike ts_rank, this has IDF and term saturation.
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

_BM25_SQL = f"""
WITH weighted AS (
    SELECT * FROM unnest(%(lexemes)s::text[], %(idfs)s::float8[]) AS w(lexeme, idf)
)
SELECT c.id,
       SUM(w.idf * cardinality(u.positions) * (%(k1)s + 1)
           / (cardinality(u.positions) + %(k1)s * (1 - %(b)s + %(b)s * c.sparse_length / %(avgdl)s))) AS score
FROM {FROM_CHUNKS}
    CROSS JOIN LATERAL unnest(c.search_vector) AS u(lexeme, positions, weights)
    JOIN weighted w ON w.lexeme = u.lexeme
WHERE c.search_vector @@ %(tsquery)s::tsquery AND {{where}}
GROUP BY c.id
ORDER BY score DESC, c.id
LIMIT %(k)s
"""


def _tsquery_any(lexemes: Sequence[str]) -> str:
    """A tsquery matching any of the (already stemmed) lexemes, each quoted so nothing is re-parsed."""
    return " | ".join("'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'" for lexeme in lexemes)


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
    scope: Scope, weights: Mapping[str, float], *, stats: CorpusStatistics, k: int, params: BM25Parameters
) -> list[StageHit]:
    """Chunks in scope ranked by Σ weight(term) × BM25 term saturation; with IDF weights, this is BM25."""
    if not weights or stats.documents == 0 or stats.average_length <= 0:
        return []
    lexemes = sorted(weights)
    where, scope_params = scope.where()
    with connection.cursor() as cursor:
        cursor.execute(
            _BM25_SQL.replace("{where}", where),
            {
                **scope_params,
                "lexemes": lexemes,
                "idfs": [weights[lexeme] for lexeme in lexemes],
                "tsquery": _tsquery_any(lexemes),
                "avgdl": stats.average_length,
                "k1": params.k1,
                "b": params.b,
                "k": k,
            },
        )
        rows = cursor.fetchall()
    return [StageHit(chunk_id, rank, float(score)) for rank, (chunk_id, score) in enumerate(rows, start=1)]


def bm25_search(scope: Scope, query: str, *, stats: CorpusStatistics, k: int, params: BM25Parameters) -> list[StageHit]:
    """The k chunks in scope with the highest BM25 score for the query (none when no term is known)."""
    frequencies = document_frequencies(scope.collection_id, query)
    weights = {lexeme: idf(df, stats.documents) for lexeme, df in frequencies.items()}
    return rank_by_term_weights(scope, weights, stats=stats, k=k, params=params)
