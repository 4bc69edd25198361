"""Training and measuring the learned planted-instruction detector (knowledge/injection_model.py).

Trained on lab/datasets/injection/train.jsonl; its two cuts are chosen on dev.jsonl, by how much benign text
each lets through, never on lab/sample/attacks.jsonl, which stays the test set. Measured on text no cut
was chosen on: benign_docs.jsonl (imperative documentation from sources not in training), the held-out
external attacks, every statement of the sample help centre, and the planted attacks of attacks.jsonl.

    python -m lab.injection_training            # train, choose the cuts, write knowledge/injection_model.npz
    manage.py evaluate detector                 # the figures of the shipped model
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from knowledge.chunking import split_sentences
from knowledge.injection import suspicion, without_instructions
from knowledge.injection_model import FEATURE_BITS, MODEL_FILE, InjectionModel, Suspicion, feature_indices
from knowledge.statements import passage_statements
from lab.errors import InjectionSetupError
from lab.jsonl import json_lines

DATASETS = Path(__file__).resolve().parent / "datasets" / "injection"
# The share of dev's benign text each cut may flag: the high cut drops a statement, so it may cost almost
# nothing; the low cut only withholds what a suspect statement alone supports.
HIGH_CUT_BENIGN = 0.001
LOW_CUT_BENIGN = 0.002
# Inverse regularisation strength, chosen on dev (attack recall at the low cut) among 0.3, 1, 3, 10, 30, 100:
# 0.68, 0.75, 0.79, 0.84, 0.87, 0.88; 10 is where the gain flattens and held-out documentation stays under
# 0.2 % flagged.
REGULARISATION = 10.0


@dataclass(frozen=True)
class Example:
    text: str
    label: int  # 1: written to give a model orders; 0: benign
    source: str


def read_examples(path: Path) -> list[Example]:
    examples = []
    for data, where in json_lines(path, InjectionSetupError):
        if not isinstance(data, dict) or not isinstance(data.get("text"), str) or data.get("label") not in (0, 1):
            raise InjectionSetupError(f"{where}: expected a text and a label of 0 or 1.")
        examples.append(Example(data["text"], data["label"], str(data.get("source", ""))))
    return examples


def _matrix(texts: Sequence[str]):  # type: ignore[no-untyped-def]  # scipy.sparse has no stubs
    from scipy.sparse import csr_matrix

    rows, columns, values = [], [], []
    for row, text in enumerate(texts):
        indices = feature_indices(text)
        rows += [row] * len(indices)
        columns += indices.tolist()
        values += [1.0 / math.sqrt(len(indices))] * len(indices) if len(indices) else []
    return csr_matrix((values, (rows, columns)), shape=(len(texts), 1 << FEATURE_BITS), dtype=np.float32)


def fit(examples: Sequence[Example], regularisation: float = REGULARISATION) -> tuple[np.ndarray, float]:
    """The weights and bias of a logistic regression, each class weighted by how rare it is."""
    from sklearn.linear_model import LogisticRegression

    labels = np.array([e.label for e in examples])
    model = LogisticRegression(
        C=regularisation, class_weight="balanced", solver="liblinear", max_iter=1000, random_state=0
    )
    model.fit(_matrix([e.text for e in examples]), labels)
    return model.coef_[0].astype(np.float32), float(model.intercept_[0])


def cut_for(benign_probabilities: Sequence[float], share: float) -> float:
    """The lowest cut that flags at most ``share`` of the benign texts."""
    ordered = sorted(benign_probabilities, reverse=True)
    allowed = int(share * len(ordered))
    # Just above the (allowed+1)-th highest benign score, so that one is not flagged.
    return min(0.999, float(np.nextafter(ordered[allowed], 1.0))) if allowed < len(ordered) else 0.5


def train(train_set: Sequence[Example], dev_set: Sequence[Example]) -> InjectionModel:
    weights, bias = fit(train_set)
    unscaled = InjectionModel(weights, bias, high_cut=1.0, low_cut=1.0)
    benign = [unscaled.probability(e.text) for e in dev_set if e.label == 0]
    return InjectionModel(weights, bias, cut_for(benign, HIGH_CUT_BENIGN), cut_for(benign, LOW_CUT_BENIGN))


@dataclass(frozen=True)
class Flagged:
    name: str
    texts: int
    planted: int  # at or above the high cut (or caught by the rules, where they are counted)
    suspect: int  # between the cuts

    def line(self) -> str:
        share = (self.planted + self.suspect) / self.texts if self.texts else 0.0
        return (
            f"{self.name:<44}{self.texts:>6}{self.planted:>9}{self.suspect:>9}"
            f"{share:>10.3f}{self.planted / self.texts if self.texts else 0.0:>10.3f}"
        )


def flagged(name: str, texts: Sequence[str], verdict: Callable[[str], Suspicion]) -> Flagged:
    verdicts = [verdict(t) for t in texts]
    return Flagged(name, len(texts), verdicts.count(Suspicion.PLANTED), verdicts.count(Suspicion.SUSPECT))


def header() -> str:
    return f"{'set':<44}{'texts':>6}{'planted':>9}{'suspect':>9}{'flagged':>10}{'planted':>10}"


def milliseconds(work: Callable[[str], object], passages: Sequence[str]) -> tuple[float, float]:
    """p50 and p95 milliseconds ``work`` takes on one passage."""
    timings = []
    for passage in passages:
        started = time.perf_counter()
        work(passage)
        timings.append((time.perf_counter() - started) * 1000)
    quantiles = statistics.quantiles(timings, n=20, method="inclusive")
    return round(statistics.median(timings), 3), round(quantiles[18], 3)


def help_centre_statements(folder: Path) -> list[str]:
    """Every statement (sentence, list item, table row) and every sentence of every prose line of a help
    centre's articles: what the detector must leave alone."""
    found = []
    for path in sorted(folder.glob("*.md")):
        body = path.read_text(encoding="utf-8").split("---", 2)[2]
        for block in re.split(r"\n\s*\n", body):
            if block.lstrip().startswith("#"):
                continue
            found += [s.text for s in passage_statements(block)]
            found += [s for line in block.splitlines() for s in split_sentences(line)]
    return found


