import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from knowledge.chunking import STRATEGIES, ChunkBounds
from knowledge.embeddings import default_embedder, secondary_embedder
from knowledge.errors import KnowledgeError
from knowledge.ingest import ingest
from knowledge.sources import AUDIENCES, ZIP_MAX_MEMBERS, read_beir_corpus, read_markdown_tree, read_markdown_zip
from knowledge.zendesk import parse_segments, read_zendesk_export


def _slug(value: str) -> str:
    from django.core.validators import validate_slug

    validate_slug(value)
    return value


class Command(BaseCommand):
    help = (
        "Sync a collection with its sources: Markdown files with front matter (a folder or one file), a Zendesk "
        "Help Center articles export (one page, or a folder of pages), a web page or sitemap.xml, or a BEIR "
        "corpus.jsonl. Unchanged documents cost nothing; articles that disappeared from a folder, an export or a "
        "sitemap are retired."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "path",
            help="A folder of .md files, one .md file, a .zip of them, a Zendesk export (page .json or folder), "
            "a page or sitemap.xml address (--format web), or a BEIR corpus",
        )
        parser.add_argument("--collection", required=True, help="Collection name (a slug), e.g. helpcentre")
        parser.add_argument("--format", choices=("markdown", "zendesk", "web", "beir"), default="markdown")
        parser.add_argument(
            "--audience", choices=AUDIENCES, default=None, help="web: who may read the pages (default public)"
        )
        parser.add_argument(
            "--segment",
            action="append",
            default=[],
            metavar="ID=AUDIENCE",
            help="Zendesk: the audience (member, staff, public) of a user segment; articles of unmapped segments fail",
        )
        parser.add_argument("--strategy", choices=STRATEGIES, default=settings.CHUNK_STRATEGY)
        parser.add_argument("--min-tokens", type=int, default=settings.CHUNK_MIN_TOKENS)
        parser.add_argument("--max-tokens", type=int, default=settings.CHUNK_MAX_TOKENS)
        parser.add_argument("--limit", type=int, default=None, help="Only the first N documents (benchmarks, trials)")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["path"])
        if options["format"] != "web" and not path.exists():
            raise CommandError(f"{path} does not exist.")
        if options["audience"] is not None and options["format"] != "web":
            raise CommandError("--audience applies to --format web only (files say their audience themselves).")
        try:
            collection = _slug(options["collection"])
        except Exception:
            raise CommandError(
                f"--collection {options['collection']!r} is not a valid name: use letters, digits, '-' and '_'."
            ) from None
        try:
            bounds = ChunkBounds(min_tokens=options["min_tokens"], max_tokens=options["max_tokens"])
        except ValueError as exc:
            raise CommandError(f"--min-tokens/--max-tokens: {exc}") from None
        limit = options["limit"]
        if limit is not None and limit < 1:
            raise CommandError("--limit must be a positive number.")

        if options["segment"] and options["format"] != "zendesk":
            raise CommandError("--segment applies to --format zendesk only.")
        is_zip = options["format"] == "markdown" and path.suffix.lower() == ".zip"
        lists_every_page = path.is_dir() or is_zip or options["format"] == "zendesk"
        if options["format"] == "beir":
            items = list(read_beir_corpus(path))
        elif options["format"] == "web":
            # Here, not at the top: trafilatura and its date parsers take 0.25 s to import, which every
            # Markdown sync (make run starts with one) would pay for nothing.
            from knowledge.web import WebLimits, read_web_source

            limits = WebLimits(
                max_bytes=settings.WEB_PAGE_MAX_BYTES,
                timeout_s=settings.WEB_FETCH_TIMEOUT_S,
                max_pages=settings.WEB_MAX_PAGES,
            )
            read = read_web_source(options["path"], audience=options["audience"] or "public", limits=limits)
            items, lists_every_page = read.items, read.lists_every_page
        elif is_zip:
            limit_bytes = settings.INGEST_MAX_FILE_BYTES * ZIP_MAX_MEMBERS
            if path.stat().st_size > limit_bytes:
                raise CommandError(f"{path} is over the limit of {limit_bytes:,} bytes for an archive.")
            items = read_markdown_zip(str(path), path.read_bytes(), max_bytes=settings.INGEST_MAX_FILE_BYTES)
        elif options["format"] == "zendesk":
            try:
                segments = parse_segments(options["segment"])
            except ValueError as exc:
                raise CommandError(f"--segment: {exc}") from None
            if path.is_dir() and not any(path.glob("*.json")):
                raise CommandError(f"{path} holds no .json export pages.")
            items = list(read_zendesk_export(path, segments=segments, max_bytes=settings.INGEST_MAX_FILE_BYTES))
        else:
            if path.is_dir() and not any(path.rglob("*.md")):
                raise CommandError(f"{path} holds no .md files.")
            items = list(read_markdown_tree(path, max_bytes=settings.INGEST_MAX_FILE_BYTES))
        if limit is not None:
            items = items[:limit]

        bar = tqdm(total=0, unit="doc", disable=not sys.stderr.isatty(), desc="embedding")

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        try:
            report = ingest(
                collection,
                items,
                embedder=default_embedder(),
                secondary=secondary_embedder(),
                strategy=options["strategy"],
                bounds=bounds,
                # Only a whole folder, export or sitemap says which articles exist; a single file or page, or
                # a --limit run, says nothing about the others.
                retire_missing=limit is None and options["format"] != "beir" and lists_every_page,
                progress=progress,
            )
        except KnowledgeError as exc:
            raise CommandError(str(exc)) from None
        finally:
            bar.close()
        for error in report.errors:
            self.stderr.write(self.style.ERROR(f"error: {error}"))
        for warning in report.warnings:
            self.stderr.write(self.style.WARNING(f"warning: {warning}"))
        self.stdout.write(f"{collection}: {report.summary()}")
        if report.failed:
            raise CommandError(f"{report.failed} document(s) failed; the others were ingested.")
