"""Content gaps in the admin: the runs, their clustered questions, and a form to run one."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join

from insights.errors import GapError
from insights.gaps import DEFAULT_SINCE_DAYS, DEFAULT_THRESHOLD, check_threshold, run_content_gaps, start_draft
from insights.models import ContentGap, ContentGapRun
from knowledge.embeddings import default_embedder
from knowledge.models import Collection

# Who may do what: drafting is article authoring; running the clustering writes a run.
DRAFT_PERMISSION = "knowledge.change_articleversion"
RUN_PERMISSION = "insights.add_contentgaprun"


class RunGapsForm(forms.Form):
    collection = forms.ModelChoiceField(queryset=Collection.objects.order_by("name"), empty_label=None)
    since_days = forms.IntegerField(
        min_value=1, initial=DEFAULT_SINCE_DAYS, label="Questions of the last (days)", help_text="1 or more."
    )
    threshold = forms.FloatField(
        initial=DEFAULT_THRESHOLD,
        help_text="The least average cosine similarity at which two groups of questions merge, between 0 and 1: "
        "higher makes smaller, tighter clusters.",
    )

    def clean_threshold(self) -> float:
        try:
            return check_threshold(self.cleaned_data["threshold"])
        except GapError as exc:
            raise forms.ValidationError(str(exc)) from None


@admin.register(ContentGap)
class ContentGapAdmin(admin.ModelAdmin):
    """Each collection's latest run, newest and largest first: what customers ask that the articles do not say."""

    list_display = ["size", "example_list", "nearest_section", "nearest_score", "newest_at", "draft_link"]
    list_display_links = None
    list_filter = ["run__collection"]
    ordering = ["-newest_at", "-size"]
    change_list_template = "admin/insights/contentgap/change_list.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # gaps are found by a run ("Find content gaps now", or manage.py content_gaps)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[ContentGap]:
        latest = ContentGapRun.objects.filter(collection=OuterRef("run__collection")).order_by("-created_at", "-pk")
        return (
            super()
            .get_queryset(request)
            .filter(run=Subquery(latest.values("pk")[:1]))
            .select_related("run__collection", "draft__article")
        )

    @admin.display(description="questions (most central first)")
    def example_list(self, obj: ContentGap) -> str:
        return format_html("<ol>{}</ol>", format_html_join("", "<li>{}</li>", ((e,) for e in obj.examples)))

    @admin.display(description="nearest published section")
    def nearest_section(self, obj: ContentGap) -> str:
        if not obj.nearest_article_slug:
            return "none"
        return f"{obj.nearest_article_slug} › {obj.nearest_heading_path}"

    @admin.display(description="draft")
    def draft_link(self, obj: ContentGap) -> str:
        if obj.draft is not None:
            url = reverse("admin:knowledge_articleversion_change", args=[obj.draft.pk])
            return format_html('<a href="{}" data-role="gap-draft">{}</a>', url, obj.draft)
        if not obj.nearest_article_slug:
            return "no article to draft from"
        url = reverse("admin:insights_contentgap_draft", args=[obj.pk])
        link = '<a class="button" href="{}" data-role="start-draft">Start a draft article from this</a>'
        return format_html(link, url)

    def get_urls(self) -> list[URLPattern]:
        return [
            path("run/", self.admin_site.admin_view(self.run_view), name="insights_contentgap_run"),
            path("<int:gap_id>/draft/", self.admin_site.admin_view(self.draft_view), name="insights_contentgap_draft"),
            *super().get_urls(),
        ]

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        runs = ContentGapRun.objects.order_by("collection", "-created_at").distinct("collection")
        context = {**(extra_context or {}), "latest_runs": runs, "can_run": request.user.has_perm(RUN_PERMISSION)}
        return super().changelist_view(request, context)

    def _page(self, request: HttpRequest, template: str, title: str, **context: Any) -> TemplateResponse:
        context = {**self.admin_site.each_context(request), "title": title, "opts": self.opts, **context}
        return TemplateResponse(request, f"admin/insights/contentgap/{template}", context)

    def run_view(self, request: HttpRequest) -> HttpResponse:
        if not request.user.has_perm(RUN_PERMISSION):
            raise PermissionDenied
        form = RunGapsForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                run = run_content_gaps(
                    data["collection"],
                    embedder=default_embedder(),
                    since_days=data["since_days"],
                    threshold=data["threshold"],
                )
            except GapError as exc:
                form.add_error(None, str(exc))
            else:
                self.message_user(
                    request,
                    f"{run.questions} unanswered questions of {run.collection} → {run.gaps.count()} content gaps.",
                    messages.SUCCESS,
                )
                return redirect("admin:insights_contentgap_changelist")
        return self._page(request, "run.html", "Find content gaps", form=form)

    def draft_view(self, request: HttpRequest, gap_id: int) -> HttpResponse:
        if not request.user.has_perm(DRAFT_PERMISSION):
            raise PermissionDenied
        gap = get_object_or_404(ContentGap.objects.select_related("run__collection", "draft"), pk=gap_id)
        if request.method == "POST":
            try:
                draft = start_draft(gap, author=request.user)
            except GapError as exc:
                self.message_user(request, str(exc), messages.ERROR)
                return redirect("admin:insights_contentgap_changelist")
            self.message_user(request, f"Started {draft}: write the new section, then send it for review.")
            return redirect("admin:knowledge_articleversion_change", draft.pk)
        return self._page(request, "draft.html", "Start a draft article from this gap", gap=gap)


class ContentGapInline(admin.TabularInline):
    model = ContentGap
    fields = readonly_fields = ("size", "examples", "nearest_article_slug", "nearest_heading_path", "nearest_score")
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ContentGapRun)
class ContentGapRunAdmin(admin.ModelAdmin):
    """Every run, kept with its settings, so the clusters of an older run can still be read."""

    list_display = ["created_at", "collection", "questions", "gap_count"]
    list_filter = ["collection"]
    fields = readonly_fields = ("collection", "questions", "settings", "created_at")
    inlines = [ContentGapInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="gaps")
    def gap_count(self, obj: ContentGapRun) -> int:
        return obj.gaps.count()
