"""Ingestion: source documents → cleaned → chunked → embedded → written, each article atomically.

A document whose content hash and chunking are unchanged costs nothing. Embedding work is batched
across documents (one call for the sentence vectors of a batch, one for its chunk vectors).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import cast

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from knowledge import chunking
from knowledge.chunking import ChunkBounds, ChunkDraft, Strategy
from knowledge.cleaning import clean_markdown, find_boilerplate
from knowledge.embeddings import Embedder, require_same_space
from knowledge.errors import IngestFileError
from knowledge.models import (
    Article,
    ArticleVersion,
    Chunk,
    Collection,
    EmbeddingSpace,
    VersionStatus,
)
from knowledge.sources import SourceDocument, named_by_content

BATCH_DOCUMENTS = 64


@dataclass
class IngestReport:
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    failed: int = 0
    retired: int = 0
    chunks: int = 0
    embedding_calls: int = 0
    texts_embedded: int = 0
    tokens_embedded: int = 0
    secondary_embedded: int = 0
    seconds: float = 0.0
    errors: list[IngestFileError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        rate = self.chunks / self.seconds if self.seconds else 0.0
        return (
            f"documents: {self.new} new, {self.changed} changed, {self.unchanged} unchanged, {self.failed} failed, "
            f"{self.retired} retired · chunks written: {self.chunks} · embedding calls: {self.embedding_calls} "
            f"({self.texts_embedded} texts, {self.tokens_embedded} tokens) · "
            f"secondary vectors: {self.secondary_embedded} · {self.seconds:.1f} s ({rate:.1f} chunks/s)"
        )


def configured_chunking() -> tuple[Strategy, ChunkBounds]:
    """The chunking strategy and bounds the settings ask for."""
    strategy = cast(Strategy, settings.CHUNK_STRATEGY)
    return strategy, ChunkBounds(min_tokens=settings.CHUNK_MIN_TOKENS, max_tokens=settings.CHUNK_MAX_TOKENS)


@dataclass(frozen=True)
class PreparedDocument:
    source: SourceDocument
    drafts: list[ChunkDraft]
    vectors: np.ndarray
    secondary_vectors: np.ndarray | None = None


def space_of(embedder: Embedder) -> EmbeddingSpace:
    fp = embedder.fingerprint
    space, _ = EmbeddingSpace.objects.get_or_create(
        model_name=fp.model_name, dimension=fp.dimension, weights_sha256=fp.weights_sha256
    )
    return space


def get_or_create_collection(
    name: str, embedder: Embedder, *, secondary: Embedder | None = None, description: str = ""
) -> Collection:
    """The named collection, created bound to the embedder's space; refused if bound to another model's.

    With a secondary model, the collection gains a second dense index (filled by embed_secondary); one
    already built by another secondary model is refused the same way."""
    collection, _ = Collection.objects.select_related("embedding_space", "secondary_space").get_or_create(
        name=name, defaults={"embedding_space": space_of(embedder), "description": description}
    )
    require_same_space(collection, embedder)
    if secondary is not None:
        if collection.secondary_space is None:
            collection.secondary_space = space_of(secondary)
            collection.save(update_fields=["secondary_space"])
        require_same_space(collection, secondary, secondary=True)
    return collection


def chunk_embedding_text(chunk: Chunk) -> str:
    """A stored chunk's text as the embedding models read it (select its version's article with it)."""
    return chunking.embedding_text(chunk.version.article.title, chunk.heading_path, chunk.text)


REBUILD_AFTER_UPDATES = 1000
ANALYZE_AFTER_CHUNKS = 1000


def embed_secondary(collection: Collection, embedder: Embedder, *, batch: int = 256) -> int:
    """Give every chunk of the collection that lacks one its secondary vector; returns how many were embedded.

    For chunks written before the collection had a secondary model (new chunks get both vectors when
    written). Batch by batch, so an interrupted run is resumed by the next sync; a chunk without its
    secondary vector is only missing from that one ranking meanwhile. Updating many rows leaves dead
    entries in every index of the table, and an HNSW graph full of them was measured 10× slower and
    less accurate, so a large backfill rebuilds the vector indexes afterwards."""
    require_same_space(collection, embedder, secondary=True)
    pending = Chunk.objects.filter(version__article__collection=collection, secondary_embedding__isnull=True)
    done = 0
    while chunks := list(
        pending.select_related("version__article").only("id", "heading_path", "text", "version__article__title")[:batch]
    ):
        vectors = embedder.encode([chunk_embedding_text(c) for c in chunks])
        for chunk, vector in zip(chunks, vectors, strict=True):
            chunk.secondary_embedding = vector
        Chunk.objects.bulk_update(chunks, ["secondary_embedding"])
        done += len(chunks)
    if done >= REBUILD_AFTER_UPDATES and not connection.in_atomic_block:
        with connection.cursor() as cursor:
            for index in ("chunk_embedding_hnsw", "chunk_secondary_embedding_hnsw"):
                cursor.execute(f"REINDEX INDEX CONCURRENTLY {index}")
            cursor.execute("VACUUM ANALYZE knowledge_chunk")
    return done


def prepare_documents(
    documents: Sequence[SourceDocument],
    *,
    strategy: Strategy,
    bounds: ChunkBounds,
    embedder: Embedder,
    secondary: Embedder | None = None,
    boilerplate: frozenset[str] = frozenset(),
) -> list[PreparedDocument]:
    """Clean, chunk and embed a batch of documents with two embedding calls in all (one more with a
    secondary model: chunks are written with both vectors, never updated afterwards)."""
    count = embedder.count_tokens
    parsed = [chunking.parse_sections(clean_markdown(doc.body, boilerplate), count) for doc in documents]

    section_vectors: list[list[np.ndarray | None]] = [[None] * len(sections) for sections in parsed]
    if strategy == "heading-semantic":
        wanted = [
            (d, s)
            for d, sections in enumerate(parsed)
            for s, section in enumerate(sections)
            if chunking.needs_sentence_vectors(section, bounds)
        ]
        texts = [unit.text for d, s in wanted for unit in parsed[d][s].units]
        vectors = embedder.encode(texts)
        offset = 0
        for d, s in wanted:
            n = len(parsed[d][s].units)
            section_vectors[d][s] = vectors[offset : offset + n]
            offset += n

    # Text above a document's first heading belongs to the document as a whole: its path is the title.
    drafts = [
        [
            replace(draft, heading_path=draft.heading_path or doc.title)
            for draft in chunking.chunk_document(sections, strategy, bounds, count, section_vectors[d])
        ]
        for d, (doc, sections) in enumerate(zip(documents, parsed, strict=True))
    ]
    texts = [
        chunking.embedding_text(doc.title, draft.heading_path, draft.text)
        for doc, doc_drafts in zip(documents, drafts, strict=True)
        for draft in doc_drafts
    ]
    chunk_vectors = embedder.encode(texts)
    second_vectors = secondary.encode(texts) if secondary is not None else None
    prepared, offset = [], 0
    for doc, doc_drafts in zip(documents, drafts, strict=True):
        end = offset + len(doc_drafts)
        second = second_vectors[offset:end] if second_vectors is not None else None
        prepared.append(PreparedDocument(doc, doc_drafts, chunk_vectors[offset:end], second))
        offset = end
    return prepared


def make_published(version: ArticleVersion) -> None:
    """Make version the published one of its article; the version it replaces becomes superseded."""
    ArticleVersion.objects.filter(article=version.article, status=VersionStatus.PUBLISHED).exclude(
        pk=version.pk
    ).update(status=VersionStatus.SUPERSEDED)
    version.status = VersionStatus.PUBLISHED
    version.save(update_fields=["status", "updated_at"])


def write_chunks(written: Sequence[tuple[ArticleVersion, PreparedDocument]], collection: Collection) -> int:
    """Replace the chunks of each version with its prepared ones, in one delete and one insert (so the
    postings trigger runs once over all of them). Call inside a transaction."""
    Chunk.objects.filter(version__in=[version for version, _ in written]).delete()
    chunks = [
        Chunk(
            version=version,
            collection=collection,
            embedding_space=collection.embedding_space,
            ordinal=i,
            heading_path=draft.heading_path[:1000],
            text=draft.text,
            token_count=draft.token_count,
            embedding=vector,
            secondary_embedding=None if prepared.secondary_vectors is None else prepared.secondary_vectors[i],
        )
        for version, prepared in written
        for i, (draft, vector) in enumerate(zip(prepared.drafts, prepared.vectors, strict=True))
    ]
    Chunk.objects.bulk_create(chunks)
    return len(chunks)


def _status_for_source(version: ArticleVersion, siblings: Iterable[ArticleVersion]) -> str:
    """Published unless a newer version of the article replaces it (by `supersedes` or a later effective date)."""
    live = [v for v in siblings if v is not version and v.status in (VersionStatus.PUBLISHED, VersionStatus.SUPERSEDED)]
    if any(v.supersedes_id == version.pk for v in live):
        return VersionStatus.SUPERSEDED
    newer = any(v.status == VersionStatus.PUBLISHED and v.effective_date > version.effective_date for v in live)
    return VersionStatus.SUPERSEDED if newer else VersionStatus.PUBLISHED


def _articles_for(collection: Collection, docs: Sequence[SourceDocument]) -> dict[str, Article]:
    """The batch's articles by slug, locked; missing ones created, retired ones brought back."""
    articles = {
        a.slug: a
        for a in Article.objects.select_for_update().filter(collection=collection, slug__in={d.slug for d in docs})
    }
    first_of = {doc.slug: doc for doc in reversed(docs)}
    missing = [
        Article(collection=collection, slug=slug, title=doc.title, product=doc.product, language=doc.language)
        for slug, doc in first_of.items()
        if slug not in articles
    ]
    articles.update((a.slug, a) for a in Article.objects.bulk_create(missing))
    Article.objects.filter(pk__in=[a.pk for a in articles.values() if a.retired_at is not None]).update(
        retired_at=None, updated_at=timezone.now()
    )
    return articles


