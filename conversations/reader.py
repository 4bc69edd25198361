"""The reader: the offline generator. It answers by quoting the articles' own statements, so every claim
stays checkable by the grounding cascade, but it chooses them as a person answering would.

A passage is read as statements (a sentence, a whole list item, a table row named by its header). The
cross-encoder scores each one with its heading against the question. The reply leads with the statement
that answers, never with one that only makes sense after the one before it ("Repeat to create multiple
scenarios."), adds a neighbour from the same section only when it completes the answer (a condition, an
exception, a continuation), takes another section's statement only when it is as strong, and says each
fact once, however many articles repeat it (near-duplicates are found by meaning, not only by words).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from conversations.claims import content_words, numbers_in
from conversations.context import Context, Trust
from knowledge.chunking import HEADING_SEPARATOR, split_sentences
from knowledge.injection import looks_like_instruction, without_outside_links
from knowledge.rerank import CrossEncoder, Reading, best_of, read_passages
from knowledge.statements import Statement, passage_statements

# A code in a heading ("E-4012", "W-9", "SKU2231"): letters joined to digits.
_IDENTIFIER = re.compile(r"\b[A-Za-z]{1,4}-?\d{2,}\b")
# A statement that opens like these narrows the one before it: a condition, an exception, a caveat.
_QUALIFIES_PREVIOUS = re.compile(
    r"^(if|unless|except|only|note|however|but|this|these|it|they|otherwise|weekends|allow)\b", re.IGNORECASE
)


@dataclass(frozen=True)
class ScoredSentence:
    passage: int
    text: str
    score: float
    position: int = 0
    block: int = 0
    kind: str = "sentence"
    heading: str = ""
    # Read right after the statement before it: an answer that only makes sense as the reply to its
    # predecessor ("If it has shipped, you cannot cancel it." "Refuse the delivery.") scores here.
    after_previous: float | None = None

    @property
    def statement(self) -> Statement:
        return Statement(self.text, self.kind, self.position, self.block)

    @property
    def best_reading(self) -> float:
        """Its score alone or after its predecessor, whichever reads as the better answer."""
        return best_of(self.score, self.after_previous)


def best_reading(scored: Sequence[ScoredSentence]) -> float | None:
    """The best statement's logit, alone or read after its predecessor; None when nothing was scored."""
    return max((s.best_reading for s in scored), default=None)


def passage_sentences(text: str) -> list[str]:
    """The statements of a passage as plain text (what grounding compares a claim with)."""
    return [s.text for s in passage_statements(text)]


def score_sentences(
    question: str,
    context: Context,
    reranker: CrossEncoder,
    *,
    read: Mapping[int, Sequence[Reading]] | None = None,
    passages: int = 3,
) -> list[ScoredSentence]:
    """The statements of the customer's verified records and of the top retrieved passages, best answer
    first. A passage the reranker already read (`read`, by chunk) keeps those scores: each text is scored
    once per turn; the others are read now. Statements written for the model ("ignore your rules…",
    conversations/injection.py) are never candidates, and links out of the help centre are not quoted:
    evidence is quoted, never obeyed or repeated as policy."""
    read = read or {}
    verified = [p for p in context.evidence if p.trust is Trust.VERIFIED]
    retrieved = [p for p in context.evidence if p.trust is not Trust.VERIFIED][:passages]
    chosen = [*verified, *retrieved]
    unread = [p for p in chosen if p.chunk_id is None or p.chunk_id not in read]
    fresh = read_passages(reranker, question, [(p.heading_path, p.text) for p in unread]) if unread else []
    now = {id(p): r.readings for p, r in zip(unread, fresh, strict=True)}
    scored: list[ScoredSentence] = []
    for p in chosen:
        passage_readings = read[p.chunk_id] if p.chunk_id is not None and p.chunk_id in read else now[id(p)]
        # Read from the stored chunk, a reading may hold what the context left out of the passage.
        given = set(passage_sentences(p.text))
        quoted = {
            r.statement.position
            for r in passage_readings
            if not looks_like_instruction(r.statement.text) and without_outside_links(r.statement.text) in given
        }
        scored.extend(
            ScoredSentence(
                p.number,
                without_outside_links(r.statement.text),
                r.alone,
                r.statement.position,
                r.statement.block,
                r.statement.kind,
                p.heading_path,
                # Read after an instruction it would carry that instruction along: alone only.
                r.after_previous if r.statement.position - 1 in quoted else None,
            )
            for r in passage_readings
            if r.statement.position in quoted
        )
    return sorted(scored, key=lambda s: -s.score)


