"""Golden-set candidates from real conversations: a down-voted or referred turn, the section of a published
article staff chose as the answer, and the fact from it, exported in the golden JSONL format
(lab/sample/GOLDEN.md) so `manage.py evaluate` can read them."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from answering.privacy.masking import mask_pii
from conversations.models import Turn
from knowledge.models import Chunk, Collection, VersionStatus
from knowledge.scope import VISIBLE_AUDIENCES
from lab.errors import GoldenCandidateError
from lab.models import GoldenCandidate

MAX_QUESTION_CHARS = 2000
# The golden set's facts are 2–8 words the reply must contain; a little slack for longer numbers and names.
MAX_FACT_WORDS = 12


@dataclass(frozen=True)
class Section:
    """One heading's own text in a published article version (its chunks joined)."""

    article: str
    heading_path: str
    text: str

    @property
    def key(self) -> str:
        # Slugs hold no "#", so the first one splits the key again.
        return f"{self.article}#{self.heading_path}"


def published_sections(collection: Collection, audience: str) -> list[Section]:
    """Every section of the collection's published, unretired articles that this audience may see."""
    chunks = (
        Chunk.objects.filter(
            version__article__collection=collection,
            version__article__retired_at__isnull=True,
            version__status=VersionStatus.PUBLISHED,
            version__audience__in=VISIBLE_AUDIENCES[audience],
        )
        .select_related("version__article")
        .order_by("version__article__slug", "ordinal")
    )
    texts: dict[tuple[str, str], list[str]] = {}
    for chunk in chunks:
        texts.setdefault((chunk.version.article.slug, chunk.heading_path), []).append(chunk.text)
    return [Section(article, path, "\n\n".join(parts)) for (article, path), parts in texts.items()]


def turn_sections(turn: Turn, sections: Iterable[Section]) -> list[Section]:
    """The published sections this turn cited, then those it retrieved, best first."""
    by_place = {(s.article, s.heading_path): s for s in sections}
    places = [(c.get("article"), c.get("heading_path")) for c in [*turn.citations, *turn.candidates]]
    return [by_place[place] for place in dict.fromkeys(places) if place in by_place]


def suggested_question(turn: Turn) -> str:
    """The turn's question as stored masked: the standalone rewrite retrieval searched (a follow-up carries
    its subject), or the customer's message masked when there is none."""
    return turn.rewritten_query.strip() or mask_pii(turn.customer_message.text).text


def _normalised(text: str) -> str:
    return " ".join(text.split()).casefold()


def check_candidate(*, question: str, answerable: bool, section: Section | None, fact: str) -> None:
    """GoldenCandidateError naming the field when the entry would not be a valid golden row."""
    if not question.strip():
        raise GoldenCandidateError("question", "The question is empty.")
    if len(question) > MAX_QUESTION_CHARS:
        raise GoldenCandidateError(
            "question", f"The question is {len(question)} characters; the limit is {MAX_QUESTION_CHARS}."
        )
    if not answerable:
        if section is not None or fact.strip():
            raise GoldenCandidateError(
                "answerable", "An unanswerable question has no section or fact: clear them, or mark it answerable."
            )
        return
    if section is None:
        raise GoldenCandidateError("section", "Choose the section that answers the question.")
    words = len(fact.split())
    if not words:
        raise GoldenCandidateError("fact", "Give the fact: the words of the section a right answer must contain.")
    if words > MAX_FACT_WORDS:
        raise GoldenCandidateError(
            "fact", f"The fact has {words} words; give the few (at most {MAX_FACT_WORDS}) a right answer must contain."
        )
    if _normalised(fact) not in _normalised(section.text):
        raise GoldenCandidateError(
            "fact", f"The fact is not in “{section.heading_path}”; copy its words from that section's text."
        )


@transaction.atomic
def create_candidate(
    *, turn: Turn, question: str, answerable: bool, section: Section | None, fact: str, user: Any
) -> GoldenCandidate:
    check_candidate(question=question, answerable=answerable, section=section, fact=fact)
    candidate = GoldenCandidate(
        turn=turn,
        question=question.strip(),
        answerable=answerable,
        article_slug=section.article if section else "",
        heading_path=section.heading_path if section else "",
        fact=" ".join(fact.split()),
        audience=turn.conversation.audience,
        created_by=user,
    )
    candidate.full_clean()
    candidate.save()
    return candidate


def golden_row(candidate: GoldenCandidate) -> dict[str, Any]:
    """The candidate as one line of golden.jsonl (lab/sample/GOLDEN.md's fields)."""
    answerable = candidate.answerable and bool(candidate.article_slug)
    return {
        "id": f"candidate-{candidate.pk}",
        "category": "plain" if answerable else "unanswerable",
        "audience": candidate.audience,
        "question": candidate.question,
        "answerable": answerable,
        "gold": [{"article": candidate.article_slug, "heading_path": candidate.heading_path}] if answerable else [],
        "fact": candidate.fact if answerable else None,
    }


def golden_jsonl(candidates: Iterable[GoldenCandidate]) -> str:
    """The candidates in the golden JSONL format, oldest first, one line each."""
    rows = sorted(candidates, key=lambda c: (c.created_at, c.pk))
    return "".join(json.dumps(golden_row(c), ensure_ascii=False) + "\n" for c in rows)
