"""The learned half of the planted-instruction detector: a logistic regression over hashed word and
character n-grams, trained by lab/injection_training.py on injection, jailbreak and documentation corpora
written by other people (lab/datasets/injection/SOURCES.md), never on lab/sample/attacks.jsonl.

The rules in knowledge/injection.py know the phrasings someone wrote down; this model knows the words and
word pieces that jailbreaks and injections in other people's collections are made of, so it catches such
text in phrasings the rules were never shown. It has two cuts: above the high cut
a statement is planted and goes like a rule's catch; between the cuts it is suspect, kept as evidence, but
nothing it alone supports is shipped to a customer (answering/ground/grounding.py).

Pure numpy: a statement costs a few hundred hashes and one sum, far under a millisecond.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import zlib
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import numpy as np
from django.core.exceptions import ImproperlyConfigured

MODEL_FILE = Path(__file__).resolve().parent / "injection_model.npz"
# 2**18 buckets: collisions among the ~10^5 n-grams of the training corpora stay rare, and the weights
# stay a file of half a megabyte.
FEATURE_BITS = 18
CHAR_GRAMS = (3, 4, 5)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?|[^\w\s]", re.UNICODE)


def feature_indices(text: str) -> np.ndarray:
    """The hashed n-grams of a text, each once: words, word pairs, and 3- to 5-letter pieces of words
    (which carry a misspelt or inflected word to its neighbours)."""
    words = _WORD.findall(text.casefold())
    grams = [f"w{word}" for word in words]
    grams += [f"b{a} {b}" for a, b in itertools.pairwise(words)]
    for word in words:
        padded = f" {word} "
        grams += [f"c{padded[i : i + n]}" for n in CHAR_GRAMS for i in range(len(padded) - n + 1)]
    mask = (1 << FEATURE_BITS) - 1
    return np.unique(np.fromiter((zlib.crc32(g.encode()) & mask for g in grams), dtype=np.int64, count=len(grams)))


class Suspicion(StrEnum):
    CLEAN = "clean"
    SUSPECT = "suspect"  # kept as evidence; what it alone supports goes to a person
    PLANTED = "planted"  # left out of the index, the context and every reply


@dataclass(frozen=True)
class InjectionModel:
    weights: np.ndarray  # one weight per hashed feature
    bias: float
    high_cut: float  # at or above: planted
    low_cut: float  # at or above (and below the high cut): suspect

    def probability(self, text: str) -> float:
        """How likely the text was written to give the model orders, from 0 to 1."""
        indices = feature_indices(text)
        if not len(indices):
            return 0.0
        # Binary features scaled to unit length, as in training.
        logit = float(self.weights[indices].sum()) / math.sqrt(len(indices)) + self.bias
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, logit))))

    def suspicion(self, text: str) -> Suspicion:
        """The text's side of the two cuts."""
        probability = self.probability(text)
        if probability >= self.high_cut:
            return Suspicion.PLANTED
        return Suspicion.SUSPECT if probability >= self.low_cut else Suspicion.CLEAN

    def save(self, path: Path) -> None:
        np.savez_compressed(
            path,
            weights=self.weights.astype(np.float16),
            bias=np.float64(self.bias),
            cuts=np.array([self.low_cut, self.high_cut]),
            feature_bits=np.int64(FEATURE_BITS),
        )


def read_model(path: Path) -> InjectionModel:
    try:
        stored = np.load(path)
    except (OSError, ValueError) as exc:
        raise ImproperlyConfigured(f"Cannot read the injection model {path}: {exc}") from None
    if int(stored["feature_bits"]) != FEATURE_BITS:
        raise ImproperlyConfigured(
            f"{path} was trained with {int(stored['feature_bits'])} feature bits, this code hashes {FEATURE_BITS}: "
            "retrain it with `python -m lab.injection_training`."
        )
    low, high = (float(cut) for cut in stored["cuts"])
    return InjectionModel(stored["weights"].astype(np.float32), float(stored["bias"]), high, low)


@functools.cache
def shipped_model() -> InjectionModel:
    return read_model(MODEL_FILE)
