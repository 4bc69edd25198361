"""The name and place tagger: a token classifier of our own (trained by lab/names_training.py on public NER
corpora, lab/datasets/names), run with onnxruntime beside spaCy's entities.

It reads lower-cased word pieces (an uncased MiniLM), so a name typed in lower case ("my name is charlott
shevenell") reads as the same name; context, not capitals, tells it a person from a place or a company.
Each word takes the label of its first piece; labels are BIO over persons, locations and organisations.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from tokenizers import Encoding, Tokenizer

from knowledge.onnx_batches import onnx_session

LABELS = ("O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG")
ENTITY_TYPES = ("PER", "LOC", "ORG")
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
# Pieces read at once, [CLS] and [SEP] included: a longer text is read in windows that overlap by
# `OVERLAP` pieces, each piece labelled by the window where it has the most context on both sides.
MAX_PIECES = 256
OVERLAP = 32


@dataclass(frozen=True)
class TaggedSpan:
    """One entity the tagger found: its type (PER, LOC, ORG), character offsets, and the mean probability of
    its words' labels."""

    entity: str
    start: int
    end: int
    score: float


@dataclass(frozen=True)
class _Word:
    start: int
    end: int
    label: int
    probability: float


def spans_of(words: Sequence[_Word]) -> list[TaggedSpan]:
    """Entities from labelled words: B-X starts one, I-X continues one of type X (or starts one after
    another type or O: the model's I- without B- still marks a name), O ends it."""
    spans: list[TaggedSpan] = []
    current: list[_Word] = []
    current_type = ""

    def close() -> None:
        if current:
            score = float(np.mean([w.probability for w in current]))
            spans.append(TaggedSpan(current_type, current[0].start, current[-1].end, score))
            current.clear()

    for word in words:
        tag = LABELS[word.label]
        if tag == "O":
            close()
            current_type = ""
            continue
        prefix, entity = tag.split("-")
        if prefix == "B" or entity != current_type:
            close()
            current_type = entity
        current.append(word)
    close()
    return spans


@dataclass
class NameTagger:
    model_dir: Path
    _session: Any = field(default=None, repr=False)
    _tokenizer: Tokenizer | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _load(self) -> tuple[Any, Tokenizer]:
        with self._lock:
            if self._session is None:
                # One message at a time, a few dozen pieces: a second thread costs more than it saves.
                self._session = onnx_session(self.model_dir / MODEL_FILE, threads=1)
                tokenizer = Tokenizer.from_file(str(self.model_dir / TOKENIZER_FILE))
                tokenizer.no_truncation()
                tokenizer.no_padding()
                self._tokenizer = tokenizer
            assert self._tokenizer is not None
            return self._session, self._tokenizer

    def probabilities(self, encoding: Encoding) -> np.ndarray:
        """Label probabilities, [pieces, labels], for an encoding's pieces without [CLS] and [SEP]."""
        session, _ = self._load()
        inner = encoding.ids[1:-1]
        width = MAX_PIECES - 2
        result = np.zeros((len(inner), len(LABELS)), dtype=np.float32)
        best_context = np.full(len(inner), -1)
        start = 0
        while True:
            window = inner[start : start + width]
            ids = np.array([[encoding.ids[0], *window, encoding.ids[-1]]], dtype=np.int64)
            logits = session.run(
                ["logits"],
                {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)},
            )[0][0, 1:-1]
            exp = np.exp(logits - logits.max(axis=1, keepdims=True))
            probabilities = exp / exp.sum(axis=1, keepdims=True)
            first, last = start == 0, start + len(window) >= len(inner)
            for offset in range(len(window)):
                # Pieces a window shares with the next are read where more text lies on both sides of them.
                left = len(inner) if first else offset
                right = len(inner) if last else len(window) - 1 - offset
                context = min(left, right)
                if context > best_context[start + offset]:
                    best_context[start + offset] = context
                    result[start + offset] = probabilities[offset]
            if last:
                return result
            start += width - OVERLAP

    def tag(self, text: str) -> list[TaggedSpan]:
        """Persons, locations and organisations in the text, by character offsets."""
        if not text.strip():
            return []
        _, tokenizer = self._load()
        encoding = tokenizer.encode(text)
        if len(encoding.ids) <= 2:
            return []
        probabilities = self.probabilities(encoding)
        words: list[_Word] = []
        previous = None
        pieces = zip(encoding.word_ids[1:-1], encoding.offsets[1:-1], strict=True)
        for piece, (word_id, (start, end)) in enumerate(pieces):
            if word_id is not None and word_id == previous and words:
                words[-1] = _Word(words[-1].start, end, words[-1].label, words[-1].probability)
                continue
            previous = word_id
            label = int(probabilities[piece].argmax())
            words.append(_Word(start, end, label, float(probabilities[piece, label])))
        return spans_of(words)


@functools.cache
def name_tagger() -> NameTagger | None:
    """The process-wide tagger of settings.NAME_TAGGER, or None when it is off."""
    return None if settings.NAME_TAGGER == "off" else NameTagger(Path(settings.NAME_TAGGER))
