"""The grounding cascade measured on a tiny evidence set."""

import gzip
import json
from pathlib import Path

from answering.ground.grounding import Grounder
from knowledge.rerank import default_reranker
from lab.grounding_evaluation import evaluate_grounding, read_evidence_pairs


def test_grounding_evaluation_on_a_tiny_evidence_set(tmp_path: Path, embedder):
    (tmp_path / "queries.jsonl").write_text(
        json.dumps({"_id": "1", "text": "Refunds take 5 to 10 business days."}) + "\n"
    )
    sentences = [
        "Card refunds take 5 to 10 business days after approval.",
        "Refunds never take 5 to 10 business days.",
        "Our shop in Leeds opens at nine every morning.",
    ]
    with gzip.open(tmp_path / "corpus_sentences.jsonl.gz", "wt") as fh:
        fh.write(json.dumps({"_id": "9", "sentences": sentences}) + "\n")
    (tmp_path / "evidence_train.jsonl").write_text(
        json.dumps({"query_id": "1", "doc_id": "9", "label": "SUPPORT", "sentences": [0]})
        + "\n"
        + json.dumps({"query_id": "1", "doc_id": "9", "label": "CONTRADICT", "sentences": [1]})
        + "\n"
    )
    pairs = read_evidence_pairs(tmp_path, "train")
    assert [(p.sentence, p.label) for p in pairs] == [
        (sentences[0], "SUPPORT"),
        (sentences[1], "CONTRADICT"),
        (sentences[2], "UNRELATED"),
    ]
    figures = evaluate_grounding(pairs, Grounder(embedder, default_reranker()))
    assert figures["support_verifier"]["supported_rate_by_label"] == {
        "SUPPORT": 1.0,
        "CONTRADICT": 0.0,
        "UNRELATED": 0.0,
    }
    assert figures["support_verifier"]["precision_supported"] == 1.0
