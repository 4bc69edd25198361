"""The help centre in the admin: collections, articles and their versions, chunks, sources and sync runs."""

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Max, QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import formats, timezone
from django.utils.html import format_html, format_html_join

from knowledge import publishing, tasks
from knowledge.api import issue_token
from knowledge.errors import KnowledgeError
from knowledge.models import (
    Article,
    ArticleVersion,
    Chunk,
    Collection,
    EmbeddingSpace,
    GlossaryEntry,
    IngestionToken,
    Source,
    SyncRun,
    SyncTrigger,
    VersionStatus,
)
from knowledge.sources import read_zip
from knowledge.sync import error_text


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
    fields = ["name", "description", "business_name", "helps_with", "tone", *readonly_fields[1:]]

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


class UploadMarkdownForm(forms.Form):
    collection = forms.SlugField(
        max_length=100,
        # The one the chat serves (CHAT_COLLECTION), not the demo's unless the chat serves the demo.
        initial=lambda: settings.CHAT_COLLECTION,
        help_text="An existing collection, or a new one (letters, digits, - and _).",
    )
    archive = forms.FileField(
        help_text="A .zip of Markdown files with front matter (the article format of `manage.py ingest`), or of "
        "plain Markdown and HTML files without it (title, id, version and date assumed); folders inside are fine."
    )
    whole_collection = forms.BooleanField(
        required=False,
        label="This is the whole collection",
        help_text="Retire the collection's articles that the archive does not hold. Leave it off to add or update "
        "only the articles inside.",
    )

    def clean_archive(self) -> Any:
        archive = self.cleaned_data["archive"]
        if archive.size > settings.INGEST_MAX_UPLOAD_BYTES:
            raise forms.ValidationError(
                f"The file is {archive.size:,} bytes, over the limit of {settings.INGEST_MAX_UPLOAD_BYTES:,} bytes."
            )
        return archive


@admin.register(Article)
class ArticleAdmin(admin.ModelAdmin):
    list_display = ["slug", "title", "collection", "product", "language", "retired_at"]
    list_filter = ["collection", "product", "language"]
    search_fields = ["slug", "title"]
    readonly_fields = ["collection", "slug", "retired_at", "created_at", "updated_at"]
    inlines = [VersionInline]

    def get_urls(self) -> list[URLPattern]:
        upload = path("upload/", self.admin_site.admin_view(self.upload_view), name="knowledge_article_upload")
        return [upload, *super().get_urls()]

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        context = {**(extra_context or {}), "can_upload": request.user.has_perm("knowledge.add_article")}
        return super().changelist_view(request, context)

    def upload_view(self, request: HttpRequest) -> HttpResponse:
        """Sync a collection with a zip of Markdown files, as `manage.py ingest ARCHIVE.zip` does: read and
        checked in this request, written by the ingestion workers; the run's page follows it."""
        if not request.user.has_perm("knowledge.add_article"):
            raise PermissionDenied
        form = UploadMarkdownForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            read = read_zip(
                data["archive"].name,
                data["archive"].read(),
                max_bytes=settings.INGEST_MAX_FILE_BYTES,
                today=timezone.localdate(),
            )
            try:
                run = tasks.start_documents_run(
                    data["collection"],
                    read,
                    trigger=SyncTrigger.UPLOAD,
                    description=f"upload {data['archive'].name}",
                    retire_missing=data["whole_collection"],
                    requested_by=request.user,
                )
            except KnowledgeError as exc:
                form.add_error(None, str(exc))
            else:
                return redirect("admin:knowledge_syncrun_change", run.pk)
        context = {**self.admin_site.each_context(request), "title": "Upload Markdown", "opts": self.opts, "form": form}
        return TemplateResponse(request, "admin/knowledge/article/upload.html", context)


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
        for version in queryset.select_related("article__collection"):
            run = tasks.start_publish(version, requested_by=request.user)
            link = reverse("admin:knowledge_syncrun_change", args=[run.pk])
            if run.errors:
                self.message_user(request, run.errors[0]["message"], messages.ERROR)
            elif run.ended:
                self.message_user(request, f"{version}: published.", messages.SUCCESS)
            else:
                note = format_html('{}: <a href="{}">publishing (sync run {})</a>.', version, link, run.pk)
                self.message_user(request, note, messages.INFO)

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


