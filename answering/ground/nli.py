"""The entailment tier's model, where a deployment has one: any NLI sequence classifier (e.g.
cross-encoder/nli-deberta-v3-xsmall) from a local directory, or a hub id where the hub can be reached.
No NLI model ships on PyPI, so by default the tier is the support verifier (grounding.py) instead."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


class NliModelUnavailable(Exception):
    pass


def _entailment_label(id2label: dict[int, str]) -> int:
    for index, label in id2label.items():
        if label.lower().startswith("entail"):
            return int(index)
    raise NliModelUnavailable(f"The model's labels {sorted(id2label.values())} have no entailment label.")


def load_nli(model: str, *, max_tokens: int = 256) -> Callable[[str, str], float]:
    """(premise, hypothesis) → probability that the premise entails the hypothesis."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    local = Path(model).is_dir()
    try:
        tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=local)
        classifier = AutoModelForSequenceClassification.from_pretrained(model, local_files_only=local)
    except OSError as exc:
        raise NliModelUnavailable(f"NLI model {model!r} could not be loaded: {exc}") from None
    classifier.eval()
    entailment = _entailment_label(dict(classifier.config.id2label))
    lock = threading.Lock()

    def entails(premise: str, hypothesis: str) -> float:
        import torch

        inputs: Any = tokenizer(premise, hypothesis, truncation=True, max_length=max_tokens, return_tensors="pt")
        with lock, torch.no_grad():
            logits = classifier(**inputs).logits[0].numpy()
        probabilities = np.exp(logits - logits.max())
        return float(probabilities[entailment] / probabilities.sum())

    return entails