def lock_articles(collection_id: int, slugs: Iterable[str]) -> None:
    """Hold, until the transaction ends, each article's lock (taken even before the article exists): one
    writer at a time per article, whichever process or run it is. Taken in one order, so two writers of
    overlapping batches cannot deadlock."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_advisory_xact_lock(%s::int, h)) FROM "
            "(SELECT DISTINCT hashtext(s) AS h FROM unnest(%s::text[]) AS s ORDER BY 1) AS locks",
            [collection_id, sorted(set(slugs))],
        )


_SOURCE_FIELDS = (
    "effective_date",
    "audience",
    "supersedes",
    "summary",
    "body",
    "content_hash",
    "chunking",
    "source_path",
)


def write_documents(
    collection: Collection,
    batch: Sequence[PreparedDocument],
    chunking_label: str,
    *,
    overwrite: frozenset[str] = frozenset(),
) -> list[tuple[bool, int]]:
    """Write source versions and their chunks in one transaction, with a few statements for the whole batch
    (a commit and ~10 queries per document took as long as embedding it). Versions are applied in the
    batch's order, so one may supersede another of the same batch. Returns, per document, (was its
    version new, chunks written)."""
    now = timezone.now()
    with transaction.atomic():
        lock_articles(collection.pk, [p.source.slug for p in batch])
        articles = _articles_for(collection, [p.source for p in batch])
        versions: dict[int, list[ArticleVersion]] = {a.pk: [] for a in articles.values()}
        for v in ArticleVersion.objects.select_for_update().filter(article__in=list(articles.values())):
            versions[v.article_id].append(v)
        results, written, refreshed, renamed = [], [], {}, {}
        for prepared in batch:
            doc, article = prepared.source, articles[prepared.source.slug]
            siblings = versions[article.pk]
            by_label = {v.version_label: v for v in siblings}
            source = {
                "effective_date": doc.effective_date,
                "audience": doc.audience,
                "supersedes": by_label[doc.supersedes] if doc.supersedes is not None else None,
                "summary": doc.summary,
                "body": doc.body,
                "content_hash": doc.content_hash,
                "chunking": chunking_label,
                "source_path": doc.path[:500],
            }
            version = by_label.get(doc.version_label)
            created = version is None
            if version is None:
                # One at a time: a later version of the batch may supersede this one and needs its id.
                version = ArticleVersion.objects.create(
                    article=article, version_label=doc.version_label, indexed_at=now, **source
                )
                siblings.append(version)
            else:
                for name, value in source.items():
                    setattr(version, name, value)
                version.indexed_at = version.updated_at = now
                refreshed[version.pk] = version
            if doc.slug in overwrite or _status_for_source(version, siblings) == VersionStatus.PUBLISHED:
                for other in siblings:
                    if other.status == VersionStatus.PUBLISHED:
                        other.status = VersionStatus.SUPERSEDED
                version.status = VersionStatus.PUBLISHED
                # The article is named after its current version, not after an older one re-synced later.
                article.title, article.product, article.language = doc.title, doc.product, doc.language
                article.updated_at = now
                renamed[article.pk] = article
            else:
                version.status = VersionStatus.SUPERSEDED
            written.append((version, prepared))
            results.append((created, len(prepared.drafts)))
        ArticleVersion.objects.bulk_update(list(refreshed.values()), [*_SOURCE_FIELDS, "indexed_at", "updated_at"])
        # Demotions first: an article has at most one published version at any moment.
        touched = [v for siblings in versions.values() for v in siblings]
        for status in (VersionStatus.SUPERSEDED, VersionStatus.PUBLISHED):
            ArticleVersion.objects.bulk_update([v for v in touched if v.status == status], ["status"])
        Article.objects.bulk_update(list(renamed.values()), ["title", "product", "language", "updated_at"])
        write_chunks(written, collection)
    return results


def refresh_term_statistics(collection: Collection) -> None:
    """Recompute BM25's corpus statistics for a collection: document frequency per term (its postings),
    chunk count and mean chunk length. Over every chunk of the collection, whatever its audience or
    version, so a term's weight does not depend on who asks."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM knowledge_termstatistic WHERE collection_id = %s", [collection.pk])
        cursor.execute(
            "INSERT INTO knowledge_termstatistic (collection_id, lexeme, document_frequency) "
            "SELECT collection_id, lexeme, count(*) FROM knowledge_posting WHERE collection_id = %s "
            "GROUP BY collection_id, lexeme",
            [collection.pk],
        )
        cursor.execute(
            "SELECT count(*), coalesce(avg(sparse_length), 0) FROM knowledge_chunk WHERE collection_id = %s",
            [collection.pk],
        )
        collection.chunk_count, collection.average_chunk_length = cursor.fetchone()
        collection.save(update_fields=["chunk_count", "average_chunk_length"])


