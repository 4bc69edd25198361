"""The lab's runs, moved from the conversations app: the tables (renamed by conversations 0007) keep their
rows, so only the models' state is created here; their content types follow, so permissions and admin log
entries stay attached."""

import django.db.models.deletion
from django.db import migrations, models

from supportbot.content_types import move_content_types


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("conversations", "0007_evaluation_runs_to_lab"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="EvaluationRun",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "kind",
                            models.CharField(
                                choices=[
                                    ("answers", "Answers (golden set)"),
                                    ("fusion", "Fusion experiment"),
                                    ("threshold", "Threshold experiment"),
                                    ("chunking", "Chunking experiment"),
                                ],
                                max_length=10,
                            ),
                        ),
                        ("dataset", models.CharField(max_length=300)),
                        ("settings", models.JSONField(default=dict, help_text="The settings that shape the result.")),
                        (
                            "fingerprint",
                            models.CharField(help_text="The embedding models of the collection.", max_length=300),
                        ),
                        ("figures", models.JSONField(default=dict)),
                        ("plots", models.JSONField(default=dict, help_text="PNG plots, base64, by name.")),
                        ("started_at", models.DateTimeField(auto_now_add=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                    ],
                    options={"ordering": ["-started_at"]},
                ),
                migrations.CreateModel(
                    name="EvaluationResult",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("question_id", models.CharField(max_length=100)),
                        ("result", models.JSONField()),
                        (
                            "run",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="results",
                                to="lab.evaluationrun",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["run", "id"],
                        "constraints": [
                            models.UniqueConstraint(fields=("run", "question_id"), name="unique_run_question")
                        ],
                    },
                ),
            ]
        ),
        move_content_types(["evaluationrun", "evaluationresult"], "conversations", "lab"),
    ]
