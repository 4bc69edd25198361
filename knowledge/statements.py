"""A passage as statements: what the cross-encoder reads and the reader quotes (a sentence, a whole list
item, a table row named by its header), with the structure that groups them into units: which block (one
paragraph, list or table) each belongs to, and whether an item is a step of a procedure.

The structure comes from the text as ingestion keeps it: Markdown lists and tables (the web and Zendesk
importers turn HTML lists and tables into the same syntax) and line breaks. Plain lines that follow a line
ending in ":" ("To add more test cases:") are the steps it announces. Fenced code is not a statement."""

from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.chunking import split_sentences, whole_sentences

_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}")
_FENCE = re.compile(r"^(```|~~~)")
_EMPHASIS = re.compile(r"\*\*|__|`")
_LIST_MARK = re.compile(r"^(?:[-*•]|\d+[.)])\s+")
_NUMBERED = re.compile(r"^\d+[.)]\s+")
# A statement that opens like these continues the one before it: alone it says nothing.
_LEANS_ON_PREVIOUS = re.compile(
    r"^(this|that|these|those|it|its|they|them|their|then|repeat|also|otherwise|however|but|and|or|so|still|"
    r"instead|here|there|such|both|either|neither|in that case|if so|if not|after that|once done)\b",
    re.IGNORECASE,
)

# A sentence that opens like these states a condition; the sentences after it in its paragraph may hold only
# under it ("If the address is abroad, we cannot change it. Cancel the order and order again.").
_SETS_CONDITION = re.compile(
    r"^(if|unless|when|whenever|once|provided|as long as|in case|only if|where|until|after|before)\b",
    re.IGNORECASE,
)


# Asides: statements a help centre writes around its answers, never one of them. Told by their shape, as
# measured on statements of help centres others wrote (lab/datasets/boilerplate/, lab/boilerplate_evaluation.py):
# - a cheer, greeting or sign-off: a short exclamation with nothing specific in it (no number, code or UI
#   name), or the close of a procedure with nothing more to do;
# - an invitation to write to the writers: a verb of asking or telling aimed at "us" or the team, and no
#   fact beside it (no number, no address or link);
# - text about the text: the page, guide or section talking about itself, a sentence announcing what
#   comes, or a pointer and little else ("See [Refunds](refunds.md) for details.").
_SPECIFIC = re.compile(r"\d|`|\*\*|@|https?://|\]\(|[A-Z][a-z]+ [>›→] ")
_TALK_TO_US = re.compile(
    r"\b(contact|write|e-?mail|message|ask|tell|reach(?: out)?|talk|chat|speak|ping|get in touch|let)\b[^.!?]{0,40}?"
    r"\b(us|our (?:support|team|staff|community|forum|experts|engineers)|the (?:support )?team|support team|know)\b"
    r"|\b(feel free|do not hesitate|don't hesitate|happy to help|here to help|we(?:'d| would) love to hear)\b",
    re.IGNORECASE,
)
_ABOUT_ITSELF = re.compile(
    r"\b(this|the following|the next|the previous|the rest of this|our) (guide|article|page|section|tutorial|"
    r"document|chapter|post|walkthrough|video|documentation)\b[^.!?]{0,60}?\b(covers?|explains?|describes?|shows?|"
    r"walks?|will|we(?:'ll| will)|you(?:'ll| will)|learn|introduces?|goes|takes)\b"
    r"|^\s*(in this (guide|article|page|section|tutorial|document|post)|read on|keep reading|learn more|read more|"
    r"find out more|page url|last (updated|modified)|edit this page|table of contents|on this page)\b",
    re.IGNORECASE,
)
# A pointer and nothing else: it opens by pointing elsewhere, holds a link, and says little beside it.
_POINTS_ELSEWHERE = re.compile(
    r"^\s*>?\s*\[?\s*(see(?: also| here)?|learn more|read more|find out more|more on|more about|check out|refer to|"
    r"for more (?:details|information|info))\b",
    re.IGNORECASE,
)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
# Pointing to more elsewhere, anywhere in a statement with a link: "[Read more here](…)", "More details [here](…)".
_MORE_ELSEWHERE = re.compile(
    r"\b(?:read|learn|find out) (?:more|here)\b|\bmore (?:details|information|info)\b|\btake a look at\b",
    re.IGNORECASE,
)
# Announcing what comes, as a sentence of its own: "Here's how to block your own visits."
_ANNOUNCES = re.compile(r"^\s*(?:here(?:'s|’s| is| are)|below (?:is|are)|the following (?:is|are))\b", re.IGNORECASE)
# Closing a procedure with nothing more to do: "That's it.", "Your goal should now be set up."
_CLOSES = re.compile(
    r"^\s*(?:and )?that(?:'s|’s| is) (?:it|all)\b|\bshould now be (?:set up|ready|done|working)\b|"
    r"^\s*you(?:'re|’re| are) (?:all set|done|ready to go)\b",
    re.IGNORECASE,
)


