from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from knowledge.dense import VISIBLE_AUDIENCES, dense_search
from knowledge.embeddings import default_embedder, embed_query
from knowledge.errors import KnowledgeError
from knowledge.models import Collection


class Command(BaseCommand):
    help = "Search a collection (dense retrieval) and print the ranked chunks."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query")
        parser.add_argument("--collection", default="helpcentre")
        parser.add_argument("--audience", choices=tuple(VISIBLE_AUDIENCES), default="public")
        parser.add_argument("-k", type=int, default=5)

    def handle(self, *args: Any, **options: Any) -> None:
        query = options["query"].strip()
        if not query:
            raise CommandError("The query is empty.")
        if not 1 <= options["k"] <= 100:
            raise CommandError("-k must be between 1 and 100.")
        try:
            collection = Collection.objects.select_related("embedding_space").get(name=options["collection"])
        except Collection.DoesNotExist:
            names = ", ".join(Collection.objects.values_list("name", flat=True)) or "none yet"
            raise CommandError(f"No collection {options['collection']!r} (existing: {names}).") from None
        try:
            vector = embed_query(collection, query, default_embedder())
        except KnowledgeError as exc:
            raise CommandError(str(exc)) from None
        for hit in dense_search(collection, vector, audience=options["audience"], k=options["k"]):
            version = hit.chunk.version
            self.stdout.write(
                f"{hit.rank:>2}. {hit.similarity:.3f}  {version.article.slug} v{version.version_label} "
                f"[{version.audience}]  {hit.chunk.heading_path}"
            )
            self.stdout.write(f"      {hit.chunk.text[:160].replace(chr(10), ' ')}")