def run_progress(run: SyncRun) -> dict[str, Any]:
    """What the run's admin page shows, and refreshes while the run goes on."""
    return {
        "status": run.get_status_display(),
        "ended": run.ended,
        "articles": f"{run.articles_done} of {run.articles}",
        "documents": run.document_counts,
        "chunks": str(run.chunks),
        "embedding_calls": str(run.embedding_calls),
        "problems": [*run.warnings, *map(error_text, run.errors)],
        "finished_at": formats.localize(timezone.localtime(run.finished_at)) if run.finished_at else "-",
    }


@admin.register(SyncRun)
class SyncRunAdmin(ReadOnlyAdmin):
    list_display = ["pk", "collection", "trigger", "description", "status", "progress", "failed", "created_at"]
    list_filter = ["status", "trigger", "collection"]
    search_fields = ["description"]
    readonly_fields = (
        "collection",
        "source",
        "trigger",
        "description",
        "requested_by",
        "status",
        "progress",
        "documents",
        "chunks",
        "embedding_calls",
        "problems",
        "created_at",
        "started_at",
        "finished_at",
    )
    fields = readonly_fields
    change_form_template = "admin/knowledge/syncrun/change_form.html"

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.has_perm("knowledge.view_article")

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.progress_view)
        return [path("<int:run_id>/progress/", view, name="knowledge_syncrun_progress"), *super().get_urls()]

    def progress_view(self, request: HttpRequest, run_id: int) -> JsonResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        return JsonResponse(run_progress(get_object_or_404(SyncRun, pk=run_id)))

    @admin.display(description="articles written")
    def progress(self, obj: SyncRun) -> str:
        return str(run_progress(obj)["articles"])

    @admin.display(description="documents")
    def documents(self, obj: SyncRun) -> str:
        return str(run_progress(obj)["documents"])

    @admin.display(description="errors and warnings")
    def problems(self, obj: SyncRun) -> str:
        lines = run_progress(obj)["problems"]
        return format_html_join("\n", "<div>{}</div>", ((line,) for line in lines)) or "none"


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    list_display = ["location", "collection", "kind", "audience", "resync_minutes", "last_run"]
    list_filter = ["collection", "kind"]
    search_fields = ["location"]
    actions = ["sync_now"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Source]:
        return super().get_queryset(request).select_related("collection").annotate(last_run_at=Max("runs__created_at"))

    @admin.display(description="last sync started", ordering="last_run_at")
    def last_run(self, obj: Source) -> Any:
        return getattr(obj, "last_run_at", None)

    @admin.action(description="Sync now")
    def sync_now(self, request: HttpRequest, queryset: QuerySet[Source]) -> None:
        for source in queryset:
            run = tasks.start_source_run(source, trigger=SyncTrigger.ADMIN, requested_by=request.user)
            link = reverse("admin:knowledge_syncrun_change", args=[run.pk])
            self.message_user(
                request,
                format_html(
                    '<a href="{}">Sync run {}</a> of {}: {}.', link, run.pk, source.location, run.get_status_display()
                ),
            )


class IngestionTokenForm(forms.ModelForm):
    class Meta:
        model = IngestionToken
        fields = ["collection", "name"]


@admin.register(IngestionToken)
class IngestionTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "collection", "prefix", "created_by", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["collection"]
    readonly_fields = ["prefix", "created_by", "created_at", "last_used_at", "revoked_at"]
    form = IngestionTokenForm
    actions = ["revoke"]

    def get_readonly_fields(self, request: HttpRequest, obj: IngestionToken | None = None) -> list[str]:
        # A key is for one collection: moving it would hand one collection's key to another.
        return [*self.readonly_fields, "collection"] if obj is not None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: IngestionToken, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        key = issue_token(obj)
        obj.created_by = request.user  # type: ignore[assignment]
        super().save_model(request, obj, form, change)
        self.message_user(
            request,
            f"The key of {obj.name}, shown this once (only its hash is kept): {key}",
            messages.WARNING,
        )

    @admin.action(description="Revoke (the key stops working at once)")
    def revoke(self, request: HttpRequest, queryset: QuerySet[IngestionToken]) -> None:
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)
