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

from answering.evidence.context import Context, Trust
from answering.ground.claims import content_words, numbers_in
from knowledge.chunking import HEADING_SEPARATOR, split_sentences
from knowledge.injection import Suspicion, suspicion, without_outside_links
from knowledge.rerank import CrossEncoder, Reading, best_of, read_passages
from knowledge.statements import Statement, aside_kind, passage_statements

# A question about reaching the business itself, which an invitation to get in touch may answer.
_ASKS_FOR_CONTACT = re.compile(
    r"\b(contact|reach|e-?mail|phone|talk|speak|human|person|agent|someone)\b",
    re.IGNORECASE,
)
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
    step: bool = False
    # Its section's heading read alone: what the statement gets for where it stands.
    heading_score: float | None = None

    @property
    def says_more_than_heading(self) -> bool:
        """Read alone it is a better answer than its heading alone: it bears on the question by what it
        says. A statement is read with its heading in front, so one that says nothing about the question (an
        order planted in a section the question is about, a sentence of another subject) borrows the
        heading's relevance and reads below it. Its reading after the statement before it does not count:
        that borrows the predecessor's relevance too."""
        return self.heading_score is None or self.score > self.heading_score

    @property
    def statement(self) -> Statement:
        return Statement(self.text, self.kind, self.position, self.block, self.step)

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
    evidence is quoted, never obeyed or repeated as policy. Nor is a statement the detector only suspects:
    the reader quotes what it can stand behind."""
    read = read or {}
    # Asides (a cheer, an invitation to get in touch, the page talking about itself) are never the answer,
    # unless the customer asks how to get in touch.
    asides_allowed = bool(_ASKS_FOR_CONTACT.search(question))
    verified = [p for p in context.evidence if p.trust is Trust.VERIFIED]
    retrieved = [p for p in context.evidence if p.trust is not Trust.VERIFIED][:passages]
    chosen = [*verified, *retrieved]
    unread = [p for p in chosen if p.chunk_id is None or p.chunk_id not in read]
    fresh = read_passages(reranker, question, [(p.heading_path, p.text) for p in unread]) if unread else []
    now = {id(p): r.readings for p, r in zip(unread, fresh, strict=True)}
    headed = [p for p in chosen if p.heading_path]
    headings = reranker.score(question, [p.heading_path for p in headed]).tolist() if headed else []
    heading_score = {id(p): score for p, score in zip(headed, headings, strict=True)}
    scored: list[ScoredSentence] = []
    for p in chosen:
        passage_readings = read[p.chunk_id] if p.chunk_id is not None and p.chunk_id in read else now[id(p)]
        # Read from the stored chunk, a reading may hold what the context left out of the passage.
        given = set(passage_sentences(p.text))
        quoted = {
            r.statement.position
            for r in passage_readings
            if suspicion(r.statement.text) is Suspicion.CLEAN
            and without_outside_links(r.statement.text) in given
            and (asides_allowed or aside_kind(r.statement.text) is None)
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
                r.statement.step,
                heading_score.get(id(p)),
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
    heading = None if s.heading_score is None else s.heading_score - prior
    return replace(s, score=s.score - prior, after_previous=paired, heading_score=heading)


def _choose(scored: list[ScoredSentence], embed: Embed | None, settings: ReaderSettings) -> list[ScoredSentence]:
    ranked = sorted(scored, key=lambda s: -s.score)
    best = ranked[0].score
    leads = [s for s in ranked if s.score >= best - settings.lead_margin]
    standalone = [s for s in leads if not s.statement.leans_on_previous and not s.statement.introduces]
    lead = next((s for s in standalone if s.says_more_than_heading), standalone[0] if standalone else ranked[0])
    paired = max(scored, key=lambda s: s.after_previous if s.after_previous is not None else -math.inf)
    if (
        paired.after_previous is not None
        and paired.after_previous >= best + settings.pair_gain
        and paired.says_more_than_heading  # read after its predecessor, anything borrows that relevance
    ):
        lead = paired  # the answer is this statement as the reply to the one before it: both are said
    chosen = [lead]
    before = _neighbour(scored, lead, -1)
    # Said after the statement before it only when it reads at least as well as that one's reply (being the
    # best pair reading of all is not enough: an order planted before the answer would ride along).
    replies = lead.after_previous is not None and lead.after_previous >= lead.score
    if (replies or lead.statement.leans_on_previous) and before is not None and _replies_to(lead, before):
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
        if not candidate.says_more_than_heading:
            continue  # near the best only by its heading: it says nothing the question asked
        chosen.append(candidate)
    at = next(i for i, c in enumerate(chosen) if c is lead)
    head, rest = chosen[: at + 1], chosen[at + 1 :]
    # After the answer, its own section first in reading order, then other sections.
    rest.sort(key=lambda s: (s.passage != lead.passage, s.passage, s.position))
    return _with_conditions(scored, head + rest)


def _replies_to(statement: ScoredSentence, before: ScoredSentence) -> bool:
    """Whether a statement read after its predecessor is said after it. A list item or table row is not: it
    takes its meaning from its list's lead-in or its section's heading, which its unit says, not from the
    paragraph that happens to precede the list (a row after "The window is counted from delivery." answers
    alone and leads)."""
    return statement.kind == "sentence" or before.statement.introduces


def _with_conditions(scored: Sequence[ScoredSentence], said: list[ScoredSentence]) -> list[ScoredSentence]:
    """Each sentence said with the condition it stands under: where the sentence before it in its paragraph
    states a condition and is not said, it is said first. Without it "Cancel the order and place a new one."
    reads as advice to everyone, where the article gives it only when the condition holds."""
    out: list[ScoredSentence] = []
    for s in said:
        before = _neighbour(scored, s, -1)
        if (
            s.kind == "sentence"
            and before is not None
            and before.block == s.block
            and before.statement.sets_condition
            and not any(before is c for c in (*said, *out))
        ):
            out.append(before)
        out.append(s)
    return out


def heading_label(heading_path: str) -> str:
    """The last heading of a path: the title of the section a statement stands under."""
    return heading_path.split(HEADING_SEPARATOR)[-1].strip()


def with_heading(statement: str, heading_path: str) -> str:
    """A statement phrased with its heading when the heading names what it is about and it does not
    ("Card declined by issuing bank." under "› E-4012" says "E-4012: Card declined by issuing bank.")."""
    label = heading_label(heading_path)
    named = _IDENTIFIER.search(label)
    if named is None or named.group(0).lower() in statement.lower() or len(label) > 40:
        return statement
    return f"{label}: {statement}"


def led_in(lead: str, statement: str, kind: str = "item") -> str:
    """A list item or table row said with the lead-in that gives it its meaning ("What is not covered:
    Light bulbs, batteries, and other consumable parts."). A row already names its columns with colons,
    so its table's lead-in is set off by a dash."""
    if not lead:
        return statement
    return f"{lead.rstrip(':').rstrip()}{' —' if kind == 'row' else ':'} {statement}"


# A procedure longer than this is quoted up to SHOWN_STEPS steps, and the rest left to the article.
MAX_STEPS = 8
SHOWN_STEPS = 6
# A lead-in this short ("Escalate when:") is said with the sentence before it.
SHORT_LEAD_WORDS = 3


@dataclass(frozen=True)
class QuotedUnit:
    """One whole unit of a passage as the reply says it: a sentence, an FAQ's answer after its question, a
    procedure (its lead-in and its steps), a list's items with their lead-in, or a table row with its
    table's lead-in. `lead` is said before the statements: the sentence that announces them, or the
    section's heading (a question, for an FAQ). A definition ("Term: what it means") is one statement
    already, as is a list item that defines its bold term."""

    passage: int
    kind: str  # "sentence", "faq" (an answer after its question), "procedure", "list" or "row"
    statements: tuple[ScoredSentence, ...]
    lead: str = ""
    cut_short: bool = False  # a long procedure: its first steps, the rest in the article


def _lead_in(scored: Sequence[ScoredSentence], first: ScoredSentence) -> tuple[str, list[ScoredSentence]]:
    """What gives a list or table its meaning: the statement right before it when it announces it
    ("To turn it on:"), otherwise the heading of its section ("What is not covered"). A lead-in of a few
    words ("Escalate when:") is said with the sentence before it in its paragraph, which says what it is
    about ("Escalate … within 4 business hours of identifying the issue."). Returns the statements used."""
    before = _neighbour(scored, first, -1)
    if before is None or before.kind != "sentence" or not before.statement.introduces:
        return heading_label(first.heading), []
    context = _neighbour(scored, before, -1)
    if len(before.text.split()) <= SHORT_LEAD_WORDS and context is not None and context.block == before.block:
        return f"{context.text} {before.text}", [context, before]
    return before.text, [before]


def _block_of(scored: Sequence[ScoredSentence], of: ScoredSentence) -> list[ScoredSentence]:
    return sorted(
        (s for s in scored if s.passage == of.passage and s.block == of.block and s.kind == of.kind),
        key=lambda s: s.position,
    )


def _structured(
    scored: Sequence[ScoredSentence], block: list[ScoredSentence], picked: Sequence[ScoredSentence], whole: bool
) -> tuple[QuotedUnit, list[ScoredSentence]]:
    """A list or table block as one unit: a procedure whole (up to MAX_STEPS), a list's picked items or,
    when the lead-in itself was picked, all of them; each with its lead-in. Returns what it covers."""
    lead, lead_statements = _lead_in(scored, block[0])
    kind = "row" if block[0].kind == "row" else "procedure" if any(s.step for s in block) else "list"
    if kind == "procedure" or whole:
        said = block if len(block) <= MAX_STEPS else block[:SHOWN_STEPS]
    else:
        said = [s for s in block if any(s is p for p in picked)]
    unit = QuotedUnit(
        block[0].passage, kind, tuple(said), lead, cut_short=kind == "procedure" and len(said) < len(block)
    )
    return unit, [*block, *lead_statements]


def quoted_units(scored: Sequence[ScoredSentence], chosen: Sequence[ScoredSentence]) -> list[QuotedUnit]:
    """The chosen statements grown into the whole units they belong to, in the order they are said: a list
    item is never said without its lead-in, a step without its procedure, nor a statement that leans on a
    list ("Repeat to create multiple scenarios.") without the list it follows."""
    units: list[QuotedUnit] = []
    covered: list[ScoredSentence] = []
    for s in chosen:
        if any(s is c for c in covered):
            continue
        after = _neighbour(scored, s, 1)
        if s.kind in ("item", "row"):
            picked = [c for c in chosen if c.block == s.block and c.passage == s.passage]
            unit, done = _structured(scored, _block_of(scored, s), picked, False)
        elif s.statement.introduces and after is not None and after.kind in ("item", "row"):
            unit, done = _structured(scored, _block_of(scored, after), [], True)
        elif (
            s.statement.leans_on_previous
            and (before := _neighbour(scored, s, -1)) is not None
            and before.kind == "item"
            and not any(before is c for c in covered)
        ):
            unit, done = _structured(scored, _block_of(scored, before), [], True)
            units.append(unit)
            covered.extend(done)
            unit, done = QuotedUnit(s.passage, "sentence", (s,)), [s]
        elif heading_label(s.heading).endswith("?") and _neighbour(scored, s, -1) is None:
            # An FAQ's answer opens its section: said after the question it answers.
            unit, done = QuotedUnit(s.passage, "faq", (s,), heading_label(s.heading)), [s]
        elif s.statement.introduces:
            # A lead-in whose own list does not follow it here: said before anything else, it would
            # announce a list it does not have, or the next one quoted ("… two options:" over another list).
            continue
        else:
            unit, done = QuotedUnit(s.passage, "sentence", (s,)), [s]
        units.append(unit)
        covered.extend(done)
    return units


def _cited(text: str, passage: int) -> str:
    # Every sentence its own citation, short ones too: "Email help@x.example." before "We reply within a day."
    # is a claim of its own, and uncited it would send the whole reply to a person.
    return " ".join(f"{sentence.rstrip()} [{passage}]" for sentence in split_sentences(text))


def as_reply(units: Sequence[QuotedUnit]) -> str:
    """The units as a reply, every sentence followed by its citation (a list item or a table row may hold
    two, and each is a claim of its own). A unit of several items is said as a list under its lead-in, one
    item a line; a single item or row is said in one sentence with its lead-in. Empty when nothing was
    chosen."""
    named: set[int] = set()
    parts: list[str] = []
    said: set[str] = set()  # no statement is said twice, whichever passages repeat it
    for unit in units:
        n = unit.passage
        statements = tuple(s for s in unit.statements if _said_as(s.text) not in said)
        if not statements:
            continue
        said.update(_said_as(s.text) for s in statements)
        lead = " ".join(p for p in split_sentences(unit.lead) if _said_as(p) not in said) if unit.lead else ""
        said.update(_said_as(p) for p in split_sentences(lead))
        unit = replace(unit, statements=statements, lead=lead)
        first = unit.statements[0]
        if unit.kind == "sentence":
            # The code is said once, with the first statement of its section.
            text = first.text if n in named else with_heading(first.text, first.heading)
            parts.append(_cited(text, n))
        elif unit.kind == "faq":
            parts.append(f"{unit.lead} [{n}] {_cited(first.text, n)}")
        elif len(unit.statements) == 1 and not unit.cut_short:
            parts.append(_cited(led_in(unit.lead, first.text, first.kind), n))
        else:
            lines = [_cited(f"{unit.lead.rstrip(':').rstrip()}:", n)] if unit.lead else []
            for i, s in enumerate(unit.statements, start=1):
                lines.append(f"{i}. {_cited(s.text, n)}" if unit.kind == "procedure" else f"- {_cited(s.text, n)}")
            if unit.cut_short:
                lines.append(f"(the remaining steps are in [{n}])")
            parts.append("\n".join(lines))
        named.add(n)
    return "\n".join(parts) if any("\n" in p for p in parts) else " ".join(parts)


def _said_as(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".!")


def quotable_forms(text: str, heading_path: str) -> list[str]:
    """Every way the reader may say a passage's statements: alone, with its code heading, and a list item or
    table row after its lead-in (the announcing sentence, or the heading). Grounding's exact tier accepts
    these, and only these, as quotes of the passage."""
    statements = passage_statements(text)
    label = heading_label(heading_path)
    forms = [label, f"{label}:"]
    for i, s in enumerate(statements):
        forms += [s.text, with_heading(s.text, heading_path)]
        if s.kind in ("item", "row"):
            first = next(t for t in statements[: i + 1] if t.block == s.block)
            before = statements[first.position - 1] if first.position else None
            leads = [label, *([before.text] if before is not None and before.introduces else [])]
            forms += [led_in(lead, s.text, s.kind) for lead in leads]
            forms += [f"{lead.rstrip(':').rstrip()}:" for lead in leads]
    return forms


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
