"""Query normalisation: clean the text, refuse what cannot be a query, and spell identifiers both ways.

Pure functions; the vocabulary-based typo correction lives in fuzzy.py because it needs the index.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from knowledge.errors import KnowledgeError

MAX_QUERY_CHARS = 1000
# "E4012" and "E-4012" are the same code; customers type either, articles use one.
_IDENTIFIER = re.compile(r"\b([A-Za-z]{1,3})-?(\d{3,})\b")


class QueryError(KnowledgeError):
    pass


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


def expand_identifiers(query: str) -> str:
    """Append the other spelling of each letter-and-digits identifier: E4012 ↔ E-4012."""
    variants = []
    for match in _IDENTIFIER.finditer(query):
        letters, digits = match.groups()
        other = f"{letters}{digits}" if "-" in match.group(0) else f"{letters}-{digits}"
        if other not in query:
            variants.append(other)
    return f"{query} {' '.join(dict.fromkeys(variants))}" if variants else query
