import django.db.models.deletion
import django.db.models.expressions
import django.db.models.functions.comparison
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0006_secondary_dense_index"),
    ]

    operations = [
        migrations.CreateModel(
            name="Posting",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "collection_id",
                        "lexeme",
                        "chunk_id",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("lexeme", models.TextField()),
                ("term_frequency", models.PositiveIntegerField()),
                (
                    "chunk_length",
                    models.PositiveIntegerField(help_text="The chunk's sparse length, copied for scoring."),
                ),
                ("chunk", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="knowledge.chunk")),
                (
                    "collection",
                    models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.CASCADE, to="knowledge.collection"
                    ),
                ),
            ],
        ),
        migrations.AddField(
            model_name="posting",
            name="impact",
            field=models.GeneratedField(
                db_persist=True,
                expression=models.ExpressionWrapper(
                    django.db.models.expressions.CombinedExpression(
                        django.db.models.functions.comparison.Cast("term_frequency", models.FloatField()),
                        "/",
                        django.db.models.expressions.CombinedExpression(
                            django.db.models.expressions.CombinedExpression(
                                models.F("term_frequency"), "+", models.Value(0.3)
                            ),
                            "+",
                            django.db.models.expressions.CombinedExpression(
                                models.Value(0.009), "*", models.F("chunk_length")
                            ),
                        ),
                    ),
                    output_field=models.FloatField(),
                ),
                output_field=models.FloatField(),
            ),
        ),
        migrations.AddIndex(
            model_name="posting",
            index=models.Index(
                models.F("collection"),
                models.F("lexeme"),
                models.OrderBy(models.F("impact"), descending=True),
                models.F("chunk"),
                name="posting_by_impact",
            ),
        ),
        # A trigger, not application code, so every writer of chunks (ingest, publish, benchmarks, SQL by
        # hand) keeps the inverted index in step. Chunk text never changes in place: a new version gets
        # new chunks. Deleting a chunk deletes its postings through the foreign key.
        migrations.RunSQL(
            """
            CREATE FUNCTION knowledge_chunk_postings() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO knowledge_posting (collection_id, lexeme, chunk_id, term_frequency, chunk_length)
                SELECT a.collection_id, u.lexeme, NEW.id, cardinality(u.positions), NEW.sparse_length
                FROM knowledge_articleversion v
                    JOIN knowledge_article a ON a.id = v.article_id
                    CROSS JOIN unnest(NEW.search_vector) AS u(lexeme, positions, weights)
                WHERE v.id = NEW.version_id;
                RETURN NULL;
            END $$;
            CREATE TRIGGER knowledge_chunk_postings AFTER INSERT ON knowledge_chunk
                FOR EACH ROW EXECUTE FUNCTION knowledge_chunk_postings();
            INSERT INTO knowledge_posting (collection_id, lexeme, chunk_id, term_frequency, chunk_length)
            SELECT a.collection_id, u.lexeme, c.id, cardinality(u.positions), c.sparse_length
            FROM knowledge_chunk c
                JOIN knowledge_articleversion v ON v.id = c.version_id
                JOIN knowledge_article a ON a.id = v.article_id
                CROSS JOIN unnest(c.search_vector) AS u(lexeme, positions, weights);
            """,
            """
            DROP TRIGGER knowledge_chunk_postings ON knowledge_chunk;
            DROP FUNCTION knowledge_chunk_postings();
            """,
        ),
    ]
