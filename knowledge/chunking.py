"""Chunking: Markdown → sections (by heading) → units (sentences, list items, whole tables) → chunks.

Pure functions over dataclasses; no Django. Token counts and sentence vectors are passed in, so the
caller decides how to batch the embedding work across documents.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

import numpy as np

HEADING_SEPARATOR = " › "
Strategy = Literal["heading-semantic", "heading", "sentence", "fixed"]
STRATEGIES: tuple[Strategy, ...] = ("heading-semantic", "heading", "sentence", "fixed")
TokenCounter = Callable[[str], int]

HEADING_LINE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE_LINE = re.compile(r"^\s*(```|~~~)")
_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s+")
_EMPHASIS_END = re.compile(r"[*_`]+$")
# A sentence ends at . ! ? (optionally followed by a closing quote or bracket) before whitespace and
# a capital, digit or opening mark. Common abbreviations are protected below.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[A-Z0-9\"'(\[“‘*_`])")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "approx.", "no.", "mr.", "mrs.", "ms.", "dr.", "st.", "fig.")


@dataclass(frozen=True)
class ChunkBounds:
    min_tokens: int = 40
    max_tokens: int = 200
    # Percentile of a section's neighbour distances above which the semantic strategy splits.
    split_percentile: float = 90.0
    # Overlap between windows of the fixed strategy; an eighth of the window unless given.
    overlap_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.min_tokens <= 0 or self.min_tokens * 2 > self.max_tokens:
            raise ValueError(
                f"need 0 < min_tokens and 2 × min_tokens ≤ max_tokens, got {self.min_tokens}/{self.max_tokens}"
            )
        if self.overlap_tokens is not None and not 0 <= self.overlap_tokens < self.max_tokens:
            raise ValueError("overlap_tokens must be below max_tokens")

    @property
    def overlap(self) -> int:
        return self.max_tokens // 8 if self.overlap_tokens is None else self.overlap_tokens

    def describe(self, strategy: str) -> str:
        extra = f"/overlap{self.overlap}" if strategy == "fixed" else ""
        return f"{strategy}:{self.min_tokens}-{self.max_tokens}{extra}"


@dataclass(frozen=True)
class Unit:
    """The smallest piece a chunk is built from: a sentence, a list item, a whole table or code block."""

    text: str
    kind: Literal["sentence", "item", "table", "code"]
    # How this unit joins the one before it in the same section: same paragraph, new line, new block.
    joiner: str
    tokens: int


@dataclass(frozen=True)
class Section:
    heading_path: tuple[str, ...]
    units: tuple[Unit, ...]

    @property
    def tokens(self) -> int:
        return sum(u.tokens for u in self.units)


@dataclass(frozen=True)
class ChunkDraft:
    heading_path: str
    text: str
    token_count: int


def split_sentences(paragraph: str) -> list[str]:
    pieces = _SENTENCE_END.split(paragraph.strip())
    sentences: list[str] = []
    for piece in pieces:
        piece = piece.strip()
        if not piece:
            continue
        if sentences and sentences[-1].lower().endswith(_ABBREVIATIONS):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences


def whole_sentences(sentences: list[str]) -> list[str]:
    """The sentences of a paragraph as statements: one of a word or two ("Yes!", "No.", "Not yet.") opens the
    answer after it and is said with it, never dropped from it nor quoted alone; one that ends the paragraph
    says nothing alone and is left out. A lead-in ending in ":" stands on its own."""
    out: list[str] = []
    carried = ""
    for sentence in sentences:
        if len(sentence.split()) < 3 and not sentence.endswith(":"):
            carried = f"{carried} {sentence}".strip()
            continue
        out.append(f"{carried} {sentence}".strip())
        carried = ""
    return out


def _block_units(lines: list[str], kind: str, count_tokens: TokenCounter) -> list[Unit]:
    if kind in ("table", "code"):
        text = "\n".join(lines)
        return [Unit(text, kind, "\n\n", count_tokens(text))]  # type: ignore[arg-type]
    units: list[Unit] = []
    if any(_LIST_ITEM.match(line) for line in lines):
        items: list[str] = []
        for line in lines:
            if _LIST_ITEM.match(line) or not items:
                items.append(line.strip())
            else:
                items[-1] = f"{items[-1]} {line.strip()}"
        for i, item in enumerate(items):
            units.append(Unit(item, "item", "\n\n" if i == 0 else "\n", count_tokens(item)))
        return units
    # Plain lines under a line that ends in ":" are the steps it announces ("To add more test cases:"):
    # they keep their line breaks, or the reader could not tell the steps from a paragraph.
    lead = next((i for i, line in enumerate(lines[:-1]) if _EMPHASIS_END.sub("", line.rstrip()).endswith(":")), None)
    prose = lines if lead is None else lines[: lead + 1]
    for i, sentence in enumerate(split_sentences(" ".join(line.strip() for line in prose))):
        units.append(Unit(sentence, "sentence", "\n\n" if i == 0 else " ", count_tokens(sentence)))
    for line in [] if lead is None else lines[lead + 1 :]:
        units.append(Unit(line.strip(), "item", "\n", count_tokens(line)))
    return units


def parse_sections(markdown: str, count_tokens: TokenCounter) -> list[Section]:
    """Split cleaned Markdown at headings; each section knows its heading path and its units in order."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    units: list[Unit] = []
    block: list[str] = []
    block_kind = "text"

    def flush_block() -> None:
        nonlocal block, block_kind
        if block:
            units.extend(_block_units(block, block_kind, count_tokens))
        block, block_kind = [], "text"

    def flush_section() -> None:
        nonlocal units
        flush_block()
        if units:
            sections.append(Section(tuple(title for _, title in path), tuple(units)))
        units = []

    in_fence = False
    for line in markdown.split("\n"):
        if in_fence:
            block.append(line)
            if FENCE_LINE.match(line):
                in_fence = False
                flush_block()
            continue
        if FENCE_LINE.match(line):
            flush_block()
            block, block_kind, in_fence = [line], "code", True
            continue
        heading = HEADING_LINE.match(line)
        if heading:
            flush_section()
            level = len(heading.group(1))
            path = [(lvl, title) for lvl, title in path if lvl < level] + [(level, heading.group(2))]
            continue
        if not line.strip():
            flush_block()
            continue
        kind = "table" if line.lstrip().startswith("|") else "text"
        if block and kind != block_kind:
            flush_block()
        block_kind = kind
        block.append(line)
    flush_section()
    return sections


