"""Content gaps: the questions the assistant abstained on or referred, and those whose suggested section the
customer said did not answer ("No" under a suggestion: a section near the question that does not say it),
grouped by meaning, each group with the nearest section the help centre already has, so an article author sees
what customers ask that it does not say.

The clustering is agglomerative with average linkage over cosine distance, cut at a similarity threshold:
- no k: nobody knows in advance how many gaps there are, and a threshold in units of cosine similarity means
  the same thing on a week of questions as on a year;
- average linkage: a question joins a group when it is, on average, close to all of its members. Single
  linkage chains ("gift wrap price" → "gift card top-up" → "gift receipt" end up as one group); complete
  linkage lets one odd phrasing split a topic;
- deterministic, and exact on the few thousand questions a collection gathers between two runs.
The threshold was tuned on the calibration sets' unanswerable questions and measured on the golden set's
(`manage.py evaluate gaps`, README "Content gaps").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from answering.outcome import Decision
from answering.privacy.masking import searchable, without_placeholders
from answering.rewrite import is_follow_up
from conversations.models import FeedbackRating, Turn
from insights.errors import GapError
from insights.models import ContentGap, ContentGapRun
from knowledge import publishing
from knowledge.dense import dense_search
from knowledge.embeddings import Embedder, require_same_space
from knowledge.errors import KnowledgeError
from knowledge.models import ArticleVersion, Chunk, Collection, VersionStatus
from knowledge.scope import VISIBLE_AUDIENCES, Scope

# Tuned on the calibration sets' unanswerable questions (lab/gap_evaluation.py); see the README.
DEFAULT_THRESHOLD = 0.4
DEFAULT_SINCE_DAYS = 30
EXAMPLES = 5
# Average linkage holds every pairwise distance in memory: the newest questions are clustered, the rest wait.
MAX_QUESTIONS = 3000
UNANSWERED = (Decision.ABSTAINED, Decision.REFERRED)
# A suggestion the customer answered "No" (a thumbs down on it) did not answer either.
DECLINED_SUGGESTION = Q(decision=Decision.SUGGESTED, feedback__rating=FeedbackRating.DOWN)


@dataclass(frozen=True)
class UnansweredQuestion:
    turn_id: int
    text: str  # masked: what the turn stored for analysis, the only form shown or stored
    audience: str
    asked_at: datetime
    read_as: str  # what the embedding model reads (model_text), never shown nor stored


@dataclass(frozen=True)
class NearestSection:
    article_slug: str
    heading_path: str
    score: float  # cosine similarity of the section to the group's centre


@dataclass(frozen=True)
class Gap:
    questions: list[UnansweredQuestion]  # most central first
    nearest: NearestSection | None

    @property
    def size(self) -> int:
        return len(self.questions)

    @property
    def newest_at(self) -> datetime:
        return max(q.asked_at for q in self.questions)


def check_threshold(value: float) -> float:
    if not (math.isfinite(value) and 0 < value < 1):
        raise GapError(f"The threshold is a cosine similarity between 0 and 1 (exclusive), not {value}.")
    return value


def check_since_days(value: int) -> int:
    if value < 1:
        raise GapError(f"--since is a number of days, 1 or more, not {value}.")
    return value


def unanswered_questions(collection: Collection, *, since: datetime) -> list[UnansweredQuestion]:
    """The collection's abstained and referred questions, and its suggestions answered No, asked since then,
    newest first (at most MAX_QUESTIONS)."""
    turns = (
        Turn.objects.filter(
            Q(decision__in=UNANSWERED) | DECLINED_SUGGESTION,
            conversation__collection=collection,
            conversation__from_lab=False,
            created_at__gte=since,
        )
        .select_related("conversation", "customer_message")
        .order_by("-created_at", "-id")[:MAX_QUESTIONS]
    )
    questions = []
    for turn in turns:
        # The turn stores the question masked (and a follow-up already made to stand alone); a turn written
        # without it falls back to the message, masked as staff without the personal-data permission see it.
        text = turn.rewritten_query.strip() or turn.customer_message.words_for(unmasked=False).strip()
        if text:
            read_as = model_text(turn.customer_message.text, text)
            questions.append(UnansweredQuestion(turn.pk, text, turn.conversation.audience, turn.created_at, read_as))
    return questions


def model_text(raw: str, masked: str) -> str:
    """What the embedding model reads of a question: as retrieval does (conversations/records/turns.py), the customer's
    words with contact details, card, account and IP numbers removed but names and places kept, because the
    masking takes help-centre words for them ("Oak Circle", "the UK" become <LOCATION_1>) and clusters then
    lose their topic (measured in lab/gap_evaluation.py: F 0.86 against 0.78). A follow-up reads as the turn
    rewrote it to stand alone. The vectors stay in memory; only masked text is shown or stored."""
    if is_follow_up(raw):
        return without_placeholders(masked)
    return searchable(raw)


def cluster(vectors: np.ndarray, *, threshold: float) -> list[list[int]]:
    """Groups of row numbers of unit-length vectors whose average cosine similarity is at least the threshold;
    each group most central first (nearest its mean), larger groups first."""
    if len(vectors) == 0:
        return []
    if len(vectors) == 1:
        labels = np.zeros(1, dtype=int)
    else:
        # Imported here: scikit-learn adds 0.6 s to the start of every process (server, workers, commands).
        from sklearn.cluster import AgglomerativeClustering

        labels = AgglomerativeClustering(
            n_clusters=None, metric="cosine", linkage="average", distance_threshold=1.0 - threshold
        ).fit_predict(vectors)
    groups = []
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        centre = vectors[members].mean(axis=0)
        closeness = vectors[members] @ centre
        groups.append([int(members[i]) for i in np.argsort(-closeness, kind="stable")])
    return sorted(groups, key=lambda g: (-len(g), g[0]))


def _narrowest_audience(questions: list[UnansweredQuestion]) -> str:
    # The section every asker could have been shown: a staff-only article does not close a public gap.
    return min((q.audience for q in questions), key=lambda a: len(VISIBLE_AUDIENCES[a]))


def nearest_section(collection: Collection, vector: np.ndarray, *, audience: str) -> NearestSection | None:
    """The published section of the collection, visible to the audience, nearest the vector (pgvector HNSW)."""
    hits = dense_search(Scope(collection.pk, audience), vector, k=1)
    if not hits:
        return None
    chunk = Chunk.objects.select_related("version__article").get(pk=hits[0].chunk_id)
    return NearestSection(chunk.version.article.slug, chunk.heading_path, round(hits[0].score, 4))


def embed_questions(texts: list[str], embedder: Embedder) -> np.ndarray:
    """Questions (as model_text gives them) in the model's query form."""
    return embedder.encode([embedder.query_prefix + text for text in texts])


