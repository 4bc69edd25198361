"""Chunks carry their collection, and each collection has its own HNSW graphs (partial indexes).

The shared graphs made a small collection's search walk through a large one's chunks (README "Scale").
The chunk's collection is the one its version's article belongs to: the insert and update guards refuse
any other, and the postings trigger reads it without joining.
"""

import django.db.models.deletion
from django.db import migrations, models

FILL = """
UPDATE knowledge_chunk c SET collection_id = a.collection_id
FROM knowledge_articleversion v JOIN knowledge_article a ON a.id = v.article_id
WHERE v.id = c.version_id
"""

GUARDS = """
CREATE OR REPLACE FUNCTION knowledge_chunks_space_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    offending record;
BEGIN
    SELECT n.embedding_space_id AS got, c.embedding_space_id AS expected, c.name,
        n.collection_id AS filed_under, a.collection_id AS belongs_to INTO offending
    FROM new_chunks n
        JOIN knowledge_articleversion v ON v.id = n.version_id
        JOIN knowledge_article a ON a.id = v.article_id
        JOIN knowledge_collection c ON c.id = a.collection_id
    WHERE n.embedding_space_id IS DISTINCT FROM c.embedding_space_id OR n.collection_id <> a.collection_id
    LIMIT 1;
    IF FOUND AND offending.filed_under <> offending.belongs_to THEN
        RAISE EXCEPTION 'chunk of collection "%" (%) refused under collection %',
            offending.name, offending.belongs_to, offending.filed_under
            USING ERRCODE = 'check_violation';
    ELSIF FOUND THEN
        RAISE EXCEPTION 'chunk vector from embedding space % refused: collection "%" is indexed with embedding space %',
            offending.got, offending.name, offending.expected
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION knowledge_chunk_space_guard() RETURNS trigger AS $$
DECLARE
    expected bigint;
    belongs_to bigint;
    collection_name text;
BEGIN
    SELECT c.embedding_space_id, c.id, c.name INTO expected, belongs_to, collection_name
    FROM knowledge_articleversion v
    JOIN knowledge_article a ON a.id = v.article_id
    JOIN knowledge_collection c ON c.id = a.collection_id
    WHERE v.id = NEW.version_id;
    IF NEW.collection_id IS DISTINCT FROM belongs_to THEN
        RAISE EXCEPTION 'chunk of collection "%" (%) refused under collection %',
            collection_name, belongs_to, NEW.collection_id
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.embedding_space_id IS DISTINCT FROM expected THEN
        RAISE EXCEPTION 'chunk vector from embedding space % refused: collection "%" is indexed with embedding space %',
            NEW.embedding_space_id, collection_name, expected
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER knowledge_chunk_space_guard ON knowledge_chunk;
CREATE TRIGGER knowledge_chunk_space_guard BEFORE UPDATE OF embedding_space_id, version_id, collection_id
    ON knowledge_chunk FOR EACH ROW EXECUTE FUNCTION knowledge_chunk_space_guard();

CREATE OR REPLACE FUNCTION knowledge_chunks_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO knowledge_posting (collection_id, lexeme, chunk_id, term_frequency, chunk_length)
    SELECT n.collection_id, u.lexeme, n.id, cardinality(u.positions), n.sparse_length
    FROM new_chunks n CROSS JOIN unnest(n.search_vector) AS u(lexeme, positions, weights);
    RETURN NULL;
END $$;
"""

# 0008's statement-level functions and 0003's row guard, as they were before the chunk knew its collection.
BACKWARD_GUARDS = """
CREATE OR REPLACE FUNCTION knowledge_chunks_space_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    offending record;
BEGIN
    SELECT n.embedding_space_id AS got, c.embedding_space_id AS expected, c.name INTO offending
    FROM new_chunks n
        JOIN knowledge_articleversion v ON v.id = n.version_id
        JOIN knowledge_article a ON a.id = v.article_id
        JOIN knowledge_collection c ON c.id = a.collection_id
    WHERE n.embedding_space_id IS DISTINCT FROM c.embedding_space_id
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'chunk vector from embedding space % refused: collection "%" is indexed with embedding space %',
            offending.got, offending.name, offending.expected
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION knowledge_chunk_space_guard() RETURNS trigger AS $$
DECLARE
    expected bigint;
    collection_name text;
BEGIN
    SELECT c.embedding_space_id, c.name INTO expected, collection_name
    FROM knowledge_articleversion v
    JOIN knowledge_article a ON a.id = v.article_id
    JOIN knowledge_collection c ON c.id = a.collection_id
    WHERE v.id = NEW.version_id;
    IF NEW.embedding_space_id IS DISTINCT FROM expected THEN
        RAISE EXCEPTION 'chunk vector from embedding space % refused: collection "%" is indexed with embedding space %',
            NEW.embedding_space_id, collection_name, expected
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER knowledge_chunk_space_guard ON knowledge_chunk;
CREATE TRIGGER knowledge_chunk_space_guard BEFORE UPDATE OF embedding_space_id, version_id ON knowledge_chunk
    FOR EACH ROW EXECUTE FUNCTION knowledge_chunk_space_guard();

CREATE OR REPLACE FUNCTION knowledge_chunks_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO knowledge_posting (collection_id, lexeme, chunk_id, term_frequency, chunk_length)
    SELECT a.collection_id, u.lexeme, n.id, cardinality(u.positions), n.sparse_length
    FROM new_chunks n
        JOIN knowledge_articleversion v ON v.id = n.version_id
        JOIN knowledge_article a ON a.id = v.article_id
        CROSS JOIN unnest(n.search_vector) AS u(lexeme, positions, weights);
    RETURN NULL;
END $$;
"""


def per_collection_graphs(apps, schema_editor):
    from knowledge.vector_indexes import create_vector_indexes

    for pk in apps.get_model("knowledge", "Collection").objects.values_list("pk", flat=True):
        create_vector_indexes(pk)


def shared_graphs(apps, schema_editor):
    from knowledge.vector_indexes import drop_vector_indexes

    for pk in apps.get_model("knowledge", "Collection").objects.values_list("pk", flat=True):
        drop_vector_indexes(pk)


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0009_sync_runs_sources_tokens")]

    operations = [
        migrations.AddField(
            model_name="chunk",
            name="collection",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="chunks",
                to="knowledge.collection",
            ),
        ),
        migrations.RunSQL(FILL, migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="chunk",
            name="collection",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="chunks", to="knowledge.collection"
            ),
        ),
        migrations.RunSQL(GUARDS, BACKWARD_GUARDS),
        migrations.RemoveIndex(model_name="chunk", name="chunk_embedding_hnsw"),
        migrations.RemoveIndex(model_name="chunk", name="chunk_secondary_embedding_hnsw"),
        migrations.RunPython(per_collection_graphs, shared_graphs),
    ]
