"""Models moved between apps keep their rows: the lab's runs (from conversations), and conversation summaries
and refund decisions (from customers, so that customers depends on nothing of conversations)."""

from collections.abc import Sequence
from datetime import date

import pytest
from django.apps.registry import Apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.customers.helpers import make_collection

BEFORE: list[tuple[str, str | None]] = [
    ("conversations", "0006_provider_and_model"),
    ("customers", "0002_provider_and_model"),
    ("lab", None),
]
AFTER: list[tuple[str, str]] = [
    ("conversations", "0008_conversation_records_from_customers"),
    ("customers", "0003_conversation_records_to_conversations"),
    ("lab", "0001_initial"),
]


def migrate(targets: Sequence[tuple[str, str | None]]) -> Apps:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state([t for t in targets if t[1] is not None]).apps  # type: ignore[misc]


@pytest.mark.django_db(transaction=True)
def test_moved_models_keep_their_rows_and_content_types():
    try:
        collection_id = make_collection().pk  # the knowledge app's tables are not migrated back
        old = migrate(BEFORE)
        run = old.get_model("conversations", "EvaluationRun").objects.create(
            kind="answers", dataset="golden.jsonl", fingerprint="minilm", figures={"mrr": 0.8}
        )
        old.get_model("conversations", "EvaluationResult").objects.create(run=run, question_id="q1", result={"ok": 1})
        customer = old.get_model("customers", "Customer").objects.create(external_id="c-moved")
        order = old.get_model("customers", "Order").objects.create(
            number="9001", customer=customer, status="delivered", placed_on=date(2026, 1, 2), total="20.00"
        )
        conversation = old.get_model("conversations", "Conversation").objects.create(
            collection_id=collection_id, customer=customer
        )
        old.get_model("customers", "ConversationSummary").objects.create(
            customer=customer, conversation=conversation, text="asked about returns"
        )
        old.get_model("customers", "RefundDecision").objects.create(
            order=order,
            amount="5.00",
            approved=True,
            reason="within limit",
            requested_via="intent",
            conversation=conversation,
        )

        new = migrate(AFTER)
        moved = new.get_model("lab", "EvaluationRun").objects.get(pk=run.pk)
        assert moved.figures == {"mrr": 0.8} and [r.question_id for r in moved.results.all()] == ["q1"]
        summary = new.get_model("conversations", "ConversationSummary").objects.get()
        assert summary.text == "asked about returns" and summary.conversation_id == conversation.pk
        refund = new.get_model("conversations", "RefundDecision").objects.get()
        assert (refund.order.number, refund.conversation_id, str(refund.amount)) == ("9001", conversation.pk, "5.00")
        labels = set(new.get_model("contenttypes", "ContentType").objects.values_list("app_label", "model"))
        assert {("lab", "evaluationrun"), ("conversations", "refunddecision")} <= labels
        assert not labels & {("conversations", "evaluationrun"), ("customers", "refunddecision")}
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