@dataclass(frozen=True)
class ReaderSettings:
    """How far below the best statement another may be and still be said (cross-encoder logits)."""

    lead_margin: float = 1.5  # a self-contained statement this close to the best may lead instead of it
    completion_margin: float = 4.0  # a qualifying neighbour of the lead this close completes the answer
    companion_margin: float = 2.0  # another statement this close is a second part of the answer
    section_prior: float = 1.0  # taken off per passage below the first: the best section answers alone
    pair_gain: float = 0.5  # a statement read after its predecessor beating every single one by this leads
    max_sentences: int = 3
    same_fact_cosine: float = 0.8
    same_numbers_cosine: float = 0.6


Embed = Callable[[list[str]], np.ndarray]


class _SameFact:
    """Whether two statements say the same thing: most of the same words, or close in meaning (the
    embedding cosine), or the same numbers and fairly close in meaning ("Card refunds take 5 to 10
    business days" and "the refund shows on your statement 5 to 10 business days after approval"); two
    statements with different numbers are different facts however close their words."""

    def __init__(self, embed: Embed | None, settings: ReaderSettings) -> None:
        self.embed, self.settings = embed, settings
        self.vectors: dict[str, np.ndarray] = {}

    def prepare(self, texts: Sequence[str]) -> None:
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if self.embed is not None and missing:
            self.vectors.update(zip(missing, self.embed(missing), strict=True))

    def __call__(self, a: str, b: str) -> bool:
        numbers_a, numbers_b = numbers_in(a), numbers_in(b)
        if numbers_a and numbers_b and numbers_a != numbers_b:
            return False  # other numbers, another fact ("placed on 22 October" is not "delivered on 25 October")
        wa, wb = content_words(a), content_words(b)
        if wa and wb and len(wa & wb) / len(wa | wb) >= 0.6:
            return True
        if a not in self.vectors or b not in self.vectors:
            return False
        cosine = float(self.vectors[a] @ self.vectors[b])
        if numbers_a and numbers_b:
            return cosine >= self.settings.same_numbers_cosine
        return cosine >= self.settings.same_fact_cosine


def _neighbour(scored: Sequence[ScoredSentence], of: ScoredSentence, step: int) -> ScoredSentence | None:
    return next((s for s in scored if s.passage == of.passage and s.position == of.position + step), None)


def choose_statements(
    scored: Sequence[ScoredSentence], *, embed: Embed | None = None, settings: ReaderSettings | None = None
) -> list[ScoredSentence]:
    """The statements of the reply, in the order they are said; empty when there is nothing to say."""
    settings = settings or ReaderSettings()
    if not scored:
        return []
    first = min(s.passage for s in scored)
    weighed = [_below_first(s, settings.section_prior * (s.passage - first)) for s in scored]
    said = _choose(weighed, embed, settings)
    original = {id(w): s for w, s in zip(weighed, scored, strict=True)}
    return [original[id(s)] for s in said]


def _below_first(s: ScoredSentence, prior: float) -> ScoredSentence:
    paired = None if s.after_previous is None else s.after_previous - prior
    return replace(s, score=s.score - prior, after_previous=paired)


