"""A passage as statements: what the cross-encoder reads and the reader quotes (a sentence, a whole list
item, a table row named by its header), with the structure that groups them into units: which block (one
paragraph, list or table) each belongs to, and whether an item is a step of a procedure.

The structure comes from the text as ingestion keeps it: Markdown lists and tables (the web and Zendesk
importers turn HTML lists and tables into the same syntax) and line breaks. Plain lines that follow a line
ending in ":" ("To add more test cases:") are the steps it announces. Fenced code is not a statement."""

from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.chunking import split_sentences

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
            for sentence in split_sentences(_EMPHASIS.sub("", line).strip()):
                add(_as_sentence(sentence), kind)
    return statements
