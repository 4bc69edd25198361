"""The knowledge base: collections bound to an embedding space, versioned articles, and their chunks."""

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import F
from django.db.models.functions import Cast
from pgvector.django import HnswIndex, VectorField

EMBEDDING_DIMENSION = 384


class EmbeddingSpace(models.Model):
    """The index fingerprint: which model produced a vector. Vectors of different spaces never mix."""

    model_name = models.CharField(max_length=200)
    dimension = models.PositiveIntegerField()
    weights_sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["model_name", "dimension", "weights_sha256"], name="unique_embedding_space")
        ]

    def __str__(self) -> str:
        return f"{self.model_name} ({self.dimension}d, {self.weights_sha256[:12]})"


class Collection(models.Model):
    """A separate knowledge base: the live help centre, or an evaluation corpus."""

    name = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    embedding_space = models.ForeignKey(EmbeddingSpace, on_delete=models.PROTECT, related_name="collections")
    # A second dense model whose ranking is fused with the first (settings.EMBEDDING_SECONDARY_MODEL).
    secondary_space = models.ForeignKey(
        EmbeddingSpace, null=True, blank=True, on_delete=models.PROTECT, related_name="secondary_collections"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    # Corpus statistics for BM25, refreshed by ingestion whenever the collection's chunks change.
    chunk_count = models.PositiveIntegerField(default=0)
    average_chunk_length = models.FloatField(default=0.0, help_text="Mean number of indexed terms per chunk.")

    def __str__(self) -> str:
        return self.name


class TermStatistic(models.Model):
    """How many chunks of a collection contain a stemmed term: BM25's document frequency."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="term_statistics")
    lexeme = models.TextField()
    document_frequency = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["collection", "lexeme"], name="unique_term_per_collection")]
        indexes = [GinIndex(fields=["lexeme"], opclasses=["gin_trgm_ops"], name="term_lexeme_trgm")]

    def __str__(self) -> str:
        return f"{self.lexeme} ({self.document_frequency})"


class Article(models.Model):
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="articles")
    slug = models.CharField(max_length=200)
    title = models.CharField(max_length=300)
    product = models.CharField(max_length=100, blank=True)
    language = models.CharField(max_length=16, default="en")
    retired_at = models.DateTimeField(null=True, blank=True, help_text="Set when the article's source disappeared.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["collection", "slug"], name="unique_article_slug")]
        ordering = ["collection", "slug"]

    def __str__(self) -> str:
        return f"{self.slug}: {self.title}"


class Audience(models.TextChoices):
    PUBLIC = "public", "Public"
    MEMBER = "member", "Members"
    STAFF = "staff", "Staff only"


class VersionStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    IN_REVIEW = "in_review", "In review"
    PUBLISHED = "published", "Published"
    SUPERSEDED = "superseded", "Superseded"


class ArticleVersion(models.Model):
    article = models.ForeignKey(Article, on_delete=models.CASCADE, related_name="versions")
    version_label = models.CharField(max_length=50)
    effective_date = models.DateField()
    status = models.CharField(max_length=20, choices=VersionStatus.choices, default=VersionStatus.DRAFT)
    audience = models.CharField(max_length=10, choices=Audience.choices, default=Audience.PUBLIC)
    supersedes = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="superseded_by"
    )
    body = models.TextField(help_text="Markdown, without front matter.")
    content_hash = models.CharField(max_length=64, help_text="SHA-256 of the source: unchanged sources are skipped.")
    chunking = models.CharField(max_length=100, blank=True, help_text="Strategy and bounds the chunks were made with.")
    source_path = models.CharField(max_length=500, blank=True)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    indexed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["article", "version_label"], name="unique_version_label"),
            models.UniqueConstraint(
                fields=["article"],
                condition=models.Q(status="published"),
                name="one_published_version_per_article",
            ),
        ]
        ordering = ["article", "-effective_date"]

    def __str__(self) -> str:
        return f"{self.article.slug} v{self.version_label} ({self.status})"


class Chunk(models.Model):
    version = models.ForeignKey(ArticleVersion, on_delete=models.CASCADE, related_name="chunks")
    embedding_space = models.ForeignKey(EmbeddingSpace, on_delete=models.PROTECT, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    heading_path = models.CharField(max_length=1000)
    text = models.TextField()
    token_count = models.PositiveIntegerField()
    # Number of stemmed terms in search_vector, repeats included: BM25's document length.
    # (A generated column may not read another one, so the tsvector expression is repeated.)
    sparse_length = models.GeneratedField(
        expression=models.Func(
            SearchVector("heading_path", "text", config="english"),
            function="knowledge_tsvector_length",
            output_field=models.IntegerField(),
        ),
        output_field=models.IntegerField(),
        db_persist=True,
    )
    embedding = VectorField(dimensions=EMBEDDING_DIMENSION)
    # Null until ingestion has embedded the chunk with the collection's secondary model.
    secondary_embedding = VectorField(dimensions=EMBEDDING_DIMENSION, null=True, blank=True)
    search_vector = models.GeneratedField(
        expression=SearchVector("heading_path", "text", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "ordinal"], name="unique_chunk_ordinal")]
        indexes = [
            *(
                HnswIndex(
                    name=f"chunk_{field}_hnsw",
                    fields=[field],
                    m=16,
                    ef_construction=64,
                    opclasses=["vector_cosine_ops"],
                )
                for field in ("embedding", "secondary_embedding")
            ),
            GinIndex(fields=["search_vector"], name="chunk_search_vector_gin"),
            GinIndex(fields=["text"], opclasses=["gin_trgm_ops"], name="chunk_text_trgm"),
        ]
        ordering = ["version", "ordinal"]

    def __str__(self) -> str:
        return f"{self.heading_path} #{self.ordinal}"


class Posting(models.Model):
    """One term of one chunk, with its frequency: BM25's inverted index. Written by a database trigger
    whenever a chunk is inserted (so no writer can forget it) and removed with the chunk. Scoring reads only
    the postings of the query's terms instead of every matching chunk's whole tsvector."""

    pk = models.CompositePrimaryKey("collection_id", "lexeme", "chunk_id")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, db_index=False)
    lexeme = models.TextField()
    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE)
    term_frequency = models.PositiveIntegerField()
    chunk_length = models.PositiveIntegerField(help_text="The chunk's sparse length, copied for scoring.")
    # BM25's saturation of this term in this chunk (k1 1.2, b 0.75) against a typical length of 100 terms:
    # the order in which a term's postings are read, best first. Scores are computed exactly at query time.
    impact = models.GeneratedField(
        expression=models.ExpressionWrapper(
            Cast("term_frequency", models.FloatField()) / (F("term_frequency") + 0.3 + 0.009 * F("chunk_length")),
            output_field=models.FloatField(),
        ),
        output_field=models.FloatField(),
        db_persist=True,
    )

    class Meta:
        indexes = [models.Index(F("collection"), "lexeme", F("impact").desc(), "chunk", name="posting_by_impact")]

    def __str__(self) -> str:
        return f"{self.lexeme} ×{self.term_frequency} in chunk {self.chunk_id}"


class GlossaryEntry(models.Model):
    """An abbreviation or customer phrase and what it means in the help centre ("money back" → "refund").

    Applied to queries as expansion: the meaning is added, the customer's words are kept.
    """

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="glossary")
    phrase = models.CharField(max_length=100, help_text="What customers type, e.g. KCC or money back.")
    meaning = models.CharField(max_length=300, help_text="What the articles call it, e.g. Kisan Credit Card.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["collection", "phrase"], name="unique_glossary_phrase")]
        ordering = ["collection", "phrase"]
        verbose_name_plural = "glossary entries"

    def __str__(self) -> str:
        return f"{self.phrase} → {self.meaning}"

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        self.phrase, self.meaning = self.phrase.strip(), self.meaning.strip()
        if not self.phrase or not self.meaning:
            raise ValidationError("Both the phrase and its meaning are needed.")
