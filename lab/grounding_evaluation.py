"""How far the grounding tiers can be trusted, measured on SciFact's labelled evidence: each claim paired with
sentences that SUPPORT it, CONTRADICT it, or come from the same abstract without bearing on it (UNRELATED)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from answering.ground.grounding import Grounder
from lab.errors import GroundingDatasetError

LABELS = ("SUPPORT", "CONTRADICT", "UNRELATED")
SUPPORT_THRESHOLDS = (-2.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
SIMILARITY_THRESHOLDS = (0.7, 0.8, 0.85, 0.9, 0.95)


@dataclass(frozen=True)
class EvidencePair:
    claim: str
    sentence: str
    label: str


def read_evidence_pairs(dataset: Path, split: str) -> list[EvidencePair]:
    """Every labelled (claim, sentence) pair of the split, plus one unrelated sentence of the same abstract
    per claim and document (the first sentence that is evidence for nothing about that claim)."""
    evidence_path = dataset / f"evidence_{split}.jsonl"
    for needed in (evidence_path, dataset / "queries.jsonl", dataset / "corpus_sentences.jsonl.gz"):
        if not needed.exists():
            raise GroundingDatasetError(f"{needed} does not exist (expected SciFact's evidence layout).")
    claims = {}
    with (dataset / "queries.jsonl").open() as fh:
        for line in fh:
            record = json.loads(line)
            claims[str(record["_id"])] = record["text"]
    rows = [json.loads(line) for line in evidence_path.read_text().splitlines() if line.strip()]
    wanted_docs = {str(row["doc_id"]) for row in rows}
    sentences: dict[str, list[str]] = {}
    with gzip.open(dataset / "corpus_sentences.jsonl.gz", "rt") as fh:
        for line in fh:
            record = json.loads(line)
            if str(record["_id"]) in wanted_docs:
                sentences[str(record["_id"])] = record["sentences"]
    pairs: list[EvidencePair] = []
    evidence_of: dict[tuple[str, str], set[int]] = {}
    for row in rows:
        key = (str(row["query_id"]), str(row["doc_id"]))
        evidence_of.setdefault(key, set()).update(row["sentences"])
        for index in row["sentences"]:
            pairs.append(EvidencePair(claims[key[0]], sentences[key[1]][index], row["label"]))
    for (claim_id, doc_id), used in evidence_of.items():
        spare = next((s for i, s in enumerate(sentences[doc_id]) if i not in used), None)
        if spare is not None:
            pairs.append(EvidencePair(claims[claim_id], spare, "UNRELATED"))
    return pairs


def _precision_recall(predicted: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    hits = int((predicted & truth).sum())
    return (hits / int(predicted.sum()) if predicted.any() else 0.0), hits / max(int(truth.sum()), 1)


def evaluate_grounding(
    pairs: list[EvidencePair], grounder: Grounder, *, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """The support verifier as configured (supported or not, per label), its score swept over thresholds,
    and the embedding-similarity tier swept likewise. "Supported" is right only for SUPPORT pairs."""
    decisions, scores, similarities = [], [], []
    for done, pair in enumerate(pairs, start=1):
        verdict = grounder.verify_support(pair.claim, [pair.sentence])
        decisions.append(verdict.supported)
        scores.append(verdict.score)
        vectors = grounder.embedder.encode([pair.claim, pair.sentence])
        similarities.append(float(vectors[0] @ vectors[1]))
        if progress:
            progress(done, len(pairs))
    labels = np.array([p.label for p in pairs])
    truth = labels == "SUPPORT"
    supported = np.array(decisions)
    precision, recall = _precision_recall(supported, truth)
    score_array, similarity_array = np.array(scores), np.array(similarities)
    return {
        "pairs": {label: int((labels == label).sum()) for label in LABELS},
        "support_verifier": {
            "threshold": grounder.support_threshold,
            "accuracy": round(float((supported == truth).mean()), 4),
            "precision_supported": round(precision, 4),
            "recall_supported": round(recall, 4),
            "supported_rate_by_label": {
                label: round(float(supported[labels == label].mean()), 4) for label in LABELS if (labels == label).any()
            },
        },
        "score_sweep": [
            dict(zip(("threshold", "precision", "recall"), (t, *map(lambda v: round(v, 4), pr)), strict=True))
            for t in SUPPORT_THRESHOLDS
            for pr in [_precision_recall(score_array >= t, truth)]
        ],
        "similarity_sweep": [
            dict(zip(("threshold", "precision", "recall"), (t, *map(lambda v: round(v, 4), pr)), strict=True))
            for t in SIMILARITY_THRESHOLDS
            for pr in [_precision_recall(similarity_array >= t, truth)]
        ],
    }
