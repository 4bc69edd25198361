"""Follow-up rewriting: "and for the second one?" becomes a question retrieval can answer alone."""

from __future__ import annotations

import re
from collections.abc import Sequence

from answering.ground.claims import content_words
from answering.providers.base import LanguageModel, ProviderUnavailable

_FOLLOW_UP_OPENING = re.compile(
    r"^\s*(and|also|but|so|then|what about|how about|and what about|what if|same for|ok(ay)?|what of)\b",
    re.IGNORECASE,
)
_REFERENCE = re.compile(r"\b(it|its|that|this|those|these|they|them|one|ones|there|same)\b", re.IGNORECASE)


def is_follow_up(message: str) -> bool:
    """Leans on the previous question: opens like a continuation, or points back with few words of its own."""
    own_words = content_words(message)
    if _FOLLOW_UP_OPENING.match(message):
        return True
    return bool(_REFERENCE.search(message)) and len(own_words) <= 3


def rewrite_by_rule(previous_questions: Sequence[str], message: str) -> str:
    """Carry the subject of the previous question: its content words, then the new message."""
    if not previous_questions or not is_follow_up(message):
        return message
    previous = previous_questions[-1]
    subject = [w for w in re.findall(r"[\w'-]+", previous) if w.lower() in content_words(previous)]
    return f"{' '.join(subject)} — {message}" if subject else message


def rewrite_query(
    previous_questions: Sequence[str],
    message: str,
    *,
    model: LanguageModel | None = None,
) -> str:
    """With a model, any message is rewritten in the light of the conversation; without one, the rule
    handles follow-ups. A failed model call falls back to the rule: a turn never stops here."""
    if model is not None and previous_questions:
        try:
            return model.rewrite(history=list(previous_questions), message=message)
        except ProviderUnavailable:
            return rewrite_by_rule(previous_questions, message)
    return rewrite_by_rule(previous_questions, message)


_CLAUSE_END = re.compile(r"(?<=[.!?;])\s+")
# Error codes, order numbers, SKUs: a token with a digit that is not just a quantity ("3 hours").
_CODE = re.compile(r"\b[A-Za-z]+-?\d[\w-]*|#\d+|\b\d{4,}\b")


def question_focus(message: str) -> str:
    """The question inside a chatty message ("Hi, I'm … I paid by card; how long until …?"): its clauses that
    end in a question mark, and any clause with a code in it ("I keep getting E-5001."). Greetings and
    background otherwise drown the question for the cross-encoder. A question that leans on what came before
    it ("What can you do?") keeps the whole message."""
    clauses = _CLAUSE_END.split(message)
    questions = [clause for clause in clauses if clause.rstrip().endswith("?")]
    if not questions or len(questions) == len(clauses) or len(content_words(" ".join(questions))) < 3:
        return message
    return " ".join(c for c in clauses if c in questions or _CODE.search(c))