def _choose(scored: list[ScoredSentence], embed: Embed | None, settings: ReaderSettings) -> list[ScoredSentence]:
    ranked = sorted(scored, key=lambda s: -s.score)
    best = ranked[0].score
    leads = [s for s in ranked if s.score >= best - settings.lead_margin]
    lead = next((s for s in leads if not s.statement.leans_on_previous and not s.statement.introduces), ranked[0])
    paired = max(scored, key=lambda s: s.after_previous if s.after_previous is not None else -math.inf)
    if paired.after_previous is not None and paired.after_previous >= best + settings.pair_gain:
        lead = paired  # the answer is this statement as the reply to the one before it: both are said
    chosen = [lead]
    if (lead is paired or lead.statement.leans_on_previous) and (before := _neighbour(scored, lead, -1)) is not None:
        chosen.insert(0, before)
    after = _neighbour(scored, lead, 1)
    completion: list[ScoredSentence] = []
    if lead.statement.introduces and after is not None:
        # What it announces: the best items of the list that follows it.
        completion = [s for s in ranked if s.passage == lead.passage and s.kind == "item" and s.block == after.block]
    elif (
        after is not None
        and after.block == lead.block
        and after.score >= best - settings.completion_margin
        and (after.statement.leans_on_previous or _QUALIFIES_PREVIOUS.match(after.text))
    ):
        completion = [after]
    candidates = completion + [s for s in ranked if s.score >= best - settings.companion_margin]
    same_fact = _SameFact(embed, settings)
    same_fact.prepare([s.text for s in (*chosen, *candidates)])
    for candidate in candidates:
        if len(chosen) >= settings.max_sentences:
            break
        if any(candidate is c or same_fact(candidate.text, c.text) for c in chosen):
            continue
        if not any(candidate is c for c in completion) and (
            candidate.statement.leans_on_previous or candidate.statement.introduces
        ):
            continue  # out of its place it would not make sense, or it only announces what follows
        chosen.append(candidate)
    at = next(i for i, c in enumerate(chosen) if c is lead)
    head, rest = chosen[: at + 1], chosen[at + 1 :]
    # After the answer, its own section first in reading order, then other sections.
    rest.sort(key=lambda s: (s.passage != lead.passage, s.passage, s.position))
    return head + rest


def with_heading(statement: str, heading_path: str) -> str:
    """A statement phrased with its heading when the heading names what it is about and it does not
    ("Card declined by issuing bank." under "› E-4012" says "E-4012: Card declined by issuing bank.")."""
    label = heading_path.split(HEADING_SEPARATOR)[-1].strip()
    named = _IDENTIFIER.search(label)
    if named is None or named.group(0).lower() in statement.lower() or len(label) > 40:
        return statement
    return f"{label}: {statement}"


def as_reply(chosen: Sequence[ScoredSentence]) -> str:
    """The chosen statements, every sentence followed by its citation (a list item or a table row may hold
    two, and each is a claim of its own). Empty when nothing was chosen."""
    named: set[int] = set()
    sentences: list[str] = []
    for s in chosen:
        # The code is said once, with the first statement of its section.
        text = s.text if s.passage in named else with_heading(s.text, s.heading)
        named.add(s.passage)
        sentences.extend(f"{sentence.rstrip()} [{s.passage}]" for sentence in split_sentences(text))
    return " ".join(sentences)


def reading_record(
    scored: Sequence[ScoredSentence], chosen: Sequence[ScoredSentence], *, limit: int = 8
) -> list[dict[str, object]]:
    """What the reader weighed, for the turn record: the best statements, their scores, which were said."""
    said = [id(s) for s in chosen]
    shown = [*chosen, *(s for s in scored if id(s) not in said)][: max(limit, len(chosen))]
    return [
        {"passage": s.passage, "text": s.text, "score": round(s.score, 3), "chosen": id(s) in said}
        for s in sorted(shown, key=lambda s: -s.score)
    ]
