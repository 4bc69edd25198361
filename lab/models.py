"""Measured runs of the evaluation lab, kept so runs can be compared."""

from pathlib import Path

from django.conf import settings
from django.db import models


class EvaluationKind(models.TextChoices):
    ANSWERS = "answers", "Answers (golden set)"
    FUSION = "fusion", "Fusion experiment"
    THRESHOLD = "threshold", "Threshold experiment"
    CHUNKING = "chunking", "Chunking experiment"
    MODELS = "models", "Answer-model experiment"


class EvaluationRun(models.Model):
    """One measured run, kept so runs can be compared: what was run, with which settings and models, and
    what it measured (with its plots)."""

    kind = models.CharField(max_length=10, choices=EvaluationKind.choices)
    dataset = models.CharField(max_length=300)
    settings = models.JSONField(default=dict, help_text="The settings that shape the result.")
    fingerprint = models.CharField(max_length=300, help_text="The embedding models of the collection.")
    figures = models.JSONField(default=dict)
    plots = models.JSONField(default=dict, help_text="PNG plots, base64, by name.")
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        state = "finished" if self.finished_at else "unfinished"
        return f"{self.get_kind_display()} on {Path(self.dataset).name} ({state}, {self.started_at:%Y-%m-%d %H:%M})"


class EvaluationResult(models.Model):
    """One question's result within a run: written as soon as it is known, so an interrupted run resumes
    without redoing finished questions."""

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="results")
    question_id = models.CharField(max_length=100)
    result = models.JSONField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "question_id"], name="unique_run_question")]
        ordering = ["run", "id"]

    def __str__(self) -> str:
        return f"{self.run_id}:{self.question_id}"


class GoldenCandidate(models.Model):
    """A question from a real conversation that staff turned into a golden-set entry (down-voted or referred
    turns): the section that answers it and the fact, exported in the golden JSONL format."""

    turn = models.ForeignKey(
        "conversations.Turn", null=True, blank=True, on_delete=models.SET_NULL, related_name="golden_candidates"
    )
    question = models.TextField(help_text="Masked, as the turn stored it; staff may edit it.")
    answerable = models.BooleanField(default=True)
    # Article slug and heading path rather than a chunk: chunks are replaced when the article is re-indexed.
    article_slug = models.CharField(max_length=200, blank=True)
    heading_path = models.CharField(max_length=1000, blank=True)
    fact = models.TextField(blank=True, help_text="The words of the section that answer the question.")
    audience = models.CharField(max_length=10, default="public")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="golden_candidates"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"candidate: {self.question[:60]}"
