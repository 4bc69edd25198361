"""manage.py ingest: a collection synced with its sources (Markdown, a Zendesk export, a website, a BEIR corpus)."""

import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from knowledge import sync, tasks
from knowledge.chunking import STRATEGIES, ChunkBounds
from knowledge.embeddings import default_embedder, secondary_embedder
from knowledge.errors import KnowledgeError
from knowledge.ingest import IngestReport, ingest
from knowledge.models import Source, SyncRun, SyncStatus, SyncTrigger
from knowledge.sources import AUDIENCES, SourceRead, read_beir_corpus
from knowledge.zendesk import parse_segments


def _slug(value: str) -> str:
    from django.core.validators import validate_slug

    validate_slug(value)
    return value


class Command(BaseCommand):
    help = (
        "Sync a collection with its sources: a help centre's Markdown and HTML pages as its site generator wrote "
        "them (a folder, a zip or one file; front matter in any tool's keys or none, what is assumed or ignored "
        "said in one warning), a "
        "Zendesk Help Center articles export (one page, or a folder of pages), a web page or sitemap.xml, or a "
        "BEIR corpus.jsonl. Unchanged documents cost nothing; articles that disappeared from a folder, an export "
        "or a sitemap are retired. A sync that would retire more than half of a collection's articles, or bring "
        f"other articles into the demo's collection ({sync.DEMO_COLLECTION}), is refused unless --replace."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "path",
            help="A folder of .md, .mdx, .markdown and .html pages, one such file, a .zip of them, a "
            "Zendesk export (page .json or folder), a page or sitemap.xml address (--format web), or a BEIR corpus",
        )
        parser.add_argument(
            "--collection",
            required=True,
            help=f"Collection name (a slug), e.g. mine; {sync.DEMO_COLLECTION} is the demo's (make run)",
        )
        parser.add_argument(
            "--replace",
            action="store_true",
            help="The source replaces what the collection holds: go ahead even if the sync retires more than half "
            f"of its articles, or brings articles that are not the demo's into {sync.DEMO_COLLECTION}",
        )
        parser.add_argument(
            "--overwrite",
            action="store_true",
            help="Put each source's text back in force over versions published in the admin since the last sync "
            "(without it, the admin's version stays and a warning names the articles)",
        )
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
        parser.add_argument(
            "--strict-front-matter",
            action="store_true",
            help="Markdown: read front matter in supportbot's own format only (id, title, version, effective_date, "
            "audience required; any other key refused), as FRONT_MATTER=strict does for every sync",
        )
        parser.add_argument("--strategy", choices=STRATEGIES, default=settings.CHUNK_STRATEGY)
        parser.add_argument("--min-tokens", type=int, default=settings.CHUNK_MIN_TOKENS)
        parser.add_argument("--max-tokens", type=int, default=settings.CHUNK_MAX_TOKENS)
        parser.add_argument("--limit", type=int, default=None, help="Only the first N documents (benchmarks, trials)")
        parser.add_argument(
            "--background",
            action="store_true",
            help="Queue the sync for the ingestion workers (needs REDIS_URL and `make worker`), follow its progress "
            "until it ends; the source is stored, so it can be synced again from the admin or on a schedule",
        )
        parser.add_argument("--no-wait", action="store_true", help="With --background: print the run's id and return")

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
        try:
            segments = parse_segments(options["segment"])
        except ValueError as exc:
            raise CommandError(f"--segment: {exc}") from None
        if options["no_wait"] and not options["background"]:
            raise CommandError("--no-wait applies to --background only.")
        if options["strict_front_matter"] and (options["format"] != "markdown" or options["background"]):
            raise CommandError(
                "--strict-front-matter applies to --format markdown here only; set FRONT_MATTER=strict for the workers."
            )
        if options["overwrite"] and options["background"]:
            raise CommandError("--overwrite applies to a sync run here, not to --background.")
        if options["background"]:
            self._in_background(collection, options, segments)
            return

        if options["format"] == "beir":
            read = SourceRead(list(read_beir_corpus(path)), lists_every_page=False)
        else:
            source = Source(
                kind=options["format"],
                location=options["path"] if options["format"] == "web" else str(path.resolve()),
                audience=options["audience"] or "public",
                segments=segments,
            )
            try:
                read = sync.read_source(source, strict=options["strict_front_matter"] or None)
            except KnowledgeError as exc:
                raise CommandError(str(exc)) from None
        items = read.items if limit is None else read.items[:limit]
        if not options["replace"]:
            self._refuse_losses(collection, read, retire_missing=limit is None, described=options["path"])

        bar = tqdm(total=0, unit="article", disable=not sys.stderr.isatty(), desc="embedding")
        try:
            run = sync.new_run(
                sync.collection_named(collection), trigger=SyncTrigger.COMMAND, description=options["path"]
            )
        except KnowledgeError as exc:
            raise CommandError(str(exc)) from None

        def progress(report: IngestReport, done: int, total: int) -> None:
            bar.total, bar.n = total, done
            bar.refresh()
            sync.record_report(run, report, articles_done=done, articles=total)

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
                retire_missing=limit is None and read.lists_every_page,
                overwrite=options["overwrite"],
                progress=progress,
            )
        except KnowledgeError as exc:
            sync.fail_run(run, str(exc))
            raise CommandError(str(exc)) from None
        finally:
            bar.close()
        report.warnings[:0] = read.warnings
        sync.record_report(run, report, articles_done=run.articles, articles=run.articles)
        sync.end_run(run, SyncStatus.FINISHED)
        for error in report.errors:
            self.stderr.write(self.style.ERROR(f"error: {error}"))
        for warning in report.warnings:
            self.stderr.write(self.style.WARNING(f"warning: {warning}"))
        self.stdout.write(f"{collection}: {report.summary()}")
        if report.failed:
            raise CommandError(f"{report.failed} document(s) failed; the others were ingested.")

    def _in_background(self, collection: str, options: dict[str, Any], segments: dict[int, str]) -> None:
        if options["format"] == "beir" or options["limit"] is not None:
            raise CommandError("--background syncs a whole source: not a BEIR corpus, not with --limit.")
        chosen = (options["strategy"], options["min_tokens"], options["max_tokens"])
        if chosen != (settings.CHUNK_STRATEGY, settings.CHUNK_MIN_TOKENS, settings.CHUNK_MAX_TOKENS):
            raise CommandError(
                "--background chunks as the workers' settings say: leave out --strategy and the token bounds."
            )
        if not settings.REDIS_URL:
            raise CommandError("--background needs REDIS_URL: the workers' queue is in Redis.")
        location = options["path"] if options["format"] == "web" else str(Path(options["path"]).resolve())
        if not options["replace"] and options["format"] != "web":
            # Read here too (a web source is not: fetching a site twice costs too much), so that a sync that
            # would lose articles is refused before it is queued.
            try:
                read = sync.read_source(Source(kind=options["format"], location=location, segments=segments))
            except KnowledgeError as exc:
                raise CommandError(str(exc)) from None
            self._refuse_losses(collection, read, retire_missing=True, described=options["path"])
        source, _ = Source.objects.update_or_create(
            collection=sync.collection_named(collection),
            location=location,
            defaults={"kind": options["format"], "audience": options["audience"] or "public", "segments": segments},
        )
        run = tasks.start_source_run(source, trigger=SyncTrigger.COMMAND, in_background=True)
        self.stdout.write(f"sync run {run.pk} queued for {location}")
        if options["no_wait"]:
            return
        shown = ""
        while not run.ended:
            time.sleep(0.5)
            run.refresh_from_db()
            line = f"{run.get_status_display()}: {run.articles_done}/{run.articles} articles"
            if line != shown:
                self.stdout.write(line)
                shown = line
        self._report_run(run)

    def _refuse_losses(self, collection: str, read: SourceRead, *, retire_missing: bool, described: str) -> None:
        refusal = sync.sync_refusal(collection, read, retire_missing=retire_missing, described=described)
        if refusal is not None:
            raise CommandError(refusal)

    def _report_run(self, run: SyncRun) -> None:
        for error in run.errors:
            self.stderr.write(self.style.ERROR(f"error: {sync.error_text(error)}"))
        for warning in run.warnings:
            self.stderr.write(self.style.WARNING(f"warning: {warning}"))
        self.stdout.write(
            f"{run.collection.name}: documents: {run.document_counts} · chunks written: {run.chunks} · "
            f"embedding calls: {run.embedding_calls}"
        )
        if run.status == SyncStatus.FAILED:
            raise CommandError(f"sync run {run.pk} failed: nothing was written.")
        if run.failed:
            raise CommandError(f"{run.failed} document(s) failed; the others were ingested.")