# The source path of a version posted to the ingestion API.
API_SOURCE_PREFIX = "api:"


def retire_articles(collection: Collection, articles: Iterable[Article]) -> int:
    """Articles stop serving: marked retired, chunks removed, history kept. Each under its lock."""
    retired = 0
    for article in articles:
        with transaction.atomic():
            lock_articles(collection.pk, [article.slug])
            Chunk.objects.filter(version__article=article).delete()
            ArticleVersion.objects.filter(article=article).update(indexed_at=None)
            article.retired_at = timezone.now()
            article.save(update_fields=["retired_at", "updated_at"])
        retired += 1
    return retired


def retire_missing_articles(collection: Collection, present_slugs: set[str]) -> int:
    """Retire the articles whose sources disappeared. Articles posted to the ingestion API are listed by no
    source, so a source's sync leaves them be (the API's DELETE retires them)."""
    missing = (
        Article.objects.filter(collection=collection, retired_at__isnull=True)
        .exclude(slug__in=present_slugs)
        .exclude(versions__source_path__startswith=API_SOURCE_PREFIX)
    )
    return retire_articles(collection, missing)


def _check_batch(
    collection: Collection, items: Iterable[SourceDocument | IngestFileError], report: IngestReport
) -> tuple[list[SourceDocument], set[str], bool]:
    """Valid, unambiguous documents; the slugs seen; whether every failed item's slug is known."""
    by_key: dict[tuple[str, str], list[SourceDocument]] = {}
    slugs: set[str] = set()
    all_slugs_known = True
    for item in items:
        if isinstance(item, IngestFileError):
            report.errors.append(item)
            all_slugs_known = False
            continue
        slugs.add(item.slug)
        by_key.setdefault((item.slug, item.version_label), []).append(item)
    docs: list[SourceDocument] = []
    for (slug, label), group in by_key.items():
        if len(group) == 1:
            docs.append(group[0])
            continue
        # Which file is right cannot be guessed, so none of them is applied.
        for doc in group:
            others = ", ".join(d.path for d in group if d is not doc)
            report.errors.append(
                IngestFileError(
                    doc.path, f"duplicate id {slug!r} version {label!r}: also defined by {others}", field="id"
                )
            )
    seen = {(d.slug, d.version_label) for d in docs}
    existing = set(
        ArticleVersion.objects.filter(article__collection=collection).values_list("article__slug", "version_label")
    )
    valid = []
    for doc in docs:
        if (
            doc.supersedes is not None
            and (doc.slug, doc.supersedes) not in seen
            and (doc.slug, doc.supersedes) not in existing
        ):
            report.errors.append(
                IngestFileError(
                    doc.path,
                    f"supersedes version {doc.supersedes!r} of {doc.slug!r}, which does not exist",
                    field="supersedes",
                )
            )
            continue
        valid.append(doc)
    return valid, slugs, all_slugs_known


