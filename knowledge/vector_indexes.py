"""Each collection's own HNSW graphs: partial pgvector indexes over its chunks, one per vector column.

One graph shared by every collection made a small collection beside a large one slow: nearly every
graph neighbour belonged to the other collection, and the filtered scan walked far to find k of its own
(README "Scale"). A partial index per collection keeps each graph to the chunks a search may return.
The planner uses it when the query says `c.collection_id = <that id>`, as the scope's clause does.
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.backends.utils import CursorWrapper

from knowledge.dense import DenseIndex
from knowledge.models import Collection

VECTOR_COLUMNS: tuple[DenseIndex, ...] = ("embedding", "secondary_embedding")
# The same graph parameters the shared indexes had (pgvector's defaults).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64


def index_name(collection_id: int, column: DenseIndex) -> str:
    return f"knowledge_chunk_c{int(collection_id)}_{column}_hnsw"


def _settle_pending_checks(cursor: CursorWrapper) -> None:
    """PostgreSQL refuses to change a table's indexes while its deferred foreign-key checks are pending in
    the transaction (Django's are INITIALLY DEFERRED): run them now, then defer again."""
    cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    cursor.execute("SET CONSTRAINTS ALL DEFERRED")


def create_vector_indexes(collection_id: int, columns: tuple[DenseIndex, ...] = VECTOR_COLUMNS) -> None:
    """Build the collection's graphs (no-op where they exist). On an empty collection this is instant and
    ingestion then adds each chunk to them; for a bulk load it is faster to drop, load, and build once."""
    with connection.cursor() as cursor:
        _settle_pending_checks(cursor)
        for column in columns:
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS {index_name(collection_id, column)} ON knowledge_chunk "
                f"USING hnsw ({column} vector_cosine_ops) "
                f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
                f"WHERE collection_id = {int(collection_id)}"
            )


def drop_vector_indexes(collection_id: int) -> None:
    with connection.cursor() as cursor:
        _settle_pending_checks(cursor)
        for column in VECTOR_COLUMNS:
            cursor.execute(f"DROP INDEX IF EXISTS {index_name(collection_id, column)}")


def vector_index_sizes(collection_id: int) -> dict[str, int]:
    """Bytes on disk of each of the collection's graphs that exists."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c WHERE c.relname = ANY(%s)",
            [[index_name(collection_id, column) for column in VECTOR_COLUMNS]],
        )
        found = dict(cursor.fetchall())
    names = {column: index_name(collection_id, column) for column in VECTOR_COLUMNS}
    return {column: found[name] for column, name in names.items() if name in found}


def collection_created(sender: type[Collection], instance: Collection, created: bool, **kwargs: Any) -> None:
    """post_save: a new collection gets its graphs at once, so that ingestion fills them as it writes."""
    if created and not kwargs.get("raw"):
        create_vector_indexes(instance.pk)


def collection_deleted(sender: type[Collection], instance: Collection, **kwargs: Any) -> None:
    drop_vector_indexes(instance.pk)
