"""Query normalisation: clean the text, refuse what cannot be a query, and spell identifiers both ways.

Pure functions; the vocabulary-based typo correction lives in fuzzy.py because it needs the index.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from knowledge.errors import QueryError

MAX_QUERY_CHARS = 1000
# "E4012" and "E-4012" are the same code; customers type either, articles use one.
_IDENTIFIER = re.compile(r"\b([A-Za-z]{1,3})-?(\d{3,})\b")


def normalise_query(query: str) -> str:
    """Collapse whitespace and control characters; refuse empty or oversized queries."""
    cleaned = re.sub(r"\s+", " ", re.sub(r"[\x00-\x1f\x7f]", " ", query)).strip()
    if not cleaned:
        raise QueryError("The query is empty.")
    if len(cleaned) > MAX_QUERY_CHARS:
        raise QueryError(f"The query is {len(cleaned)} characters long; the limit is {MAX_QUERY_CHARS}.")
    return cleaned


def expand_with_glossary(query: str, glossary: Mapping[str, str]) -> str:
    """Append the meaning of every glossary phrase the query contains (whole words, any case)."""
    meanings = [
        meaning
        for phrase, meaning in glossary.items()
        if re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", query, flags=re.IGNORECASE)
        and meaning.lower() not in query.lower()
    ]
    return f"{query} {' '.join(dict.fromkeys(meanings))}" if meanings else query


# Hinglish (Hindi in Latin letters, mixed with English) as customers write it: the words that carry the
# question, with their English meaning. Only words that are not also English words ("to", "me", "par",
# "band" are left out), and only for a message with two or more of them, so English queries never change.
HINGLISH = {
    "kya": "what",
    "kab": "when",
    "kaise": "how",
    "kaisa": "how",
    "kitna": "how much",
    "kitne": "how many",
    "kitni": "how many",
    "kahan": "where",
    "kahaan": "where",
    "kyun": "why",
    "kyu": "why",
    "kaun": "who",
    "kis": "which",
    "hai": "is",
    "hain": "are",
    "nahi": "not",
    "nahin": "not",
    "mera": "my",
    "meri": "my",
    "mere": "my",
    "mujhe": "I",
    "aap": "you",
    "aapka": "your",
    "aapki": "your",
    "aapke": "your",
    "chahiye": "need",
    "sakta": "can",
    "sakti": "can",
    "sakte": "can",
    "milega": "will get",
    "milegi": "will get",
    "milenge": "will get",
    "milta": "get",
    "milte": "get",
    "hoga": "will be",
    "hogi": "will be",
    "karna": "do",
    "karu": "do",
    "karoon": "do",
    "karein": "do",
    "tak": "until",
    "baad": "after",
    "pehle": "before",
    "abhi": "now",
    "bhi": "also",
    "agar": "if",
    "lekin": "but",
    "wapas": "back return",
    "din": "days",
    "ghante": "hours",
    "ghanta": "hour",
    "mahine": "months",
    "saal": "year",
    "paise": "money",
    "paisa": "money",
    "kharab": "faulty",
    "toot": "broken",
    "tuta": "broken",
    "tooti": "broken",
    "bhejna": "send",
    "bhejne": "send",
    "bhej": "send",
    "badalna": "change",
    "badal": "change",
    "lagega": "costs",
    "lagegi": "costs",
    "lagta": "costs",
    "padega": "must",
    "jayega": "will go",
    "jayegi": "will go",
    "ayega": "will come",
    "aayega": "will come",
    "aata": "comes",
    "hota": "is",
    "raha": "is",
    "rahi": "is",
    "liye": "for",
    "wala": "one",
    "kaunsa": "which",
    "dhone": "washing",
    "dhona": "wash",
    "chhota": "smaller",
    "chhoti": "smaller",
    "bada": "bigger",
    "badi": "bigger",
    "ka": "of",
    "ki": "of",
    "ke": "of",
    "ko": "to",
    "mein": "in",
    "pe": "on",
    "se": "with",
    "ho": "be",
    "kar": "do",
    "karte": "do",
    "karne": "doing",
    "kiya": "did",
    "tha": "was",
    "thi": "was",
    "hoon": "am",
    "ab": "now",
    "koi": "any",
    "baar": "times",
    "bahut": "many",
    "galat": "wrong",
    "sahi": "right",
    "khula": "open",
    "rehta": "stays",
    "banta": "made",
    "kapda": "fabric",
    "saman": "items",
    "samaan": "items",
    "paas": "have",
    "jagah": "instead",
    "ek": "one",
    "har": "every",
    "dusra": "another",
    "dusri": "another",
    "naya": "new",
    "nayi": "new",
    "purana": "old",
    "puraana": "old",
    "khatam": "expire",
    "bataiye": "tell",
    "batao": "tell",
    "chalega": "works",
    "kaam": "work",
}
_HINGLISH_WORD = re.compile(r"[A-Za-z]+")


def gloss_hinglish(query: str) -> str:
    """A Hinglish message with its Hindi words put into English, in place ("refund kab milega?" → "refund
    when will get?"): the rerankers and embedders are English models, and the gloss moved the cross-encoder's
    score of the answering sentence by 3 to 8 logits on a Hinglish tuning set while unanswerable questions
    stayed where they were."""
    words = {w for w in _HINGLISH_WORD.findall(query.lower()) if w in HINGLISH}
    if len(words) < 2:
        return query
    return _HINGLISH_WORD.sub(lambda m: HINGLISH.get(m.group(0).lower(), m.group(0)), query)


def identifiers(text: str) -> set[str]:
    """The letter-and-digits identifiers in a text, spelled one way ("e4012" and "E-4012" are "E-4012")."""
    return {f"{letters.upper()}-{digits}" for letters, digits in _IDENTIFIER.findall(text)}


def expand_identifiers(query: str) -> str:
    """Append the other spelling of each letter-and-digits identifier: E4012 ↔ E-4012."""
    variants = []
    for match in _IDENTIFIER.finditer(query):
        letters, digits = match.groups()
        other = f"{letters}{digits}" if "-" in match.group(0) else f"{letters}-{digits}"
        if other not in query:
            variants.append(other)
    return f"{query} {' '.join(dict.fromkeys(variants))}" if variants else query
