"""A suggestion: the reply when retrieval is confident a help section is about the question but the decision
is not confident that it answers it. It says so plainly, names at most two sections with a link to each,
quotes each one's most relevant whole unit (cited, and grounded like any claim), and asks whether that
answered the question; a "No" hands the question to a person. It is never phrased as a direct answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from conversations.context import Context, Trust
from conversations.reader import QuotedUnit, ScoredSentence, as_reply, quoted_units
from knowledge.help import help_url

SUGGEST_LEAD = "This part of our help centre looks like what you're asking about:"
SUGGEST_ASK = "Did this answer your question?"
MAX_SECTIONS = 2
# A second section is named only when its best statement scores this close (cross-encoder logits) to the
# first's: a weak second guess would bury the first.
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
        return {
            "passage": self.units[0].passage,
            "kind": self.units[-1].kind,
            "text": self.quote,
            "title": self.heading_path,
            "heading_path": self.heading_path,
            "url": self.url,
        }


def suggested_sections(
    scored: Sequence[ScoredSentence], context: Context, *, max_sections: int = MAX_SECTIONS
) -> list[SuggestedSection]:
    """The retrieved sections to suggest, strongest first: each one's best statement grown into its whole
    unit. Only help articles are suggested (a customer's own records are not sections of the help centre)."""
    best_of_section: dict[tuple[str, str], ScoredSentence] = {}
    for s in scored:
        passage = context.passage(s.passage)
        if passage is None or passage.trust is not Trust.RETRIEVED or passage.source != "article":
            continue
        key = (passage.article, passage.heading_path)
        if key not in best_of_section or s.score > best_of_section[key].score:
            best_of_section[key] = s
    # Sections in the order retrieval ranked their passages.
    ranked = sorted(best_of_section.items(), key=lambda item: item[1].passage)
    sections: list[SuggestedSection] = []
    for (article, heading_path), best in ranked[:max_sections]:
        if sections and best.score < max(b.score for b in best_of_section.values()) - SECOND_SECTION_MARGIN:
            break
        units = quoted_units(scored, [best])
        sections.append(SuggestedSection(tuple(units), article, heading_path, help_url(article, heading_path)))
    return sections


def suggestion_draft(sections: Sequence[SuggestedSection]) -> str:
    """What grounding checks: only the quoted units (the framing around them states nothing)."""
    return "\n\n".join(section.quote for section in sections)


def suggestion_reply(sections: Sequence[SuggestedSection]) -> str:
    """The reply as stored and sent by e-mail: the plain lead, each section's title and link with its quote,
    and the question the widget shows with Yes and No."""
    shown = [f"{section.heading_path} ({section.url})\n{section.quote}" for section in sections]
    return "\n\n".join([SUGGEST_LEAD, *shown, SUGGEST_ASK])
