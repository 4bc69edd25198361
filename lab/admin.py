"""The lab in the admin: the latest runs side by side, with their headline figures and plots; golden-set
candidates made from real turns, and their export."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils.html import format_html_join
from django.utils.safestring import SafeString

from conversations.models import Turn
from lab.errors import GoldenCandidateError
from lab.golden_candidates import (
    MAX_QUESTION_CHARS,
    Section,
    check_candidate,
    create_candidate,
    golden_jsonl,
    published_sections,
    suggested_question,
    turn_sections,
)
from lab.models import EvaluationRun, GoldenCandidate
from supportbot.admin_helpers import ReadOnly, html_table

HEADLINE = ("recall@3", "mrr", "answer_correct", "abstention_correct", "audience_leaks", "unsupported_shipped")


@admin.register(EvaluationRun)
class EvaluationRunAdmin(ReadOnly, admin.ModelAdmin):
    """The latest runs side by side: their headline figures and plots, so a change's effect is visible."""

    list_display = ("started_at", "kind", "dataset_name", "finished_at", "headline", "thumbnails")
    list_filter = ("kind",)
    fields = (
        "kind",
        "dataset",
        "fingerprint",
        "settings_table",
        "figures_table",
        "plot_images",
        "started_at",
        "finished_at",
    )
    readonly_fields = fields

    @admin.display(description="dataset")
    def dataset_name(self, obj: EvaluationRun) -> str:
        return obj.dataset.rsplit("/", 1)[-1]

    @admin.display(description="figures")
    def headline(self, obj: EvaluationRun) -> str:
        if "rows" in obj.figures:
            return f"{len(obj.figures['rows'])} settings compared"
        return " · ".join(f"{k} {obj.figures[k]}" for k in HEADLINE if k in obj.figures)

    def _images(self, obj: EvaluationRun, width: int) -> SafeString:
        return format_html_join(
            " ",
            '<img src="data:image/png;base64,{}" alt="{}" width="{}">',
            ((data, name.replace("_", " "), width) for name, data in obj.plots.items()),
        )

    @admin.display(description="plots")
    def thumbnails(self, obj: EvaluationRun) -> SafeString:
        return self._images(obj, 180)

    @admin.display(description="plots")
    def plot_images(self, obj: EvaluationRun) -> SafeString:
        return self._images(obj, 720)

    @admin.display(description="settings")
    def settings_table(self, obj: EvaluationRun) -> SafeString:
        return html_table(["setting", "value"], obj.settings.items())

    @admin.display(description="figures")
    def figures_table(self, obj: EvaluationRun) -> SafeString:
        rows = obj.figures.get("rows")
        if rows:
            return html_table(list(rows[0]), (r.values() for r in rows))
        return html_table(["measure", "value"], obj.figures.items())


class GoldenCandidateForm(forms.Form):
    """A turn made into a golden-set entry: the question (masked), whether the help centre answers it, and if
    so the section that does and the fact from it."""

    question = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}), max_length=MAX_QUESTION_CHARS)
    answerable = forms.TypedChoiceField(
        choices=[("yes", "Yes: a published section answers it"), ("no", "No: the help centre does not cover it")],
        coerce=lambda value: value == "yes",
        widget=forms.RadioSelect,
    )
    section = forms.ChoiceField(required=False, help_text="The deepest section whose own text holds the answer.")
    fact = forms.CharField(
        required=False,
        widget=forms.TextInput(attrs={"size": 80}),
        help_text="A few words copied from that section that a right answer must contain.",
    )

    def __init__(self, *args: Any, turn: Turn, sections: list[Section], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.turn = turn
        self.by_key = {s.key: s for s in sections}
        found = turn_sections(turn, sections)
        choices: list[Any] = [("", "— none —")]
        if found:
            choices.append(("Found by this turn", [(s.key, f"{s.article} › {s.heading_path}") for s in found]))
        choices.append(("Every published section", [(s.key, f"{s.article} › {s.heading_path}") for s in sections]))
        section = self.fields["section"]
        assert isinstance(section, forms.ChoiceField)
        section.choices = choices

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if self.errors:
            return data
        try:
            check_candidate(
                question=data["question"],
                answerable=data["answerable"],
                section=self.by_key.get(data["section"]),
                fact=data["fact"],
            )
        except GoldenCandidateError as exc:
            self.add_error(exc.field, str(exc))
        return data


@admin.register(GoldenCandidate)
class GoldenCandidateAdmin(admin.ModelAdmin):
    """Candidates are made from a turn (the button on its admin page), checked there; here they are read,
    exported, or deleted."""

    list_display = (
        "question",
        "answerable",
        "article_slug",
        "heading_path",
        "fact",
        "turn",
        "created_by",
        "created_at",
    )
    list_filter = ("answerable", "audience")
    search_fields = ("question", "article_slug", "heading_path", "fact")
    list_select_related = ("turn", "created_by")
    fields = readonly_fields = (
        "turn",
        "question",
        "answerable",
        "audience",
        "article_slug",
        "heading_path",
        "fact",
        "created_by",
        "created_at",
    )
    actions = ["export_jsonl"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Only from a turn, through the checked form below.
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        from_turn = path(
            "from-turn/<int:turn_id>/",
            self.admin_site.admin_view(self.from_turn_view),
            name="lab_goldencandidate_from_turn",
        )
        return [from_turn, *super().get_urls()]

    def from_turn_view(self, request: HttpRequest, turn_id: int) -> HttpResponse:
        if not (request.user.has_perm("lab.add_goldencandidate") and request.user.has_perm("conversations.view_turn")):
            raise PermissionDenied
        turns = Turn.objects.select_related("conversation__collection", "customer_message")
        turn = get_object_or_404(turns, pk=turn_id)
        sections = published_sections(turn.conversation.collection, turn.conversation.audience)
        found = turn_sections(turn, sections)
        if request.method == "POST":
            form = GoldenCandidateForm(request.POST, turn=turn, sections=sections)
            if form.is_valid():
                data = form.cleaned_data
                candidate = create_candidate(
                    turn=turn,
                    question=data["question"],
                    answerable=data["answerable"],
                    section=form.by_key.get(data["section"]),
                    fact=data["fact"],
                    user=request.user,
                )
                self.log_addition(request, candidate, f"Made from turn {turn.pk}.")
                self.message_user(request, f"Golden-set candidate made from turn {turn.pk}.", messages.SUCCESS)
                return redirect("admin:lab_goldencandidate_change", candidate.pk)
        else:
            form = GoldenCandidateForm(
                initial={
                    "question": suggested_question(turn),
                    "answerable": "yes" if found else "no",
                    "section": found[0].key if found else "",
                },
                turn=turn,
                sections=sections,
            )
        context = {
            **self.admin_site.each_context(request),
            "title": f"Golden-set candidate from turn {turn.pk}",
            "opts": self.opts,
            "turn": turn,
            "form": form,
            "found": found,
        }
        return TemplateResponse(request, "admin/lab/goldencandidate/from_turn.html", context)

    @admin.action(description="Export selected as golden JSONL")
    def export_jsonl(self, request: HttpRequest, queryset: QuerySet[GoldenCandidate]) -> HttpResponse:
        response = HttpResponse(golden_jsonl(queryset), content_type="application/jsonl; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="golden-candidates.jsonl"'
        return response