def join_units(units: Sequence[Unit]) -> str:
    parts: list[str] = []
    for i, unit in enumerate(units):
        if i:
            parts.append(unit.joiner)
        parts.append(unit.text)
    return "".join(parts)


def needs_sentence_vectors(section: Section, bounds: ChunkBounds) -> bool:
    """Whether a semantic split of this section could produce two chunks that both meet the minimum size."""
    return len(section.units) >= 3 and section.tokens >= 2 * bounds.min_tokens


def semantic_boundaries(vectors: np.ndarray, percentile: float) -> list[int]:
    """Indices i where a new group starts at unit i: the cosine distance to unit i-1 is above the percentile.

    Vectors must be unit length, one row per unit.
    """
    if len(vectors) < 3:
        return []
    distances = 1.0 - np.sum(vectors[1:] * vectors[:-1], axis=1)
    threshold = float(np.percentile(distances, percentile))
    return [i + 1 for i, d in enumerate(distances) if d > threshold]


def _groups_at(units: Sequence[Unit], starts: Sequence[int]) -> list[list[Unit]]:
    edges = [0, *starts, len(units)]
    return [list(units[a:b]) for a, b in pairwise(edges) if b > a]


def _size(group: Sequence[Unit]) -> int:
    return sum(u.tokens for u in group)


def fold_short_groups(groups: list[list[Unit]], bounds: ChunkBounds) -> list[list[Unit]]:
    """Merge groups under min_tokens into the smaller neighbour, when the merge stays within max_tokens."""
    groups = [list(g) for g in groups]
    changed = True
    while changed and len(groups) > 1:
        changed = False
        for i, group in enumerate(groups):
            if _size(group) >= bounds.min_tokens:
                continue
            neighbours = [j for j in (i - 1, i + 1) if 0 <= j < len(groups)]
            fitting = [j for j in neighbours if _size(groups[j]) + _size(group) <= bounds.max_tokens]
            if not fitting:
                continue
            j = min(fitting, key=lambda n: _size(groups[n]))
            lo, hi = min(i, j), max(i, j)
            groups[lo : hi + 1] = [groups[lo] + groups[hi]]
            changed = True
            break
    return groups


def _hard_split(unit: Unit, bounds: ChunkBounds, count_tokens: TokenCounter) -> list[Unit]:
    """A single sentence longer than max_tokens is cut at word boundaries (tables and code stay whole)."""
    words = unit.text.split()
    pieces: list[Unit] = []
    current: list[str] = []
    for word in words:
        if current and count_tokens(" ".join([*current, word])) > bounds.max_tokens:
            text = " ".join(current)
            pieces.append(Unit(text, unit.kind, unit.joiner if not pieces else " ", count_tokens(text)))
            current = []
        current.append(word)
    if current:
        text = " ".join(current)
        pieces.append(Unit(text, unit.kind, unit.joiner if not pieces else " ", count_tokens(text)))
    return pieces


def split_long_group(group: list[Unit], bounds: ChunkBounds) -> list[list[Unit]]:
    """Cut a group above max_tokens at unit boundaries into the fewest, most even parts that fit."""
    total = _size(group)
    if total <= bounds.max_tokens or len(group) == 1:
        return [group]
    parts = math.ceil(total / bounds.max_tokens)
    while True:
        target = total / parts
        result: list[list[Unit]] = [[]]
        done = 0
        for unit in group:
            if result[-1] and (
                _size(result[-1]) + unit.tokens > bounds.max_tokens or done + unit.tokens / 2 > target * len(result)
            ):
                result.append([])
            result[-1].append(unit)
            done += unit.tokens
        if all(_size(part) <= bounds.max_tokens or len(part) == 1 for part in result) or parts >= len(group):
            return result
        parts += 1


