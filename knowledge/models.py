"""The knowledge base: collections bound to an embedding space, versioned articles, and their chunks."""

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import F
from django.db.models.functions import Cast
from pgvector.django import VectorField

from knowledge.sources import named_by_content

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
    # The fusion fitted to this collection's own questions (`manage.py fit_fusion`): {"weights": {stage:
    # weight}, "rerank_blend": b, "fitted_on": ..., ...}. Empty: the settings' default fusion.
    fusion = models.JSONField(default=dict, blank=True)
    # Whom the assistant speaks for when it serves this collection: the widget's greeting, the help pages'
    # title and the model prompt say it (knowledge/voice.py). Empty: said without a name.
    business_name = models.CharField(max_length=200, blank=True, help_text="The business the assistant speaks for.")
    helps_with = models.CharField(
        max_length=300,
        blank=True,
        help_text='What the assistant helps with, as the widget greets customers: "orders, delivery and returns".',
    )
    tone = models.TextField(
        blank=True,
        max_length=1000,
        help_text="A few lines on how replies should sound, for a language model (e.g. 'Warm and brief.').",
    )

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
    summary = models.CharField(
        max_length=1000, blank=True, help_text="What the article is about, in a line (its front matter's description)."
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

    @property
    def named_by_content(self) -> bool:
        """Whether the version is named after its content (a page without a version of its own): its label is
        then a hash, which nobody should be shown."""
        return named_by_content(self.version_label, self.content_hash)


class Chunk(models.Model):
    version = models.ForeignKey(ArticleVersion, on_delete=models.CASCADE, related_name="chunks")
    # The version's article's collection, kept on the chunk (a trigger refuses any other) so that each
    # collection's partial HNSW graphs (knowledge/vector_indexes.py) match the search's own filter.
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="chunks")
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
        # The vector indexes are per collection, made and dropped with it: knowledge/vector_indexes.py.
        indexes = [
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


class SourceKind(models.TextChoices):
    WEB = "web", "Web page or sitemap"
    ZENDESK = "zendesk", "Zendesk Help Center export"
    MARKDOWN = "markdown", "Markdown folder or zip on the server"


class Source(models.Model):
    """Where a collection's articles live, kept so that it can be synced again, by hand or on a schedule."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="sources")
    kind = models.CharField(max_length=20, choices=SourceKind.choices)
    location = models.CharField(max_length=2000, help_text="The page or sitemap address, or the path on the server.")
    audience = models.CharField(
        max_length=10, choices=Audience.choices, default=Audience.PUBLIC, help_text="Web pages: who may read them."
    )
    segments = models.JSONField(
        default=dict, blank=True, help_text='Zendesk: user segment id → audience, e.g. {"360001": "member"}.'
    )
    public_only = models.BooleanField(
        default=False,
        help_text="Fetched only while its host resolves to public addresses (sources posted to the ingestion API).",
    )
    resync_minutes = models.PositiveIntegerField(
        null=True, blank=True, help_text="Sync again this many minutes after the last sync started; empty: never."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["collection", "location"], name="unique_source_location")]
        ordering = ["collection", "location"]

    def __str__(self) -> str:
        return f"{self.collection.name}: {self.location}"

    def clean(self) -> None:
        from urllib.parse import urlsplit

        from django.core.exceptions import ValidationError

        if self.kind == SourceKind.WEB:
            parts = urlsplit(self.location)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValidationError({"location": "A web source is an http(s) address."})
        elif not self.location.startswith("/"):
            raise ValidationError({"location": "A path on the server, from the root (/srv/help/articles)."})
        if not isinstance(self.segments, dict):
            raise ValidationError({"segments": 'A mapping of segment id to audience, e.g. {"360001": "member"}.'})
        for segment, audience in self.segments.items():
            if not str(segment).isdigit() or audience not in Audience.values:
                raise ValidationError(
                    {"segments": f"{segment!r}: {audience!r} is not a segment id (digits) mapped to an audience."}
                )


class SyncTrigger(models.TextChoices):
    COMMAND = "command", "Command line"
    UPLOAD = "upload", "Upload in the admin"
    ADMIN = "admin", "Sync from the admin"
    PUBLISH = "publish", "Publish in the admin"
    API = "api", "Ingestion API"
    SCHEDULE = "schedule", "Schedule"


class SyncStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    READING = "reading", "Reading the source"
    INDEXING = "indexing", "Indexing"
    FINISHED = "finished", "Finished"
    FAILED = "failed", "Failed"


class SyncRun(models.Model):
    """One sync of a collection with a source: what it found, wrote and could not read, updated as it goes.

    Document counts (new, changed, unchanged, failed) are versions; `articles` and `articles_done` are the
    per-article tasks, which say how far it is."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="sync_runs")
    source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    trigger = models.CharField(max_length=20, choices=SyncTrigger.choices)
    description = models.CharField(max_length=2000, help_text="What was synced: a path, an address, an upload.")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=20, choices=SyncStatus.choices, default=SyncStatus.QUEUED)
    # The articles of the whole source, when it lists them all: the others are retired at the end.
    present_slugs = models.JSONField(null=True, blank=True)
    boilerplate = models.JSONField(default=list, blank=True)
    articles = models.PositiveIntegerField(default=0)
    articles_done = models.PositiveIntegerField(default=0)
    new = models.PositiveIntegerField(default=0)
    changed = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    retired = models.PositiveIntegerField(default=0)
    chunks = models.PositiveIntegerField(default=0)
    embedding_calls = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True, help_text="One {path, line, field, message} per failure.")
    warnings = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["source", "-created_at"], name="sync_run_by_source")]

    def __str__(self) -> str:
        return f"sync run {self.pk} of {self.collection.name}"

    @property
    def ended(self) -> bool:
        return self.status in (SyncStatus.FINISHED, SyncStatus.FAILED)

    @property
    def document_counts(self) -> str:
        return (
            f"{self.new} new, {self.changed} changed, {self.unchanged} unchanged, {self.failed} failed, "
            f"{self.retired} retired"
        )


class SyncArticle(models.Model):
    """One article's versions to write in a sync run: the unit of work of one background task."""

    run = models.ForeignKey(SyncRun, on_delete=models.CASCADE, related_name="work")
    slug = models.CharField(max_length=200)
    documents = models.JSONField(help_text="The article's source documents, oldest version first.")
    done_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "slug"], name="unique_sync_article")]

    def __str__(self) -> str:
        return f"{self.slug} in sync {self.run_id}"


class IngestionToken(models.Model):
    """A key to the ingestion API for one collection. Only its SHA-256 is stored: the key is shown once."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="ingestion_tokens")
    name = models.CharField(max_length=100, help_text="Who or what uses it, e.g. 'CMS publish hook'.")
    key_sha256 = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(
        max_length=12, editable=False, help_text="The key's first characters, to tell keys apart."
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["collection", "name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"