@dataclass(frozen=True)
class SyncPlan:
    """What a sync has to do: the documents whose content or chunking changed (oldest versions of an
    article first, so a version's `supersedes` target is written before it), and what retirement needs."""

    todo: list[SourceDocument]
    slugs: set[str]
    all_slugs_known: bool
    boilerplate: frozenset[str]
    chunking_label: str
    # Articles whose source's text is put back in force over a version published in the admin (--overwrite).
    overwrite: frozenset[str] = frozenset()


def changed_documents(collection: Collection, docs: Sequence[SourceDocument], label: str) -> list[SourceDocument]:
    """The documents not already indexed with this content and chunking, oldest versions first; and those
    named by their content whose file went back to an earlier text (that version is in force again)."""
    stored = ArticleVersion.objects.filter(
        article__collection=collection,
        article__slug__in={d.slug for d in docs},
        article__retired_at__isnull=True,
        indexed_at__isnull=False,
    ).values_list("article__slug", "version_label", "content_hash", "chunking", "status", "source_path")
    indexed, published = {}, {}
    for slug, version_label, content_hash, chunking_label, status, source_path in stored:
        indexed[(slug, version_label)] = (content_hash, chunking_label)
        if status == VersionStatus.PUBLISHED:
            published[slug] = (version_label, content_hash, source_path)

    def went_back(doc: SourceDocument) -> bool:
        # The version in force is a later text of the same file, not an edit made in the admin.
        if not named_by_content(doc.version_label, doc.content_hash) or doc.slug not in published:
            return False
        version_label, content_hash, source_path = published[doc.slug]
        return (
            version_label != doc.version_label
            and named_by_content(version_label, content_hash)
            and source_path == doc.path[:500]
        )

    todo = [d for d in docs if indexed.get((d.slug, d.version_label)) != (d.content_hash, label) or went_back(d)]
    return sorted(todo, key=lambda d: (d.slug, d.effective_date, d.version_label))


