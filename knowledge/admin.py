from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from knowledge import publishing
from knowledge.embeddings import default_embedder, secondary_embedder
from knowledge.errors import KnowledgeError
from knowledge.models import (
    Article,
    ArticleVersion,
    Chunk,
    Collection,
    EmbeddingSpace,
    GlossaryEntry,
    VersionStatus,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(EmbeddingSpace)
class EmbeddingSpaceAdmin(ReadOnlyAdmin):
    list_display = ["model_name", "dimension", "weights_sha256", "created_at"]


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ["name", "embedding_space", "article_count", "chunk_count", "last_synced_at"]
    readonly_fields = ["name", "embedding_space", "article_count", "chunk_count", "last_synced_at", "created_at"]
    fields = ["name", "description", *readonly_fields[1:]]

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A collection is born from `manage.py ingest`, which binds it to the model that embeds it.
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Collection]:
        return super().get_queryset(request).select_related("embedding_space").annotate(n_articles=Count("articles"))

    @admin.display(description="articles", ordering="n_articles")
    def article_count(self, obj: Collection) -> int:
        return getattr(obj, "n_articles", obj.articles.count())


class VersionInline(admin.TabularInline):
    model = ArticleVersion
    fields = readonly_fields = ("link", "status", "audience", "effective_date", "indexed_at")
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="version")
    def link(self, obj: ArticleVersion) -> str:
        return format_html('<a href="../../articleversion/{}/change/">v{}</a>', obj.pk, obj.version_label)


@admin.register(Article)
class ArticleAdmin(admin.ModelAdmin):
    list_display = ["slug", "title", "collection", "product", "language", "retired_at"]
    list_filter = ["collection", "product", "language"]
    search_fields = ["slug", "title"]
    readonly_fields = ["collection", "slug", "retired_at", "created_at", "updated_at"]
    inlines = [VersionInline]


class ChunkInline(admin.TabularInline):
    model = Chunk
    fields = readonly_fields = ("ordinal", "heading_path", "token_count", "text")
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ArticleVersion)
class ArticleVersionAdmin(admin.ModelAdmin):
    list_display = ["article", "version_label", "status", "audience", "effective_date", "chunk_count", "indexed_at"]
    list_filter = ["status", "audience", "article__collection"]
    search_fields = ["article__slug", "article__title", "version_label"]
    inlines = [ChunkInline]
    actions = ["new_draft", "send_for_review", "publish"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        # New versions start as a draft copy of an existing one ("New draft from this version").
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: ArticleVersion | None = None) -> list[str]:
        always = [
            "article",
            "status",
            "supersedes",
            "content_hash",
            "chunking",
            "source_path",
            "author",
            "created_at",
            "updated_at",
            "indexed_at",
        ]
        if obj is not None and obj.status not in (VersionStatus.DRAFT, VersionStatus.IN_REVIEW):
            # Published text changes only through a new draft, so what customers saw stays on record.
            return [*always, "version_label", "body"]
        return always

    def get_queryset(self, request: HttpRequest) -> QuerySet[ArticleVersion]:
        return super().get_queryset(request).select_related("article").annotate(n_chunks=Count("chunks"))

    @admin.display(description="chunks", ordering="n_chunks")
    def chunk_count(self, obj: ArticleVersion) -> int:
        return getattr(obj, "n_chunks", obj.chunks.count())

    @admin.action(description="New draft from this version")
    def new_draft(self, request: HttpRequest, queryset: QuerySet[ArticleVersion]) -> None:
        for version in queryset:
            draft = publishing.new_draft_from(version, author=request.user)
            self.message_user(request, f"Created draft {draft}.", messages.SUCCESS)

    @admin.action(description="Send for review")
    def send_for_review(self, request: HttpRequest, queryset: QuerySet[ArticleVersion]) -> None:
        self._each(request, queryset, publishing.submit_for_review, "sent for review")

    @admin.action(description="Publish (indexes it and supersedes the current version)")
    def publish(self, request: HttpRequest, queryset: QuerySet[ArticleVersion]) -> None:
        embedder, secondary = default_embedder(), secondary_embedder()
        self._each(
            request, queryset, lambda v: publishing.publish(v, embedder=embedder, secondary=secondary), "published"
        )

    def _each(self, request: HttpRequest, queryset: QuerySet[ArticleVersion], step: Any, done: str) -> None:
        for version in queryset:
            try:
                step(version)
            except KnowledgeError as exc:
                self.message_user(request, str(exc), messages.ERROR)
            else:
                self.message_user(request, f"{version}: {done}.", messages.SUCCESS)


@admin.register(GlossaryEntry)
class GlossaryEntryAdmin(admin.ModelAdmin):
    list_display = ["phrase", "meaning", "collection", "updated_at"]
    list_filter = ["collection"]
    search_fields = ["phrase", "meaning"]
