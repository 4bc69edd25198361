"""The lab's runs moved from the conversations app with their rows: migrating forward keeps them."""

from collections.abc import Sequence

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE: list[tuple[str, str | None]] = [("conversations", "0006_provider_and_model"), ("lab", None)]
OLD_STATE = ("conversations", "0006_provider_and_model")
AFTER: list[tuple[str, str]] = [("conversations", "0007_evaluation_runs_to_lab"), ("lab", "0001_initial")]


def migrate(targets: Sequence[tuple[str, str | None]]) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor


@pytest.mark.django_db(transaction=True)
def test_runs_and_their_results_move_to_the_lab_with_their_rows():
    try:
        old = migrate(BEFORE).loader.project_state(OLD_STATE).apps
        run = old.get_model("conversations", "EvaluationRun").objects.create(
            kind="answers", dataset="golden.jsonl", fingerprint="minilm", figures={"mrr": 0.8}
        )
        old.get_model("conversations", "EvaluationResult").objects.create(run=run, question_id="q1", result={"ok": 1})

        new = migrate(AFTER).loader.project_state(AFTER).apps
        moved = new.get_model("lab", "EvaluationRun").objects.get(pk=run.pk)
        assert moved.figures == {"mrr": 0.8} and moved.dataset == "golden.jsonl"
        assert [r.question_id for r in moved.results.all()] == ["q1"]
        content_types = new.get_model("contenttypes", "ContentType").objects
        assert not content_types.filter(app_label="conversations", model="evaluationrun").exists()
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
