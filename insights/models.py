"""What staff and article authors learn from the conversations: content gaps mined from the questions the
assistant could not answer (outcome analytics are computed from the conversations themselves)."""

from django.db import models


class ContentGapRun(models.Model):
    """One clustering of the abstained and referred questions of a collection (manage.py content_gaps or the
    admin), with the settings it used."""

    collection = models.ForeignKey("knowledge.Collection", on_delete=models.CASCADE, related_name="content_gap_runs")
    questions = models.PositiveIntegerField(help_text="Questions clustered.")
    settings = models.JSONField(default=dict, help_text="The clustering's parameters.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"content gaps of {self.collection} ({self.created_at:%Y-%m-%d %H:%M})"


class ContentGap(models.Model):
    """A cluster of unanswered questions that mean the same thing, with the nearest existing section."""

    run = models.ForeignKey(ContentGapRun, on_delete=models.CASCADE, related_name="gaps")
    size = models.PositiveIntegerField()
    examples = models.JSONField(default=list, help_text="Example questions (masked), most central first.")
    turn_ids = models.JSONField(default=list, help_text="Every clustered turn.")
    nearest_article_slug = models.CharField(max_length=200, blank=True)
    nearest_heading_path = models.CharField(max_length=1000, blank=True)
    nearest_score = models.FloatField(null=True, blank=True, help_text="Cosine similarity to the nearest section.")
    newest_at = models.DateTimeField(help_text="When the newest question of the cluster was asked.")
    draft = models.ForeignKey(
        "knowledge.ArticleVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="content_gaps"
    )

    class Meta:
        ordering = ["run", "-newest_at", "-size"]

    def __str__(self) -> str:
        return f"{self.size} × {self.examples[0] if self.examples else '?'}"
