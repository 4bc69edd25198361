"""manage.py policy: a text file made the collection's system policy, as a new version when it differs."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.db.models import Max

from conversations.models import SystemPolicy
from knowledge.models import Collection

MAX_POLICY_CHARS = 20_000


class Command(BaseCommand):
    help = "Make a text file the collection's system policy: a new version if it differs from the one in force."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--collection", default="helpcentre")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        try:
            text = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{path}: cannot read it as UTF-8 text ({exc}).") from None
        if not text or len(text) > MAX_POLICY_CHARS:
            raise CommandError(f"{path}: a policy must hold 1 to {MAX_POLICY_CHARS} characters.")
        try:
            collection = Collection.objects.get(name=options["collection"])
        except Collection.DoesNotExist:
            raise CommandError(f"No collection {options['collection']!r}; ingest it first.") from None
        with transaction.atomic():
            current = (
                SystemPolicy.objects.select_for_update().filter(collection=collection).order_by("-version").first()
            )
            if current and current.text == text:
                self.stdout.write(f"{collection.name}: policy v{current.version} already in force.")
                return
            latest = SystemPolicy.objects.filter(collection=collection).aggregate(v=Max("version"))["v"] or 0
            policy = SystemPolicy.objects.create(collection=collection, version=latest + 1, text=text)
        self.stdout.write(f"{collection.name}: policy v{policy.version} now in force.")
