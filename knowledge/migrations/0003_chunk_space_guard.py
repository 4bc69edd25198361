"""The index fingerprint enforced by the database itself: a chunk's vector must come from the embedding
space its collection is bound to, whoever writes the row."""

from django.db import migrations

FORWARD = """
CREATE FUNCTION knowledge_chunk_space_guard() RETURNS trigger AS $$
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

CREATE TRIGGER knowledge_chunk_space_guard
    BEFORE INSERT OR UPDATE OF embedding_space_id, version_id ON knowledge_chunk
    FOR EACH ROW EXECUTE FUNCTION knowledge_chunk_space_guard();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS knowledge_chunk_space_guard ON knowledge_chunk;
DROP FUNCTION IF EXISTS knowledge_chunk_space_guard();
"""


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0002_initial")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
