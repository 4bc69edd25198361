"""English Snowball stems for Python-side word matching (the database stems with its own 'english'
configuration). A snowballstemmer object keeps its word in instance state, so two threads sharing one
garble each other's stems or crash: every thread gets its own."""

from __future__ import annotations

import threading
from collections.abc import Iterable

import snowballstemmer

_local = threading.local()


def _stemmer() -> snowballstemmer.stemmer:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = snowballstemmer.stemmer("english")
    return stemmer


def stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


def stems(words: Iterable[str]) -> list[str]:
    return [str(s) for s in _stemmer().stemWords(list(words))]
