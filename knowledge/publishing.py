"""Editorial workflow for article versions: draft → in review → published → superseded.

Publishing indexes the version (chunk + embed) and supersedes the previous published version, in one
transaction, so readers see either the old version or the new one, never a half-indexed mix.
"""

from __future__ import annotations

import hashlib

from django.db import transaction
from django.utils import timezone

from knowledge.embeddings import Embedder, require_same_space
from knowledge.errors import WorkflowError
from knowledge.ingest import (
    configured_chunking,
    lock_articles,
    make_published,
    prepare_documents,
    refresh_term_statistics,
    write_chunks,
)
from knowledge.models import ArticleVersion, VersionStatus
from knowledge.sources import SourceDocument


def _next_label(version: ArticleVersion) -> str:
    labels = set(ArticleVersion.objects.filter(article=version.article).values_list("version_label", flat=True))
    numeric = [int(label) for label in labels if label.isdigit()]
    if numeric:
        return str(max(numeric) + 1)
    n = 2
    while f"{version.version_label}.{n}" in labels:
        n += 1
    return f"{version.version_label}.{n}"


def new_draft_from(version: ArticleVersion, *, author: object | None = None, body: str | None = None) -> ArticleVersion:
    """A draft copy of a version, ready to edit; it will supersede the version it was made from. `body` starts
    the draft from other text than the version's (a content gap's questions added to it)."""
    body = version.body if body is None else body
    draft = ArticleVersion(
        article=version.article,
        version_label=_next_label(version),
        effective_date=timezone.localdate(),
        status=VersionStatus.DRAFT,
        audience=version.audience,
        supersedes=version,
        body=body,
        content_hash=hashlib.sha256(body.encode()).hexdigest(),
        author=author,  # type: ignore[misc]
    )
    draft.full_clean()
    draft.save()
    return draft


def submit_for_review(version: ArticleVersion) -> None:
    if version.status != VersionStatus.DRAFT:
        raise WorkflowError(f"Only drafts can be sent for review; {version} is {version.get_status_display()}.")
    version.status = VersionStatus.IN_REVIEW
    version.save(update_fields=["status", "updated_at"])


def publish(version: ArticleVersion, *, embedder: Embedder, secondary: Embedder | None = None) -> int:
    """Index a reviewed version and make it the one customers see. Returns the number of chunks written."""
    if version.status != VersionStatus.IN_REVIEW:
        raise WorkflowError(f"Only versions in review can be published; {version} is {version.get_status_display()}.")
    collection = version.article.collection
    require_same_space(collection, embedder)
    strategy, bounds = configured_chunking()
    content_hash = hashlib.sha256(version.body.encode()).hexdigest()
    source = SourceDocument(
        path=version.source_path,
        slug=version.article.slug,
        title=version.article.title,
        product=version.article.product,
        language=version.article.language,
        version_label=version.version_label,
        effective_date=version.effective_date,
        audience=version.audience,
        supersedes=None,
        body=version.body,
        content_hash=content_hash,
        summary=version.summary,
    )
    # Embedding is slow and needs no lock: it happens before the transaction opens.
    if collection.secondary_space is None:
        secondary = None  # the collection has no secondary index to keep up
    elif secondary is not None:
        require_same_space(collection, secondary, secondary=True)
    (prepared,) = prepare_documents([source], strategy=strategy, bounds=bounds, embedder=embedder, secondary=secondary)
    with transaction.atomic():
        lock_articles(collection.pk, [version.article.slug])
        version = ArticleVersion.objects.select_for_update().get(pk=version.pk)
        if version.status != VersionStatus.IN_REVIEW:
            raise WorkflowError(f"{version} changed state while it was being indexed; try again.")
        previous = ArticleVersion.objects.filter(article=version.article, status=VersionStatus.PUBLISHED).first()
        written = write_chunks([(version, prepared)], collection)
        version.supersedes = previous or version.supersedes
        version.content_hash = content_hash
        version.chunking = bounds.describe(strategy)
        version.indexed_at = timezone.now()
        version.save()
        make_published(version)
    refresh_term_statistics(collection)
    return written
