"""Moving models between apps in a migration keeps their tables (renamed) and rows; their content types have to
follow too, or their permissions and admin log entries would point at a model that no longer exists."""

from collections.abc import Collection

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps


def move_content_types(models: Collection[str], source: str, target: str) -> migrations.RunPython:
    """A reversible migration step relabelling the content types of `models` (lower-case model names) from
    app `source` to app `target`."""

    def relabel(old: str, new: str):  # type: ignore[no-untyped-def]
        def run(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
            content_types = apps.get_model("contenttypes", "ContentType")
            content_types.objects.filter(app_label=old, model__in=models).update(app_label=new)

        return run

    return migrations.RunPython(relabel(source, target), relabel(target, source))
