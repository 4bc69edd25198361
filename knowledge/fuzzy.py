"""Typo tolerance with character trigrams (pg_trgm).

Query words that no chunk contains ("refnd", "warrenty", "E4012") are matched, by trigram similarity, to
the nearest terms of the collection's vocabulary; those corrections then rank chunks like BM25 does,
weighted by how close the correction is. A word with no close vocabulary term falls back to trigram
word similarity against the chunk texts themselves. Known words are left to BM25 and dense retrieval.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection, transaction

from knowledge.scope import FROM_CHUNKS, Scope
from knowledge.sparse import BM25Parameters, CorpusStatistics, StageHit, idf, rank_by_term_weights
from knowledge.stemming import stem

_WORD = re.compile(r"[\w-]{3,}")
_DIGITS = re.compile(r"\d")
CORRECTION_THRESHOLD = 0.4
TEXT_THRESHOLD = 0.6

_CORRECTIONS_SQL = """
WITH words AS (
    SELECT w.word, tsvector_to_array(to_tsvector('english', w.word)) AS stems
    FROM unnest(%(words)s::text[]) AS w(word)
), unknown AS (
    SELECT words.word, stem FROM words, unnest(words.stems) AS stem
    WHERE NOT EXISTS (
        SELECT 1 FROM knowledge_termstatistic t
        WHERE t.collection_id = %(collection)s AND t.lexeme = ANY(words.stems)
    )
)
SELECT u.word, t.lexeme, t.document_frequency, similarity(t.lexeme, u.stem) AS closeness
FROM unknown u
LEFT JOIN knowledge_termstatistic t ON t.collection_id = %(collection)s AND t.lexeme %% u.stem
ORDER BY u.word, closeness DESC NULLS LAST, t.document_frequency DESC
"""

_TEXT_SQL = f"""
SELECT c.id, SUM(word_similarity(t.term, c.text)) AS score
FROM {FROM_CHUNKS}
    CROSS JOIN unnest(%(terms)s::text[]) AS t(term)
WHERE t.term <%% c.text AND {{where}}
GROUP BY c.id
ORDER BY score DESC, c.id
LIMIT %(k)s
"""


@dataclass(frozen=True)
class Correction:
    word: str
    lexeme: str
    closeness: float
    document_frequency: int


@dataclass(frozen=True)
class Typos:
    corrections: tuple[Correction, ...]
    uncorrected: tuple[str, ...]


def query_words(query: str) -> list[str]:
    """Distinct words of three or more characters, lower-cased, in order."""
    return list(dict.fromkeys(word.lower() for word in _WORD.findall(query)))


def _digits(text: str) -> str:
    return "".join(_DIGITS.findall(text))


def find_typos(collection_id: int, query: str) -> Typos:
    """Unknown query words and, where one is close enough, the vocabulary term each most likely meant.

    A word with digits is only corrected to a term with the same digits: "E4012" may mean "E-4012", but
    "E-4099" must not become "E-4012".
    """
    words = query_words(query)
    if not words:
        return Typos((), ())
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('pg_trgm.similarity_threshold', %s, true)", [str(CORRECTION_THRESHOLD)])
        cursor.execute(_CORRECTIONS_SQL, {"words": words, "collection": collection_id})
        rows = cursor.fetchall()
    best: dict[str, Correction | None] = {}
    for word, lexeme, frequency, closeness in rows:
        if best.get(word) is not None:
            continue
        usable = lexeme is not None and (not _digits(word) or _digits(word) == _digits(lexeme))
        best[word] = Correction(word, lexeme, float(closeness), int(frequency)) if usable else None
    corrections = tuple(c for c in best.values() if c is not None)
    return Typos(corrections, tuple(word for word, c in best.items() if c is None))


def fuzzy_search(
    scope: Scope, query: str, *, stats: CorpusStatistics, k: int, params: BM25Parameters, typos: Typos | None = None
) -> list[StageHit]:
    """Chunks for the query's misspelt or unknown words (none when every word is known)."""
    typos = typos or find_typos(scope.collection_id, query)
    if typos.corrections:
        weights: dict[str, float] = {}
        for c in typos.corrections:
            weights[c.lexeme] = max(
                weights.get(c.lexeme, 0.0), idf(c.document_frequency, stats.documents) * c.closeness
            )
        return rank_by_term_weights(scope, weights, stats=stats, k=k, params=params)
    if not typos.uncorrected:
        return []
    where, params_sql = scope.where()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('pg_trgm.word_similarity_threshold', %s, true)", [str(TEXT_THRESHOLD)])
        cursor.execute(_TEXT_SQL.replace("{where}", where), {**params_sql, "terms": list(typos.uncorrected), "k": k})
        rows = cursor.fetchall()
    return [StageHit(chunk_id, rank, float(score)) for rank, (chunk_id, score) in enumerate(rows, start=1)]


def expand_with_corrections(query: str, typos: Typos) -> str:
    """The query with each correction appended, so BM25 and dense retrieval see the intended words too."""
    extra = [c.lexeme for c in typos.corrections]
    return f"{query} {' '.join(extra)}" if extra else query


def corrected(query: str, typos: Typos, texts: Sequence[str]) -> str:
    """The query with each misspelt word replaced by the word the texts use for its correction ("refnd" →
    "refund"), for models that read words rather than stems; a correction no text spells stays appended."""
    if not typos.corrections:
        return query  # stemming every word of the texts costs ~25 ms a turn
    wanted = {c.lexeme for c in typos.corrections}
    surface: dict[str, str] = {}
    for word in dict.fromkeys(w.lower() for text in texts for w in _WORD.findall(text)):
        if (stemmed := stem(word)) in wanted and stemmed not in surface:
            surface[stemmed] = word
            if len(surface) == len(wanted):
                break
    extra = []
    for c in typos.corrections:
        if c.lexeme in surface:
            query = re.sub(rf"(?<![\w-]){re.escape(c.word)}(?![\w-])", surface[c.lexeme], query, flags=re.IGNORECASE)
        else:
            extra.append(c.lexeme)
    return f"{query} {' '.join(extra)}" if extra else query
