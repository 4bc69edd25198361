"""A suggestion: the reply when retrieval is confident a help section is about the question but the decision
is not confident that it answers it. It says so plainly, names at most two sections with a link to each,
quotes each one's most relevant whole unit (cited, and grounded like any claim), and asks whether that
answered the question; a "No" hands the question to a person. It is never phrased as a direct answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from answering.evidence.context import Context, Trust
from answering.read.reader import QuotedUnit, ScoredSentence, as_reply, quoted_units
from knowledge.help import help_url

SUGGEST_LEAD = "This part of our help centre looks like what you're asking about:"
SUGGEST_ASK = "Did this answer your question?"
MAX_SECTIONS = 2
# Another section is named beside the reader's only when its best statement scores this close (cross-encoder
# logits) to the strongest: a weak second guess would bury the first (tuned on the calibration sets).
SECOND_SECTION_MARGIN = 2.0


@dataclass(frozen=True)
class SuggestedSection:
    units: tuple[QuotedUnit, ...]
    article: str
    heading_path: str
    url: str

    @property
    def quote(self) -> str:
        """The section's quoted units, with their citations."""
        return as_reply(self.units)

    def as_record(self) -> dict[str, Any]:
        return units_record(self.units, self.article, self.heading_path)


def units_record(units: Sequence[QuotedUnit], article: str, heading_path: str) -> dict[str, Any]:
    """Quoted units of one section as a turn stores them (`Turn.units`): kind, text with citations, and the
    section's title and help-page link (none for a customer's own records, which have no page: article "")."""
    return {
        "passage": units[0].passage,
        "kind": units[-1].kind,
        "text": as_reply(units),
        "title": heading_path,
        "heading_path": heading_path,
        "url": help_url(article, heading_path) if article else "",
    }


def suggested_sections(
    scored: Sequence[ScoredSentence],
    chosen: Sequence[ScoredSentence],
    context: Context,
    *,
    max_sections: int = MAX_SECTIONS,
) -> list[SuggestedSection]:
    """The sections to suggest: first those the reader would quote (`chosen`, from choose_statements), each
    with the whole units it chose there; then, up to `max_sections`, the strongest other retrieved section
    whose best statement scores within SECOND_SECTION_MARGIN of the best, with that statement's unit. When
    retrieval is unsure which of two sections answers, naming both is what helps. Only help articles are
    suggested (a customer's own records are not sections of the help centre)."""

    def section_of(s: ScoredSentence) -> tuple[str, str] | None:
        passage = context.passage(s.passage)
        if passage is None or passage.trust is not Trust.RETRIEVED or passage.source != "article":
            return None
        return passage.article, passage.heading_path

    picked: dict[tuple[str, str], list[ScoredSentence]] = {}
    for s in chosen:
        if (key := section_of(s)) is not None:
            picked.setdefault(key, []).append(s)
    best_of: dict[tuple[str, str], ScoredSentence] = {}
    for s in scored:
        key = section_of(s)
        # A section is named for a statement that says something about the question, not for its heading.
        if key is not None and s.says_more_than_heading and (key not in best_of or s.score > best_of[key].score):
            best_of[key] = s
    strongest = max((s.score for s in best_of.values()), default=0.0)
    for key, best in sorted(best_of.items(), key=lambda item: -item[1].score):
        if len(picked) >= max_sections:
            break
        if key not in picked and (not picked or best.score >= strongest - SECOND_SECTION_MARGIN):
            picked[key] = [best]
    return [
        SuggestedSection(tuple(quoted_units(scored, said)), article, heading_path, help_url(article, heading_path))
        for (article, heading_path), said in list(picked.items())[:max_sections]
    ]


def suggestion_draft(sections: Sequence[SuggestedSection]) -> str:
    """What grounding checks: only the quoted units (the framing around them states nothing)."""
    return "\n\n".join(section.quote for section in sections)


def suggestion_reply(sections: Sequence[SuggestedSection]) -> str:
    """The reply as stored and sent by e-mail: the plain lead, each section's title and link with its quote,
    and the question the widget shows with Yes and No."""
    shown = [f"{section.heading_path} ({section.url})\n{section.quote}" for section in sections]
    return "\n\n".join([SUGGEST_LEAD, *shown, SUGGEST_ASK])
