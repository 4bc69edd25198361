"""Cleaning of Markdown sources before chunking. Pure functions: no Django, no models."""

import re
from collections import Counter
from collections.abc import Iterable
from collections.abc import Set as AbstractSet

from knowledge.injection import without_instructions

_HEADING = re.compile(r"^#{1,6}\s")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"!?\[[^\]]*\]\([^)]*\)")
_LIST_MARK = re.compile(r"^\s*([-*+]|\d+[.)])\s+")
# What may stand between the links of a navigation line: separators and list marks, no words.
_BETWEEN_LINKS = re.compile(r"^[\s|·•/<>«»‹›,;–—-]*$")


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
    they are not indexed, so they neither move retrieval nor reach a generator. Headings, fenced code and
    links stay as they are: a chunk quotes its article faithfully, and outside links are taken off only
    where a passage becomes evidence for a reply."""
    lines: list[str] = []
    in_fence = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and not _HEADING.match(line):
            line, _ = without_instructions(line, keep_links=True)
        lines.append(line)
    return "\n".join(lines)


def _only_links(line: str) -> int:
    """How many links a line holds when it holds nothing else (0 when it has words of its own)."""
    links = _LINK.findall(line)
    return len(links) if links and _BETWEEN_LINKS.match(_LINK.sub("", _LIST_MARK.sub("", line))) else 0


def without_navigation(body: str) -> str:
    """The body less its page furniture, found by shape: a line of several links and nothing else (a menu,
    breadcrumbs, share buttons), and a list whose every item is a link alone (a table of contents, "on this
    page", related articles). A sentence with a link in it, or a single link on a line, is kept."""
    lines = body.split("\n")
    fenced: set[int] = set()
    in_fence = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
        if in_fence or _FENCE.match(line):
            fenced.add(i)
    drop: set[int] = set()
    start = 0
    while start < len(lines):
        if start in fenced:  # code is kept as written
            start += 1
            continue
        end = start
        while end < len(lines) and end not in fenced and _LIST_MARK.match(lines[end]):
            end += 1
        if end - start >= 2 and all(_only_links(lines[i]) == 1 for i in range(start, end)):
            drop.update(range(start, end))
        if end == start:
            if _only_links(lines[start]) >= 2:
                drop.add(start)
            end += 1
        start = end
    return "\n".join(line for i, line in enumerate(lines) if i not in drop)


def clean_markdown(body: str, boilerplate: AbstractSet[str] = frozenset()) -> str:
    kept = [line for line in normalise_whitespace(body).split("\n") if line.strip() not in boilerplate]
    return normalise_whitespace(without_planted_statements(without_navigation("\n".join(kept))))
