"""The evaluation lab's runs move to the lab app: their tables are renamed here, with their rows, and the
lab's first migration takes the models over."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0006_provider_and_model"),
    ]

    operations = [
        migrations.AlterModelTable(name="evaluationresult", table="lab_evaluationresult"),
        migrations.AlterModelTable(name="evaluationrun", table="lab_evaluationrun"),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="EvaluationResult"),
                migrations.DeleteModel(name="EvaluationRun"),
            ]
        ),
    ]