def edited_in_admin(collection: Collection, docs: Sequence[SourceDocument]) -> list[SourceDocument]:
    """The documents whose article has a version published in the admin in force (it has no source file):
    what customers see is no longer what the source says."""
    edited = set(
        ArticleVersion.objects.filter(
            article__collection=collection,
            article__slug__in={d.slug for d in docs},
            article__retired_at__isnull=True,
            status=VersionStatus.PUBLISHED,
            source_path="",
        ).values_list("article__slug", flat=True)
    )
    # An article's newest source version stands for it.
    newest = {d.slug: d for d in sorted(docs, key=lambda d: d.effective_date) if d.slug in edited}
    return list(newest.values())


def plan_sync(
    collection: Collection,
    items: Iterable[SourceDocument | IngestFileError],
    *,
    strategy: Strategy,
    bounds: ChunkBounds,
    report: IngestReport,
    detect_boilerplate: bool = True,
    overwrite: bool = False,
) -> SyncPlan:
    """Check a source's documents against the collection; unreadable and ambiguous ones go to the report.
    An article edited in the admin keeps the admin's version, and the report says so, unless `overwrite`
    puts the source's text back in force."""
    docs, slugs, all_slugs_known = _check_batch(collection, items, report)
    label = bounds.describe(strategy)
    todo = changed_documents(collection, docs, label)
    pending = {d.slug for d in todo}
    edited = [d for d in edited_in_admin(collection, docs) if d.slug not in pending]
    if edited and overwrite:
        todo = sorted([*todo, *edited], key=lambda d: (d.slug, d.effective_date, d.version_label))
    elif edited:
        names = ", ".join(d.slug for d in edited[:5]) + (f" and {len(edited) - 5} more" if len(edited) > 5 else "")
        report.warnings.append(
            f"{len(edited)} article(s) were edited in the admin since their source was last synced, and the "
            f"admin's version stays in force: {names}. Their source says otherwise; ingest with --overwrite "
            "to put the source's text back in force."
        )
    report.unchanged = len(docs) - len(todo)
    boilerplate = frozenset(find_boilerplate(d.body for d in docs)) if detect_boilerplate else frozenset()
    return SyncPlan(
        todo,
        slugs,
        all_slugs_known,
        boilerplate,
        label,
        frozenset(d.slug for d in edited) if overwrite else frozenset(),
    )


