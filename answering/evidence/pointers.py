"""Pointers: a statement that sends the reader to another section instead of answering ("For when the refund
reaches your card, see Refunds.", a link to another help page). When one is among the turn's best statements,
the section it names is read too, one hop and one section, so that the reply can quote the answer there, cited
to it, rather than the pointer.

A pointer is found from the text's shape, not from its words: a name written with a capital inside running
text (not at the start of a sentence) that is the title of an article or the heading of a section of the same
collection, or a link to a help page."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from answering.evidence.context import Context, Trust
from answering.read.reader import ScoredSentence
from knowledge.chunking import HEADING_SEPARATOR
from knowledge.models import Chunk
from knowledge.rerank import CrossEncoder, Reading, read_passages
from knowledge.retrieval import chunks_named
from knowledge.scope import Scope

_WORD = re.compile(r"[\w&'’-]+")
_LINK = re.compile(r"/help/([a-z0-9][a-z0-9-]*)")
# A section title runs a few words ("Gift cards", "Return shipping costs").
MAX_NAME_WORDS = 5
# Sections read when following pointers: one article's sections, or a few named ones.
MAX_FOLLOWED_CHUNKS = 6
# Pointers whose sections are read in one turn, at most: the cost of a turn stays bounded.
MAX_POINTERS_READ = 2
# A pointer is followed when it is this close (logits) to the turn's best statement: one the reader could say.
POINTER_MARGIN = 2.0


def pointer_names(text: str) -> list[str]:
    """The names a statement may point to: each run of up to MAX_NAME_WORDS words that opens with a capital
    letter inside a sentence (after a word, not after ".", "!", "?" or ":"), as titles are written in
    running text."""
    names: list[str] = []
    words = list(_WORD.finditer(text))
    for i, word in enumerate(words):
        before = text[: word.start()].rstrip()
        if not before or before[-1] in ".!?:;" or not word.group(0)[0].isupper():
            continue
        for length in range(1, MAX_NAME_WORDS + 1):
            if i + length > len(words):
                break
            names.append(text[word.start() : words[i + length - 1].end()])
    return names


def pointer_slugs(text: str) -> list[str]:
    """The articles a statement links to on the help pages."""
    return _LINK.findall(text)


@dataclass(frozen=True)
class Followed:
    """The section a pointer led to, its statements as read against the question, the chunk of the passage
    that pointed there and the pointer's text."""

    chunk: Chunk
    readings: tuple[Reading, ...]
    score: float
    pointed_from: int
    pointer: str

    def replaces(self, statement: ScoredSentence, context: Context) -> bool:
        """Whether this is the pointer followed: what it pointed to is said instead of it."""
        passage = context.passage(statement.passage)
        return passage is not None and passage.chunk_id == self.pointed_from and statement.text == self.pointer


def follow_pointer(
    question: str, scored: Sequence[ScoredSentence], context: Context, scope: Scope, reranker: CrossEncoder
) -> Followed | None:
    """The section a strong pointer leads to, when what it says there answers better than the pointer
    alone; None when no statement near the best points anywhere new. The pointed-to sections are found with
    the turn's scope, so a pointer never leads past the customer's audience or the version in force."""
    if not scored:
        return None
    best = max(s.best_reading for s in scored)
    candidates = [s for s in scored if s.best_reading >= best - POINTER_MARGIN and s.kind != "row"]
    # The sections read already; one retrieved lower down, which the reader does not read, may be led to.
    given = {p.chunk_id for s in scored if (p := context.passage(s.passage)) is not None and p.chunk_id is not None}
    reads = 0
    for pointer in sorted(candidates, key=lambda s: -s.best_reading):
        passage = context.passage(pointer.passage)
        if passage is None or passage.trust is not Trust.RETRIEVED or passage.chunk_id is None:
            continue
        own = {h.strip().casefold() for h in passage.heading_path.split(HEADING_SEPARATOR)}
        names = [n for n in pointer_names(pointer.text) if n.casefold() not in own]
        slugs = [s for s in pointer_slugs(pointer.text) if s != passage.article]
        chunks = [c for c in chunks_named(scope, names, slugs, limit=MAX_FOLLOWED_CHUNKS) if c.pk not in given]
        if not chunks or reads == MAX_POINTERS_READ:
            continue
        reads += 1
        read = read_passages(reranker, question, [(c.heading_path, c.text) for c in chunks], paired=0)
        chunk, found = max(zip(chunks, read, strict=True), key=lambda pair: pair[1].score)
        # Compared with the pointer read alone: read after the sentence before it, a pointer borrows that
        # sentence's relevance, not an answer of its own.
        if found.score > pointer.score:
            return Followed(chunk, found.readings, found.score, passage.chunk_id, pointer.text)
    return None
