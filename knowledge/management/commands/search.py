"""manage.py search: a collection searched with the retrieval pipeline, the ranked chunks printed."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from knowledge.errors import KnowledgeError
from knowledge.models import Collection
from knowledge.retrieval import search
from knowledge.scope import VERSION_POLICIES, VISIBLE_AUDIENCES
from supportbot.arguments import iso_date


class Command(BaseCommand):
    help = "Search a collection with the retrieval pipeline and print the ranked chunks."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query")
        parser.add_argument("--collection", default="helpcentre")
        parser.add_argument("--audience", choices=tuple(VISIBLE_AUDIENCES), default="public")
        parser.add_argument(
            "--version-policy", choices=[p for p in VERSION_POLICIES if p != "as_of"], default="current"
        )
        parser.add_argument(
            "--as-of", type=iso_date, default=None, help="Search the versions in force on this date (YYYY-MM-DD)"
        )
        parser.add_argument("-k", type=int, default=5)
        parser.add_argument("--explain", action="store_true", help="Show each stage's rank and score per hit")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            collection = Collection.objects.select_related("embedding_space").get(name=options["collection"])
        except Collection.DoesNotExist:
            names = ", ".join(Collection.objects.values_list("name", flat=True)) or "none yet"
            raise CommandError(f"No collection {options['collection']!r} (existing: {names}).") from None
        try:
            hits = search(
                options["query"],
                collection=collection,
                audience=options["audience"],
                as_of=options["as_of"],
                version_policy=options["version_policy"],
                k=options["k"],
            )
        except KnowledgeError as exc:
            raise CommandError(str(exc)) from None
        if not hits:
            self.stdout.write("No results.")
        for hit in hits:
            version = hit.chunk.version
            self.stdout.write(
                f"{hit.rank:>2}. {hit.score:.4f}  {version.article.slug} v{version.version_label} "
                f"[{version.audience}, {version.status}, from {version.effective_date}]  {hit.heading_path}"
            )
            if options["explain"]:
                stages = "  ".join(
                    f"{name} #{result.rank} ({result.score:.3f})" for name, result in sorted(hit.stages.items())
                )
                self.stdout.write(f"      stages: {stages or '-'}")
            self.stdout.write(f"      {hit.chunk.text[:160].replace(chr(10), ' ')}")