def find_gaps(
    collection: Collection, questions: list[UnansweredQuestion], *, embedder: Embedder, threshold: float
) -> list[Gap]:
    """Cluster the questions with the model the collection's chunks were embedded with, so the nearest-section
    score compares like with like."""
    try:
        require_same_space(collection, embedder)
    except KnowledgeError as exc:
        raise GapError(str(exc)) from None
    check_threshold(threshold)
    vectors = embed_questions([q.read_as for q in questions], embedder)
    gaps = []
    for group in cluster(vectors, threshold=threshold):
        members = [questions[i] for i in group]
        centre = vectors[group].mean(axis=0)
        centre = centre / np.linalg.norm(centre)
        gaps.append(Gap(members, nearest_section(collection, centre, audience=_narrowest_audience(members))))
    return gaps


@transaction.atomic
def record_run(collection: Collection, questions: int, gaps: list[Gap], settings: dict[str, Any]) -> ContentGapRun:
    run = ContentGapRun.objects.create(collection=collection, questions=questions, settings=settings)
    ContentGap.objects.bulk_create(
        ContentGap(
            run=run,
            size=gap.size,
            examples=[q.text for q in gap.questions[:EXAMPLES]],
            turn_ids=[q.turn_id for q in gap.questions],
            nearest_article_slug=gap.nearest.article_slug if gap.nearest else "",
            nearest_heading_path=gap.nearest.heading_path if gap.nearest else "",
            nearest_score=gap.nearest.score if gap.nearest else None,
            newest_at=gap.newest_at,
        )
        for gap in gaps
    )
    return run


def run_content_gaps(
    collection: Collection,
    *,
    embedder: Embedder,
    since_days: int = DEFAULT_SINCE_DAYS,
    threshold: float = DEFAULT_THRESHOLD,
    now: datetime | None = None,
) -> ContentGapRun:
    """Find the collection's content gaps of the last `since_days` days and store them as a new run."""
    check_since_days(since_days)
    check_threshold(threshold)
    since = (now or timezone.now()) - timedelta(days=since_days)
    questions = unanswered_questions(collection, since=since)
    gaps = find_gaps(collection, questions, embedder=embedder, threshold=threshold)
    settings = {
        "since_days": since_days,
        "threshold": threshold,
        "clustering": "agglomerative, average linkage, cosine",
        "model": embedder.fingerprint.describe(),
        "max_questions": MAX_QUESTIONS,
    }
    return record_run(collection, len(questions), gaps, settings)


def draft_body(version: ArticleVersion, gap: ContentGap) -> str:
    """The article with a new section to write: the questions customers asked, as they were stored (masked)."""
    asked = "\n".join(f"- {' '.join(q.split())}" for q in gap.examples)
    heading = " ".join(gap.examples[0].split())
    return (
        f"{version.body.rstrip()}\n\n## {heading}\n\n"
        f"Customers asked this {gap.size} time{'s' if gap.size != 1 else ''} and the assistant could not answer. "
        f"Write the answer here, then remove this paragraph and the questions below before sending it for review.\n\n"
        f"{asked}\n"
    )


@transaction.atomic
def start_draft(gap: ContentGap, *, author: object | None) -> ArticleVersion:
    """A draft of the nearest article with the gap's questions as a new section to write (the usual draft →
    review → publish workflow then applies), linked from the gap."""
    gap = ContentGap.objects.select_for_update(of=("self",)).select_related("run__collection", "draft").get(pk=gap.pk)
    if gap.draft is not None:
        raise GapError(f"This gap already has a draft: {gap.draft}.")
    if not gap.nearest_article_slug:
        raise GapError("This gap has no nearest article to draft from (the collection had no published section).")
    version = ArticleVersion.objects.filter(
        article__collection=gap.run.collection,
        article__slug=gap.nearest_article_slug,
        article__retired_at__isnull=True,
        status=VersionStatus.PUBLISHED,
    ).first()
    if version is None:
        raise GapError(f"The article {gap.nearest_article_slug!r} has no published version any more to draft from.")
    draft = publishing.new_draft_from(version, author=author, body=draft_body(version, gap))
    gap.draft = draft
    gap.save(update_fields=["draft"])
    return draft
