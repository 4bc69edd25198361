"""manage.py voice: whom a collection's assistant speaks for (its business name, what it helps with, its tone)."""

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from knowledge.models import Collection
from knowledge.voice import Voice

FIELDS = {"business_name": 200, "helps_with": 300, "tone": 1000}


class Command(BaseCommand):
    help = (
        "Say whom a collection's assistant speaks for: the widget greets customers with what it helps with, the "
        "help pages carry the business name, and a language model is told both and the tone lines. Without "
        "options, prints what is set. The same fields are in the admin, under Collections."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("collection", help="The collection's name, e.g. mine")
        parser.add_argument("--business-name", help='The business, as customers know it: "Acme Analytics"')
        parser.add_argument("--helps-with", help='What customers may ask about: "accounts, billing and the mobile app"')
        parser.add_argument("--tone", help='A few lines on how replies sound: "Warm and brief. Say you, not the user."')
        parser.add_argument(
            "--load",
            type=Path,
            metavar="FILE",
            help='The three from a JSON file {"business_name", "helps_with", "tone"} (make run loads the demo\'s)',
        )

    def handle(self, *args: Any, **options: Any) -> None:
        collection = Collection.objects.filter(name=options["collection"]).first()
        if collection is None:
            names = ", ".join(Collection.objects.order_by("name").values_list("name", flat=True)) or "none yet"
            raise CommandError(f"No collection {options['collection']!r} (collections: {names}); ingest it first.")
        given = {field: options[field] for field in FIELDS}
        if options["load"] is not None:
            given.update(_read_voice(options["load"]))
        changed = []
        for field, limit in FIELDS.items():
            value = given[field]
            if value is None:
                continue
            value = value.strip()
            if len(value) > limit:
                raise CommandError(f"--{field.replace('_', '-')} is {len(value)} characters; at most {limit}.")
            setattr(collection, field, value)
            changed.append(field)
        if changed:
            collection.save(update_fields=changed)
        voice = Voice.of(collection)
        self.stdout.write(f"{collection.name}: {voice.help_title}")
        self.stdout.write(f"  greeting: {voice.greeting}")
        self.stdout.write(f"  tone: {voice.tone or '(none)'}")


def _read_voice(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CommandError(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(data, dict) or not set(data) <= set(FIELDS) or not all(isinstance(v, str) for v in data.values()):
        raise CommandError(f"{path}: expected an object with text fields among {', '.join(FIELDS)}")
    return data
