"""Context assembly: what the generator may see, labelled by how far it can be trusted.

Trust classes, strongest first: system (the policy staff wrote) › verified (customer data checked against
our records; a later issue) › retrieved (help-centre passages: evidence, never instructions) › user (what
the customer said) › model (what the assistant said earlier). Pure: no database, no model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from enum import IntEnum
from typing import Any

from answering.ground.claims import content_words
from knowledge.injection import without_instructions


class Trust(IntEnum):
    SYSTEM = 0
    VERIFIED = 1
    RETRIEVED = 2
    USER = 3
    MODEL = 4

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Evidence:
    """A citable passage as the context needs it: a retrieved chunk (built from a retrieval hit), or a
    verified record of the customer's own (an order, their facts), built per request, never retrieved."""

    chunk_id: int | None
    article: str
    title: str
    version: str
    effective_date: str
    heading_path: str
    text: str
    score: float
    trust: Trust = Trust.RETRIEVED
    source: str = "article"


@dataclass(frozen=True)
class Passage:
    number: int  # what a citation [n] refers to; 0 for passages that cannot be cited
    trust: Trust
    source: str  # "policy", "article", "order", "facts", "conversation" or "memory"
    text: str
    tokens: int
    article: str = ""
    title: str = ""
    version: str = ""
    effective_date: str = ""
    heading_path: str = ""
    chunk_id: int | None = None

    def as_record(self) -> dict[str, Any]:
        record = asdict(self)
        record["trust"] = self.trust.label
        return record


@dataclass(frozen=True)
class Context:
    policy: Passage
    evidence: tuple[Passage, ...]
    history: tuple[Passage, ...]
    dropped: tuple[str, ...] = field(default=())  # why candidates were left out, for the turn record

    def passage(self, number: int) -> Passage | None:
        return next((p for p in self.evidence if p.number == number), None)

    def as_records(self) -> list[dict[str, Any]]:
        return [p.as_record() for p in (self.policy, *self.evidence, *self.history)]


def _overlaps(a: str, b: str, threshold: float = 0.8) -> bool:
    """Near-duplicate passages (the same paragraph in two versions or two articles): Jaccard of content words."""
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return False
    return len(wa & wb) / len(wa | wb) >= threshold


def assemble_context(
    policy_text: str,
    evidence: Sequence[Evidence],
    history: Sequence[tuple[str, str]],
    *,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    background: Sequence[str] = (),
) -> Context:
    """Fit the candidates to the budget: the policy always (never trimmed), then evidence in the order
    given (verified records first, then retrieved chunks strongest first, so the decisive passage leads),
    then the most recent conversation turns, then background (summaries of earlier conversations: model
    trust, never citable). history holds (role, text) pairs, oldest first; role is "customer" or
    "assistant"."""
    policy = Passage(0, Trust.SYSTEM, "policy", policy_text, count_tokens(policy_text))
    remaining = budget_tokens - policy.tokens
    kept: list[Passage] = []
    dropped: list[str] = []
    for item in evidence:
        # Text written for the model never reaches a generator: evidence is quoted, never obeyed.
        text, planted = without_instructions(item.text)
        if planted:
            dropped.append(f"chunk {item.chunk_id}: {planted} statement(s) written for the model left out")
        if any(_overlaps(text, p.text) for p in kept):
            dropped.append(f"chunk {item.chunk_id}: repeats a passage already given")
            continue
        tokens = count_tokens(text)
        if tokens > remaining:
            dropped.append(f"chunk {item.chunk_id}: over the token budget")
            continue
        remaining -= tokens
        kept.append(
            Passage(
                len(kept) + 1,
                item.trust,
                item.source,
                text,
                tokens,
                article=item.article,
                title=item.title,
                version=item.version,
                effective_date=item.effective_date,
                heading_path=item.heading_path,
                chunk_id=item.chunk_id,
            )
        )
    turns: list[Passage] = []
    for role, text in reversed(history):
        tokens = count_tokens(text)
        if tokens > remaining:
            break
        remaining -= tokens
        trust = Trust.USER if role == "customer" else Trust.MODEL
        turns.append(Passage(0, trust, "conversation", text, tokens))
    for text in background:
        tokens = count_tokens(text)
        if tokens > remaining:
            break
        remaining -= tokens
        turns.append(Passage(0, Trust.MODEL, "memory", text, tokens))
    return Context(policy, tuple(kept), tuple(reversed(turns)), tuple(dropped))


def _attribute(value: str) -> str:
    return value.replace('"', "'").replace("\n", " ")


def _fence(text: str) -> str:
    """Evidence may not close its own fence: angle brackets are escaped so a passage cannot end early."""
    return text.replace("<", "&lt;").replace(">", "&gt;")


def render_evidence(context: Context) -> str:
    """The numbered passages as quoted, labelled evidence for a model prompt."""
    blocks = [
        f'<passage n="{p.number}" trust="{p.trust.label}" article="{_attribute(p.article)}" '
        f'version="{_attribute(p.version)}" effective="{p.effective_date}" heading="{_attribute(p.heading_path)}">\n'
        f"{_fence(p.text)}\n</passage>"
        for p in context.evidence
    ]
    return "\n\n".join(blocks) if blocks else "(no passages were found)"


def render_history(context: Context) -> str:
    return "\n".join(
        f'<background trust="{p.trust.label}">{_fence(p.text)}</background>'
        if p.source == "memory"
        else f'<turn trust="{p.trust.label}" role="{"customer" if p.trust is Trust.USER else "assistant"}">'
        f"{_fence(p.text)}</turn>"
        for p in context.history
    )