def aside_kind(text: str) -> str | None:
    """ "greeting", "contact" or "navigation" when a statement is an aside of that kind, else None."""
    words = text.split()
    specific = bool(_SPECIFIC.search(text))
    if text.rstrip().endswith("!") and len(words) <= 6 and not specific:
        return "greeting"
    if _CLOSES.search(text) and len(words) <= 14:
        return "greeting"
    outside_links = len(_LINK_TARGET.sub("]", text).split())
    pointer = "](" in text and (
        (bool(_POINTS_ELSEWHERE.match(text)) and outside_links <= 14)
        or (bool(_MORE_ELSEWHERE.search(text)) and outside_links <= 18)
    )
    announces = bool(_ANNOUNCES.match(text)) and not text.rstrip().endswith(":")
    if pointer or announces or (_ABOUT_ITSELF.search(text) and not specific):
        return "navigation"
    if _TALK_TO_US.search(text) and not specific and len(words) <= 30:
        return "contact"
    return None


@dataclass(frozen=True)
class Statement:
    """One quotable statement of a passage; position orders a passage's statements, block groups those
    of one paragraph, list or table."""

    text: str
    kind: str  # "sentence", "item" or "row"
    position: int
    block: int
    # A step of a procedure: a numbered item, or a plain line under a line that ends in ":".
    step: bool = False

    @property
    def leans_on_previous(self) -> bool:
        return self.kind == "sentence" and bool(_LEANS_ON_PREVIOUS.match(self.text))

    @property
    def sets_condition(self) -> bool:
        """A sentence that states a condition (not a lead-in announcing a list): what follows it in its
        paragraph is said with it or not at all."""
        return self.kind == "sentence" and not self.introduces and bool(_SETS_CONDITION.match(self.text))

    @property
    def introduces(self) -> bool:
        """Ends with a colon: it announces what follows ("To be eligible:") rather than saying it."""
        return self.text.rstrip().endswith(":")


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def _as_sentence(text: str) -> str:
    text = _EMPHASIS.sub("", text).strip()
    return text if text.endswith((".", "!", "?", ":")) else f"{text}."


def passage_statements(text: str) -> list[Statement]:
    """A passage as statements. A list item is one statement, whatever its sentences; a table row becomes
    one sentence naming its columns ("Code: E-4012; Meaning: Card declined by issuing bank.")."""
    statements: list[Statement] = []
    lines = [line.strip() for line in text.splitlines()]
    header: list[str] = []
    block, previous_kind = 0, ""
    # Plain lines right under a line that ends in ":" are steps, until a blank line.
    under_lead = False

    def add(piece: str, kind: str, step: bool = False) -> None:
        # A step may be short ("Click Save."), and so may a lead-in ("Escalate when:"), which gives the list
        # after it its meaning; anything else under three words says nothing quotable.
        if len(piece.split()) >= (2 if step else 1 if piece.endswith(":") else 3):
            statements.append(Statement(piece, kind, len(statements), block, step))

    in_code = False
    for index, line in enumerate(lines):
        # Code is shown on the help page, never quoted as a statement: a line of code answers no question
        # in words, and quoted out of its block it reads as nonsense.
        if _FENCE.match(line) or in_code:
            in_code = in_code != bool(_FENCE.match(line))
            continue
        if not line:
            block, previous_kind, under_lead = block + 1, "", False
            continue
        if _TABLE_RULE.match(line):
            continue
        kind = "row" if line.startswith("|") else "item" if _LIST_MARK.match(line) else "sentence"
        line_step = kind == "sentence" and under_lead
        if line_step:
            kind = "item"
        if kind != previous_kind and previous_kind:
            block += 1
        previous_kind = kind
        under_lead = line_step or (kind == "sentence" and _EMPHASIS.sub("", line).rstrip().endswith(":"))
        if kind == "row":
            if index + 1 < len(lines) and _TABLE_RULE.match(lines[index + 1]):
                header = _cells(line)
                continue
            cells = _cells(line)
            named = [f"{h}: {c}" if h else c for h, c in zip(header, cells, strict=False)] if header else cells
            add(_as_sentence("; ".join(c for c in named if c)), kind)
        elif kind == "item":
            step = line_step or bool(_NUMBERED.match(line))
            add(_as_sentence(_LIST_MARK.sub("", _EMPHASIS.sub("", line)).strip()), kind, step)
        else:
            for sentence in whole_sentences(split_sentences(_EMPHASIS.sub("", line).strip())):
                add(_as_sentence(sentence), kind)
    return statements
