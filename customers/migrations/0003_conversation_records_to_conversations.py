"""Conversation summaries and refund decisions move to the conversations app, which records what happens in
conversations, so this app no longer depends on it: their tables are renamed here, with their rows, and
conversations 0008 takes the models over."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("customers", "0002_provider_and_model"),
        ("conversations", "0007_evaluation_runs_to_lab"),
    ]

    operations = [
        migrations.AlterModelTable(name="conversationsummary", table="conversations_conversationsummary"),
        migrations.AlterModelTable(name="refunddecision", table="conversations_refunddecision"),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name="refunddecision",
                    name="conversation",
                ),
                migrations.RemoveField(
                    model_name="refunddecision",
                    name="order",
                ),
                migrations.DeleteModel(
                    name="ConversationSummary",
                ),
                migrations.DeleteModel(
                    name="RefundDecision",
                ),
            ]
        ),
    ]