def _explode_long_units(units: Sequence[Unit], bounds: ChunkBounds, count_tokens: TokenCounter) -> list[Unit]:
    out: list[Unit] = []
    for unit in units:
        if unit.tokens > bounds.max_tokens and unit.kind in ("sentence", "item"):
            out.extend(_hard_split(unit, bounds, count_tokens))
        else:
            out.append(unit)
    return out


def _drafts(groups: list[list[Unit]], heading_path: tuple[str, ...], count_tokens: TokenCounter) -> list[ChunkDraft]:
    path = HEADING_SEPARATOR.join(heading_path)
    drafts = []
    for group in groups:
        text = join_units(group)
        drafts.append(ChunkDraft(path, text, count_tokens(text)))
    return drafts


def chunk_section(
    section: Section,
    bounds: ChunkBounds,
    count_tokens: TokenCounter,
    sentence_vectors: np.ndarray | None = None,
) -> list[ChunkDraft]:
    """Chunks of one section, never crossing its edges.

    With sentence_vectors (one unit-length row per unit), the section is first split where neighbouring
    units drift apart in meaning; without, the section is one group. Then short groups are folded into a
    neighbour and long ones are cut at unit boundaries.
    """
    units = list(section.units)
    starts: list[int] = []
    if sentence_vectors is not None:
        if len(sentence_vectors) != len(units):
            raise ValueError(f"{len(sentence_vectors)} vectors for {len(units)} units")
        starts = semantic_boundaries(sentence_vectors, bounds.split_percentile)
    groups = fold_short_groups(_groups_at(units, starts), bounds)
    groups = [_explode_long_units(group, bounds, count_tokens) for group in groups]
    groups = [part for group in groups for part in split_long_group(group, bounds)]
    # Cutting a long group can leave a short tail; fold it into a neighbour where that still fits.
    return _drafts(fold_short_groups(groups, bounds), section.heading_path, count_tokens)


def chunk_sections_ignoring_headings(
    sections: Sequence[Section], bounds: ChunkBounds, count_tokens: TokenCounter
) -> list[ChunkDraft]:
    """The 'sentence' strategy: whole units packed up to max_tokens across the document, headings ignored."""
    drafts: list[ChunkDraft] = []
    group: list[Unit] = []
    path: tuple[str, ...] = ()
    for section in sections:
        for unit in _explode_long_units(section.units, bounds, count_tokens):
            if group and _size(group) + unit.tokens > bounds.max_tokens:
                drafts.extend(_drafts([group], path, count_tokens))
                group = []
            if not group:
                path = section.heading_path
            group.append(unit)
    if group:
        drafts.extend(_drafts([group], path, count_tokens))
    return drafts


def chunk_fixed_windows(
    sections: Sequence[Section], bounds: ChunkBounds, count_tokens: TokenCounter
) -> list[ChunkDraft]:
    """The 'fixed' strategy: windows of max_tokens words-worth of tokens, overlapping, structure ignored."""
    words: list[tuple[str, int, tuple[str, ...]]] = []
    for section in sections:
        for unit in section.units:
            words.extend((w, count_tokens(w), section.heading_path) for w in unit.text.split())
    drafts: list[ChunkDraft] = []
    start = 0
    while start < len(words):
        end, size = start, 0
        while end < len(words) and (size + words[end][1] <= bounds.max_tokens or end == start):
            size += words[end][1]
            end += 1
        text = " ".join(w for w, _, _ in words[start:end])
        drafts.append(ChunkDraft(HEADING_SEPARATOR.join(words[start][2]), text, count_tokens(text)))
        if end >= len(words):
            break
        back, overlap = end, 0
        while back > start + 1 and overlap + words[back - 1][1] <= bounds.overlap:
            back -= 1
            overlap += words[back][1]
        start = back
    return drafts


def chunk_document(
    sections: Sequence[Section],
    strategy: Strategy,
    bounds: ChunkBounds,
    count_tokens: TokenCounter,
    sentence_vectors: Sequence[np.ndarray | None] | None = None,
) -> list[ChunkDraft]:
    """All chunks of a document. For heading-semantic, sentence_vectors has one entry per section
    (None where needs_sentence_vectors said no)."""
    if strategy == "sentence":
        return chunk_sections_ignoring_headings(sections, bounds, count_tokens)
    if strategy == "fixed":
        return chunk_fixed_windows(sections, bounds, count_tokens)
    if strategy == "heading-semantic" and sentence_vectors is None:
        raise ValueError("the heading-semantic strategy needs sentence vectors")
    vectors = sentence_vectors if strategy == "heading-semantic" else None
    drafts: list[ChunkDraft] = []
    for i, section in enumerate(sections):
        drafts.extend(chunk_section(section, bounds, count_tokens, vectors[i] if vectors is not None else None))
    return drafts


def embedding_text(title: str, heading_path: str, text: str) -> str:
    """What is embedded for a chunk: its place in the help centre, then its text."""
    context = (
        heading_path if heading_path.startswith(title) else f"{title}{HEADING_SEPARATOR}{heading_path}".rstrip(" ›")
    )
    return f"{context}\n\n{text}"
