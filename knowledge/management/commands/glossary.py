"""manage.py glossary: a collection's glossary (phrase → meaning) loaded from a TSV file."""

import csv
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from knowledge.models import Collection, GlossaryEntry


class Command(BaseCommand):
    help = "Load glossary entries (phrase → meaning) for a collection from a TSV file with a header row."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="TSV with columns: phrase, meaning")
        parser.add_argument("--collection", default="helpcentre")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["path"]
        try:
            collection = Collection.objects.get(name=options["collection"])
        except Collection.DoesNotExist:
            raise CommandError(f"No collection {options['collection']!r}; ingest it first.") from None
        try:
            rows = list(csv.DictReader(path.open(encoding="utf-8"), delimiter="\t"))
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"Cannot read {path}: {exc}") from None
        if rows and not {"phrase", "meaning"} <= set(rows[0]):
            raise CommandError(f"{path}: the header row must name the columns 'phrase' and 'meaning'.")
        with transaction.atomic():  # all entries or none
            for line, row in enumerate(rows, start=2):
                entry = GlossaryEntry.objects.filter(
                    collection=collection, phrase=(row["phrase"] or "").strip()
                ).first()
                entry = entry or GlossaryEntry(collection=collection)
                entry.phrase, entry.meaning = row["phrase"] or "", row["meaning"] or ""
                try:
                    entry.full_clean()
                except ValidationError as exc:
                    problems = "; ".join(
                        f"{field}: {message}" if field != "__all__" else message
                        for field, messages in exc.message_dict.items()
                        for message in messages
                    )
                    raise CommandError(f"{path}:{line}: {problems}") from None
                entry.save()
        self.stdout.write(f"{collection.name}: {len(rows)} glossary entries loaded.")