def finish_sync(
    collection: Collection,
    *,
    present_slugs: set[str] | None,
    wrote_chunks: int,
    secondary: Embedder | None,
) -> int:
    """After a sync's documents are written: retire the articles not in `present_slugs` (None: retire
    nothing), refresh BM25's statistics, give new chunks their secondary vectors. Returns how many were
    retired. Safe to repeat."""
    retired = retire_missing_articles(collection, present_slugs) if present_slugs is not None else 0
    # Also when an earlier run died between writing chunks and refreshing the statistics.
    stale = collection.chunk_count != Chunk.objects.filter(version__article__collection=collection).count()
    if wrote_chunks or retired or stale:
        refresh_term_statistics(collection)
    if wrote_chunks >= ANALYZE_AFTER_CHUNKS:
        # Until autovacuum catches up, the planner sees the tables as they were: the first BM25 query
        # after copying 90 k chunks in took 55 s instead of 40 ms.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE knowledge_chunk, knowledge_posting")
    if secondary is not None:
        embed_secondary(collection, secondary)
    collection.last_synced_at = timezone.now()
    collection.save(update_fields=["last_synced_at"])
    return retired


RETIREMENT_SKIPPED = (
    "Articles with missing sources were not retired: some files could not be read, "
    "so their ids are unknown. Fix the errors above and ingest again."
)


def ingest(
    collection_name: str,
    items: Iterable[SourceDocument | IngestFileError],
    *,
    embedder: Embedder,
    secondary: Embedder | None = None,
    strategy: Strategy,
    bounds: ChunkBounds,
    retire_missing: bool,
    detect_boilerplate: bool = True,
    overwrite: bool = False,
    progress: Callable[[IngestReport, int, int], None] | None = None,
) -> IngestReport:
    """Bring a collection in line with its sources, in this process, embedding many documents per call.
    Failures are reported per file; the rest still ingest. `progress` hears the report so far, the articles
    written and the articles to write, once planned and after each batch."""
    started = time.perf_counter()
    calls_before, texts_before, tokens_before = embedder.calls, embedder.texts_embedded, embedder.tokens_embedded
    secondary_before = secondary.texts_embedded if secondary is not None else 0
    report = IngestReport()
    collection = get_or_create_collection(collection_name, embedder, secondary=secondary)
    plan = plan_sync(
        collection,
        items,
        strategy=strategy,
        bounds=bounds,
        report=report,
        detect_boilerplate=detect_boilerplate,
        overwrite=overwrite,
    )

    articles = len({d.slug for d in plan.todo})
    if progress:
        progress(report, 0, articles)
    done = 0
    for start in range(0, len(plan.todo), BATCH_DOCUMENTS):
        batch = plan.todo[start : start + BATCH_DOCUMENTS]
        prepared_batch = prepare_documents(
            batch,
            strategy=strategy,
            bounds=bounds,
            embedder=embedder,
            secondary=secondary,
            boilerplate=plan.boilerplate,
        )
        for created, written in write_documents(
            collection, prepared_batch, plan.chunking_label, overwrite=plan.overwrite
        ):
            report.new += created
            report.changed += not created
            report.chunks += written
        done += len(batch)
        if progress:
            # An article's versions may straddle two batches: it counts once its last one is written.
            unfinished = {d.slug for d in plan.todo[done:]}
            progress(report, len({d.slug for d in plan.todo[:done]} - unfinished), articles)

    present_slugs = None
    if retire_missing and plan.all_slugs_known:
        present_slugs = plan.slugs
    elif retire_missing:
        report.warnings.append(RETIREMENT_SKIPPED)
    report.retired = finish_sync(
        collection, present_slugs=present_slugs, wrote_chunks=report.chunks, secondary=secondary
    )
    if secondary is not None:
        report.secondary_embedded = secondary.texts_embedded - secondary_before

    report.failed = len(report.errors)
    report.embedding_calls = embedder.calls - calls_before
    report.texts_embedded = embedder.texts_embedded - texts_before
    report.tokens_embedded = embedder.tokens_embedded - tokens_before
    report.seconds = time.perf_counter() - started
    return report
