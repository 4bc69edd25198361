"""Each collection's own HNSW graphs: made and dropped with it, used by its searches, never mixed up."""

import pytest
from django.db import IntegrityError, connection, transaction

from knowledge.dense import _DENSE_SQL, dense_search, vector_literal
from knowledge.embeddings import embed_query
from knowledge.models import Chunk, Collection
from knowledge.scope import Scope
from knowledge.vector_indexes import VECTOR_COLUMNS, index_name, vector_index_sizes

pytestmark = pytest.mark.django_db


def existing_indexes() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'knowledge_chunk'")
        return {row[0] for row in cursor.fetchall()}


def test_a_collection_gets_its_graphs_when_made_and_loses_them_when_deleted(helpcentre: Collection):
    other = Collection.objects.create(name="other", embedding_space=helpcentre.embedding_space)
    names = {index_name(other.pk, column) for column in VECTOR_COLUMNS}
    assert names <= existing_indexes()
    # Nothing is shared: every vector index on the table belongs to one collection.
    assert not any("hnsw" in name and "_c" not in name for name in existing_indexes())
    other.delete()
    assert not names & existing_indexes()
    assert set(vector_index_sizes(helpcentre.pk)) == set(VECTOR_COLUMNS)


def test_dense_search_reads_its_own_collections_graph(helpcentre: Collection, embedder):
    where, params = Scope(helpcentre.pk, "public").where()
    vector = embed_query(helpcentre, "how long does a refund take", embedder)
    sql = _DENSE_SQL.replace("{where}", where).replace("{column}", "embedding")
    with transaction.atomic(), connection.cursor() as cursor:
        # At 124 chunks an exact scan and sort is cheaper; the plan must still be able to take the graph.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN " + sql, {**params, "vector": vector_literal(vector), "k": 5})
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert index_name(helpcentre.pk, "embedding") in plan
    hits = dense_search(Scope(helpcentre.pk, "public"), vector, k=5)
    assert len(hits) == 5
    assert set(Chunk.objects.filter(pk__in=[h.chunk_id for h in hits]).values_list("collection_id", flat=True)) == {
        helpcentre.pk
    }


def test_a_chunk_filed_under_another_collection_is_refused(helpcentre: Collection):
    other = Collection.objects.create(name="other", embedding_space=helpcentre.embedding_space)
    chunk = Chunk.objects.filter(collection=helpcentre).first()
    refused = 'chunk of collection "helpcentre"'
    with pytest.raises(IntegrityError, match=refused), transaction.atomic():
        Chunk.objects.create(
            version=chunk.version,
            collection=other,
            embedding_space=chunk.embedding_space,
            ordinal=999,
            heading_path="x",
            text="x",
            token_count=1,
            embedding=chunk.embedding,
        )
    chunk.collection = other
    with pytest.raises(IntegrityError, match=refused), transaction.atomic():
        chunk.save()
