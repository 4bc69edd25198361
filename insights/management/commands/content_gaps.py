"""manage.py content_gaps: the questions a collection could not answer, clustered and stored as a content-gap run."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from insights.errors import GapError
from insights.gaps import DEFAULT_SINCE_DAYS, DEFAULT_THRESHOLD, run_content_gaps
from knowledge.embeddings import default_embedder
from knowledge.models import Collection


class Command(BaseCommand):
    help = (
        "Cluster the questions a collection's assistant abstained on or referred, or whose suggested section the "
        "customer said did not answer (by meaning, with the collection's embedding model), store them as a "
        "content-gap run (admin: Insights › Content gaps) and print each cluster with its size, examples and the "
        "nearest published section."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--collection", required=True)
        parser.add_argument(
            "--since", type=int, default=DEFAULT_SINCE_DAYS, metavar="DAYS", help="Questions of the last DAYS days"
        )
        parser.add_argument(
            "--threshold",
            type=float,
            default=DEFAULT_THRESHOLD,
            help="Least average cosine similarity at which two groups of questions merge (0 to 1)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["collection"]
        try:
            collection = Collection.objects.select_related("embedding_space").get(name=name)
        except Collection.DoesNotExist:
            known = ", ".join(Collection.objects.order_by("name").values_list("name", flat=True)) or "none"
            raise CommandError(f"No collection {name!r} (collections: {known}).") from None
        try:
            run = run_content_gaps(
                collection, embedder=default_embedder(), since_days=options["since"], threshold=options["threshold"]
            )
        except GapError as exc:
            raise CommandError(str(exc)) from None
        gaps = list(run.gaps.order_by("-size", "-newest_at"))
        self.stdout.write(
            f"run {run.pk}: {run.questions} unanswered questions of the last {options['since']} days on {name} → "
            f"{len(gaps)} clusters (threshold {options['threshold']})"
        )
        for number, gap in enumerate(gaps, start=1):
            nearest = (
                f"{gap.nearest_article_slug} › {gap.nearest_heading_path} ({gap.nearest_score:.3f})"
                if gap.nearest_article_slug
                else "no published section"
            )
            newest = f"{gap.newest_at:%Y-%m-%d %H:%M}"
            self.stdout.write(f"{number}. {gap.size} question(s), newest {newest} · nearest {nearest}")
            for example in gap.examples:
                self.stdout.write(f"     - {example}")
