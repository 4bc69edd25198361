"""Running our BERT-shaped ONNX models (the reranker, the planted-instruction detector, the name tagger) with
onnxruntime: one session per model file, and texts fed in batches of similar length."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Encoding

INPUTS = (("input_ids", "ids"), ("attention_mask", "attention_mask"), ("token_type_ids", "type_ids"))


def onnx_session(model_file: Path, *, threads: int = 0) -> Any:
    """An onnxruntime session on the CPU, quiet below errors; `threads` 0 lets onnxruntime choose."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = threads
    return onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])


def first_logits(session: Any, encoded: Sequence[Encoding], batch_tokens: int) -> np.ndarray:
    """The first logit of each encoded text or pair, in their order.

    They are batched shortest first, each batch padded only to its own longest and holding about
    `batch_tokens` tokens: on a CPU the cost is the tokens fed, padding included."""
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].ids))
    scores = np.zeros(len(encoded), dtype=np.float32)
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and (end - start + 1) * len(encoded[order[end]].ids) <= batch_tokens:
            end += 1
        batch = order[start:end]
        width = len(encoded[batch[-1]].ids)
        feed = {
            name: np.array(
                [getattr(encoded[i], attribute) + [0] * (width - len(encoded[i].ids)) for i in batch], dtype=np.int64
            )
            for name, attribute in INPUTS
        }
        scores[batch] = session.run(["logits"], feed)[0][:, 0]
        start = end
    return scores
