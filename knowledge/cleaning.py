"""Cleaning of Markdown sources before chunking. Pure functions: no Django, no models."""

import re
from collections import Counter
from collections.abc import Iterable
from collections.abc import Set as AbstractSet

from knowledge.injection import without_instructions

_HEADING = re.compile(r"^#{1,6}\s")
_FENCE = re.compile(r"^\s*(```|~~~)")


def normalise_whitespace(text: str) -> str:
    """Unix newlines, no trailing spaces, single spaces inside prose, at most one blank line in a row.

    Fenced code and table rows keep their inner spacing: alignment there carries meaning.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ").split("\n")
    out: list[str] = []
    in_fence = False
    for line in lines:
        line = line.rstrip().replace("\u00a0", " ")
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and not line.lstrip().startswith("|"):
            indent = len(line) - len(line.lstrip(" "))
            line = " " * indent + re.sub(r" {2,}", " ", line.strip())
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    return "\n".join(out).strip() + "\n"


def _candidate_lines(body: str) -> set[str]:
    """Lines that may be page furniture: prose lines, not headings, table rows or list structure."""
    found = set()
    for line in body.split("\n"):
        stripped = line.strip()
        if stripped and not _HEADING.match(stripped) and not stripped.startswith("|") and not _FENCE.match(stripped):
            found.add(stripped)
    return found


def find_boilerplate(bodies: Iterable[str], *, min_documents: int = 3, min_share: float = 0.5) -> set[str]:
    """Lines repeated across many documents (page headers and footers), which carry no meaning of their own."""
    counts: Counter[str] = Counter()
    total = 0
    for body in bodies:
        total += 1
        counts.update(_candidate_lines(body))
    threshold = max(min_documents, min_share * total)
    return {line for line, n in counts.items() if n >= threshold}


def without_planted_statements(body: str) -> str:
    """The body less the statements written for the model rather than its readers (knowledge/injection.py):
    they are not indexed, so they neither move retrieval nor reach a generator. Headings and fenced code
    stay as they are."""
    lines: list[str] = []
    in_fence = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and not _HEADING.match(line):
            line, _ = without_instructions(line)
        lines.append(line)
    return "\n".join(lines)


def clean_markdown(body: str, boilerplate: AbstractSet[str] = frozenset()) -> str:
    kept = [line for line in normalise_whitespace(body).split("\n") if line.strip() not in boilerplate]
    return normalise_whitespace(without_planted_statements("\n".join(kept)))
