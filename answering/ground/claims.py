"""Claims in a reply and the facts inside them: pure text functions the grounding stages share."""

from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.chunking import split_sentences

_CITATION = re.compile(r"\s*\[(\d{1,3})\]")
_LEADING_CITATIONS = re.compile(r"^(\s*\[\d{1,3}\])+")
# A blank line, or a line that starts a list item ("- …", "2. …"), starts a claim of its own.
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)")
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
# Amounts, percentages, plain and spelled-out numbers, dates: what a wrong claim most often gets wrong.
_NUMBER = re.compile(r"(?<![\w.])[$£€]?\d+(?:[.,]\d+)*%?")
_NUMBER_WORDS = {
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
    "fourteen": "14",
    "fifteen": "15",
    "twenty": "20",
    "thirty": "30",
    "sixty": "60",
    "ninety": "90",
}
_NEGATION = re.compile(
    r"\b(no|not|never|none|cannot|can't|won't|don't|doesn't|isn't|aren't|without|unable|neither|nor)\b|n't\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "from",
        "by",
        "with",
        "about",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "you",
        "your",
        "we",
        "our",
        "us",
        "i",
        "me",
        "my",
        "he",
        "she",
        "they",
        "them",
        "their",
        "his",
        "her",
        "do",
        "does",
        "did",
        "have",
        "has",
        "had",
        "will",
        "would",
        "can",
        "could",
        "should",
        "may",
        "might",
        "must",
        "shall",
        "so",
        "than",
        "then",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "each",
        "some",
        "such",
        "only",
        "also",
        "just",
        "please",
        "thanks",
        "thank",
        "hi",
        "hello",
    ]
)


@dataclass(frozen=True)
class ClaimText:
    text: str  # without its citation markers
    citations: tuple[int, ...]

    @property
    def is_substantive(self) -> bool:
        """Says something checkable: a number, or at least three content words. "Happy to help!" is not."""
        return bool(numbers_in(self.text)) or len(content_words(self.text)) >= 3


def split_claims(reply: str) -> list[ClaimText]:
    """One claim per sentence; a citation after the full stop ("… days. [2]") belongs to the sentence before."""
    claims: list[ClaimText] = []
    for paragraph in _PARAGRAPH_BREAK.split(reply):
        # A list mark is layout, not a claim: "1." alone would read as a number stated without a source.
        for sentence in split_sentences(" ".join(_LIST_MARK.sub("", paragraph).split())):
            # The splitter starts a sentence at "[": markers that open one close the one before.
            leading = _LEADING_CITATIONS.match(sentence)
            if leading and claims:
                last = claims[-1]
                claims[-1] = ClaimText(last.text, last.citations + _numbers(leading.group()))
                sentence = sentence[leading.end() :]
            text = _CITATION.sub("", sentence).strip(" -*•")
            if text:
                claims.append(ClaimText(text, _numbers(sentence)))
    return claims


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in _CITATION.findall(text))


def numbers_in(text: str) -> set[str]:
    """Numbers as written (currency symbols, separators and spelled-out small numbers normalised)."""
    found = {n.lstrip("$£€").replace(",", "").rstrip("%") for n in _NUMBER.findall(text)}
    found |= {_NUMBER_WORDS[w] for w in _WORD.findall(text.lower()) if w in _NUMBER_WORDS}
    return {n[:-3] if n.endswith(".00") else n for n in found}


def is_negated(text: str) -> bool:
    return bool(_NEGATION.search(text))


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1}


def normalise(text: str) -> str:
    """Lowercase words only: how the exact-match tier compares a claim with its passage."""
    return " ".join(_WORD.findall(text.lower()))


def missing_numbers(claim: str, evidence: str) -> set[str]:
    """Numbers the claim states that the evidence does not contain."""
    return numbers_in(claim) - numbers_in(evidence)
