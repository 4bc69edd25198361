"""The lab's runs in the admin: the latest side by side, with their headline figures and plots."""

from django.contrib import admin
from django.utils.html import format_html_join
from django.utils.safestring import SafeString

from lab.models import EvaluationRun
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