def help_centre_passages(folder: Path) -> list[str]:
    """The help centre's paragraphs, lists and tables: what the detector reads at ingestion and per turn."""
    return [
        block
        for path in sorted(folder.glob("*.md"))
        for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8").split("---", 2)[2])
        if block.strip() and not block.lstrip().startswith("#")
    ]


def detector_report(model: InjectionModel, help_centre: Path, attacks: Sequence[tuple[str, str]]) -> list[str]:
    """The shipped detector (rules and model, and the model alone) on text no cut was chosen on: held-out
    documentation and attacks from other collections, the help centre, and our planted attacks by split."""

    benign = [e.text for e in read_examples(DATASETS / "benign_docs.jsonl")]
    external = [e.text for e in read_examples(DATASETS / "attacks_external.jsonl")]
    statements = help_centre_statements(help_centre)
    lines = [f"cuts: low {model.low_cut:.4f}, high {model.high_cut:.4f}", header()]
    for name, verdict in (("rules + model", suspicion), ("model alone", model.suspicion)):
        lines.append(f"-- {name}")
        lines.append(flagged("benign documentation (held out)", benign, verdict).line())
        lines.append(flagged("sample help centre statements", statements, verdict).line())
        lines.append(flagged("external attacks (held out)", external, verdict).line())
        for split in sorted({split for split, _ in attacks}):
            texts = [text for s, text in attacks if s == split]
            lines.append(flagged(f"lab/sample/attacks.jsonl, {split}", texts, verdict).line())
    passages = help_centre_passages(help_centre)
    suspicion.cache_clear()
    detector_p50, detector_p95 = milliseconds(without_instructions, passages)
    model_p50, model_p95 = milliseconds(model.probability, passages)
    lines.append(
        f"time per help-centre passage ({len(passages)}), rules + model over each statement: "
        f"p50 {detector_p50} ms, p95 {detector_p95} ms; "
        f"the model alone on the whole passage: p50 {model_p50} ms, p95 {model_p95} ms"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATASETS)
    parser.add_argument("--out", type=Path, default=MODEL_FILE)
    options = parser.parse_args()
    train_set = read_examples(options.data / "train.jsonl")
    dev_set = read_examples(options.data / "dev.jsonl")
    model = train(train_set, dev_set)
    model.save(options.out)
    verdict = model.suspicion
    print(f"trained on {len(train_set)} texts ({sum(e.label for e in train_set)} planted); "
          f"cuts: low {model.low_cut:.4f}, high {model.high_cut:.4f}; written to {options.out}")  # fmt: skip
    print(header())
    for label, name in ((1, "dev, planted"), (0, "dev, benign")):
        print(flagged(name, [e.text for e in dev_set if e.label == label], verdict).line())
    by_source: dict[str, list[str]] = {}
    for e in dev_set:
        repository = e.source.split(":", 1)[0]
        by_source.setdefault(f"  {repository} ({'planted' if e.label else 'benign'})"[:44], []).append(e.text)
    for name, texts in sorted(by_source.items()):
        print(flagged(name, texts, verdict).line())


if __name__ == "__main__":
    main()
