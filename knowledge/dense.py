"""Dense retrieval: pgvector HNSW cosine search, with the scope's rules inside the same query."""

from __future__ import annotations

from typing import Literal

import numpy as np
from django.db import connection, transaction

from knowledge.scope import FROM_CHUNKS, Scope
from knowledge.sparse import StageHit

# The chunk columns that hold vectors: the collection's own model, and its secondary model.
DenseIndex = Literal["embedding", "secondary_embedding"]

# relaxed_order can return rows slightly out of order; the outer query puts them back in order.
_DENSE_SQL = f"""
SELECT id, distance FROM (
    SELECT c.id, c.{{column}} <=> %(vector)s::vector AS distance
    FROM {FROM_CHUNKS}
    WHERE {{where}}
    ORDER BY c.{{column}} <=> %(vector)s::vector
    LIMIT %(k)s
) nearest
ORDER BY distance, id
"""


def vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


def dense_search(
    scope: Scope, query_vector: np.ndarray, *, k: int, ef_search: int = 100, index: DenseIndex = "embedding"
) -> list[StageHit]:
    """The k chunks in scope nearest to the query vector in the named index; score is cosine similarity.

    pgvector applies filters after the HNSW scan; the iterative scan keeps scanning until k rows pass
    them, so a narrow audience or version filter still gets k results.
    """
    where, params = scope.where()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(ef_search)])
        cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        sql = _DENSE_SQL.replace("{where}", where).replace("{column}", index)
        cursor.execute(sql, {**params, "vector": vector_literal(query_vector), "k": k})
        rows = cursor.fetchall()
    return [StageHit(chunk_id, rank, 1.0 - float(d)) for rank, (chunk_id, d) in enumerate(rows, start=1)]
