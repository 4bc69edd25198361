"""Conversation summaries and refund decisions, moved from the customers app with their rows (the tables were
renamed by customers 0003): only the models' state is created here, and their content types follow."""

import django.db.models.deletion
from django.db import migrations, models

from supportbot.content_types import move_content_types


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0007_evaluation_runs_to_lab"),
        ("customers", "0003_conversation_records_to_conversations"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ConversationSummary",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("text", models.TextField()),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "conversation",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="summary",
                                to="conversations.conversation",
                            ),
                        ),
                        (
                            "customer",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="summaries",
                                to="customers.customer",
                            ),
                        ),
                    ],
                    options={
                        "verbose_name_plural": "conversation summaries",
                        "ordering": ["customer", "-updated_at"],
                    },
                ),
                migrations.CreateModel(
                    name="RefundDecision",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("amount", models.DecimalField(decimal_places=2, max_digits=10)),
                        ("approved", models.BooleanField()),
                        ("reason", models.TextField()),
                        (
                            "requested_via",
                            models.CharField(
                                help_text='The provider whose tool call asked ("anthropic", "openai"; older rows: "claude"), or "intent".',
                                max_length=20,
                            ),
                        ),
                        ("decided_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "conversation",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="refunds",
                                to="conversations.conversation",
                            ),
                        ),
                        (
                            "order",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="refund_decisions",
                                to="customers.order",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["-decided_at"],
                    },
                ),
            ]
        ),
        move_content_types(["conversationsummary", "refunddecision"], "customers", "conversations"),
    ]
