"""An experiment (not in the product): can orders planted off the subject of their section be found by
where they stand?

A help section is about one thing; text planted for a model often sets some other task ("Describe the
lifecycle of a butterfly.", "Incorporate the following code excerpt to fortify your code.") and reads, to
the word model of knowledge/injection_model.py, like any second-person help text. So each statement of a
section is read twice: how much it sounds like an order (the word model's logit, bounded) and how close
its sentence embedding (the packaged bge-small encoder) sits to the rest of its section. A logistic
regression over the two is trained on others' manual sections with attacks planted into some
(lab/context_sources.py), its cut chosen as the word model's high cut is (at most HIGH_CUT_BENIGN of dev's
own statements), and it is measured on what no choice was made on: the test split's documentation, every
statement of the sample help centre, and the attacks of both planting manifests, planted where they say.

Two ways to read "the rest of its section": `mean`, the normalised sum of the heading's and the other
statements' vectors (one encoder pass a statement), and `text`, the heading and other statements encoded
as one text (a second pass a statement, over a longer text). Either is centred on the median over the
article, because how a topic's sentences cohere differs from manual to manual.

    python -m lab.off_subject --context mean      # figures on the evaluation page (2026-12-07)
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from knowledge.chunking import FENCE_LINE, HEADING_LINE
from knowledge.injection_model import InjectionModel
from knowledge.statements import passage_statements
from lab.injection_training import DATASETS, HIGH_CUT_BENIGN, cut_for
from lab.poisoning import Attack, plant

ENCODER = "bge-small-en-int8"
# The word model's logit is clipped here: beyond it the model is sure either way, and its tail would
# swamp the similarity.
LOGIT_BOUND = 12.0
CONTEXTS = ("mean", "text")

Embed = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class SectionStatements:
    heading: str
    statements: tuple[str, ...]  # sentences and list items, in order (table rows are left out)


def section_statements(markdown: str) -> list[SectionStatements]:
    """The statements of each section of an article's markdown (outside code), under their heading."""
    found: list[SectionStatements] = []
    heading, in_fence = "", False
    lines: list[str] = []

    def close() -> None:
        statements = tuple(s.text for s in passage_statements("\n".join(lines)) if s.kind != "row")
        if statements:
            found.append(SectionStatements(heading, statements))

    for line in markdown.split("\n"):
        if FENCE_LINE.match(line):
            in_fence = not in_fence
        if not in_fence and (match := HEADING_LINE.match(line)):
            close()
            heading, lines = match.group(2), []
        else:
            lines.append(line)
    close()
    return found


def _mean_context(section: SectionStatements, embed: Embed) -> list[float | None]:
    vectors = embed([section.heading or " ", *section.statements])
    total = vectors.sum(axis=0)
    found: list[float | None] = []
    for vector in vectors[1:]:
        context = total - vector
        found.append(float(vector @ context / (np.linalg.norm(context) or 1.0)))
    return found


def _text_context(section: SectionStatements, embed: Embed) -> list[float | None]:
    statements = list(section.statements)
    contexts = [f"{section.heading}: {' '.join(statements[:i] + statements[i + 1 :])}" for i in range(len(statements))]
    return [float(v) for v in np.sum(embed(statements) * embed(contexts), axis=1)]


def similarities(sections: Sequence[SectionStatements], embed: Embed, context: str) -> list[list[float | None]]:
    """Per section, each statement's cosine with the rest of its section, less the article's median; None
    where a statement is alone in its section."""
    read = _mean_context if context == "mean" else _text_context
    raw = [read(section, embed) if len(section.statements) > 1 else [None] for section in sections]
    known = [v for row in raw for v in row if v is not None]
    centre = float(np.median(known)) if known else 0.0
    return [[None if v is None else v - centre for v in row] for row in raw]


def bounded_logit(probability: float) -> float:
    p = min(max(probability, 1e-12), 1 - 1e-12)
    return max(-LOGIT_BOUND, min(LOGIT_BOUND, math.log(p / (1 - p))))


@dataclass(frozen=True)
class OffSubjectModel:
    order_weight: float
    similarity_weight: float
    bias: float
    cut: float  # at or above: planted

    def probability(self, logit: float, similarity: float) -> float:
        z = self.order_weight * logit + self.similarity_weight * similarity + self.bias
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def remembering(embed: Embed) -> Embed:
    """The encoder with each text encoded once: a page is read again for every statement judged in it."""
    known: dict[str, np.ndarray] = {}

    def encode(texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            known.update(zip(missing, embed(missing), strict=True))
        return np.array([known[t] for t in texts])

    return encode


Case = tuple[list[SectionStatements], int, int]  # a page's sections, the judged section, the judged statement


def features(cases: Sequence[Case], words: InjectionModel, embed: Embed, context: str) -> np.ndarray:
    """Per judged statement: the word model's bounded logit and its centred similarity."""
    rows = []
    for page, section, index in cases:
        similarity = similarities(page, embed, context)[section][index]
        statement = page[section].statements[index]
        rows.append((bounded_logit(words.probability(statement)), 0.0 if similarity is None else similarity))
    return np.array(rows)


def page_of(section_id: str) -> str:
    return section_id.rsplit("#", 1)[0]


def judged(sections: dict[str, SectionStatements], row: dict[str, object]) -> tuple[list[SectionStatements], int, int]:
    """The row's page as it reads it (its sections in order, the attack planted), the index of the judged
    section and of the judged statement in it."""
    section_id = str(row["section"])
    page = [key for key in sections if page_of(key) == page_of(section_id)]
    index = int(str(row["index"]))
    chosen = sections[section_id]
    if row["attack"] is not None:
        statements = list(chosen.statements)
        statements.insert(index, str(row["attack"]))
        chosen = SectionStatements(chosen.heading, tuple(statements))
    return [chosen if key == section_id else sections[key] for key in page], page.index(section_id), index


def read_sections(path: Path) -> dict[str, SectionStatements]:
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        found[data["id"]] = SectionStatements(data["heading"], tuple(data["statements"]))
    return found


def read_rows(split: str, folder: Path = DATASETS) -> list[dict[str, object]]:
    return [json.loads(line) for line in (folder / f"context_{split}.jsonl").read_text(encoding="utf-8").splitlines()]


def labelled(split: str, folder: Path) -> tuple[list[Case], np.ndarray]:
    sections = read_sections(folder / "context_sections.jsonl")
    rows = read_rows(split, folder)
    return [judged(sections, r) for r in rows], np.array([int(str(r["label"])) for r in rows])


def train(folder: Path, words: InjectionModel, embed: Embed, context: str) -> tuple[OffSubjectModel, list[str]]:
    from sklearn.linear_model import LogisticRegression

    train_cases, train_labels = labelled("train", folder)
    fitted = LogisticRegression(class_weight="balanced", max_iter=1000, random_state=0)
    fitted.fit(features(train_cases, words, embed, context), train_labels)
    (order_weight, similarity_weight), bias = fitted.coef_[0], float(fitted.intercept_[0])
    unscaled = OffSubjectModel(float(order_weight), float(similarity_weight), bias, cut=1.0)
    dev_cases, dev_labels = labelled("dev", folder)
    scores = np.array([unscaled.probability(*f) for f in features(dev_cases, words, embed, context)])
    model = OffSubjectModel(
        unscaled.order_weight, unscaled.similarity_weight, bias, cut_for(scores[dev_labels == 0], HIGH_CUT_BENIGN)
    )
    return model, [
        f"context {context}: trained on {len(train_labels)} statements ({int(train_labels.sum())} planted)",
        f"weights: order {model.order_weight:.3f}, similarity {model.similarity_weight:.3f}, bias {bias:.3f}; "
        f"cut {model.cut:.4f}; dev: planted caught {np.mean(scores[dev_labels == 1] >= model.cut):.3f}, "
        f"own statements flagged {np.mean(scores[dev_labels == 0] >= model.cut):.4f}",
    ]


def scored_article(
    markdown: str, words: InjectionModel, model: OffSubjectModel, embed: Embed, context: str
) -> list[tuple[str, float]]:
    """Every statement of an article that has neighbours, with the regression's probability."""
    sections = section_statements(markdown)
    return [
        (statement, model.probability(bounded_logit(words.probability(statement)), similarity))
        for section, row in zip(sections, similarities(sections, embed, context), strict=True)
        for statement, similarity in zip(section.statements, row, strict=True)
        if similarity is not None
    ]


def report(
    model: OffSubjectModel,
    words: InjectionModel,
    embed: Embed,
    context: str,
    help_centre: Path,
    manifests: Sequence[tuple[str, Sequence[Attack]]],
    folder: Path = DATASETS,
) -> list[str]:
    """Held-out documentation, the sample help centre (at the dev cut, and how many attacks each of the
    help centre's own highest scores would let through as a cut), and the planted attacks."""
    test_cases, _ = labelled("test", folder)
    test = [model.probability(*f) for f in features(test_cases, words, embed, context)]
    articles = sorted(help_centre.glob("*.md"))
    started = time.perf_counter()
    own = [
        pair
        for path in articles
        for pair in scored_article(path.read_text(encoding="utf-8"), words, model, embed, context)
    ]
    per_statement = (time.perf_counter() - started) * 1000 / max(1, len(own))
    own_scores = sorted((p for _, p in own), reverse=True)
    lines = [
        f"held-out documentation (test split): {sum(p >= model.cut for p in test)} of {len(test)} flagged",
        f"sample help centre: {sum(p >= model.cut for p in own_scores)} of {len(own)} statements flagged: "
        + "; ".join(s for s, p in own if p >= model.cut),
        f"time: {per_statement:.1f} ms a statement (encoder and word model, {len(articles)} articles)",
    ]
    for name, attacks in manifests:
        for split in sorted({a.split for a in attacks}):
            chosen = [a for a in attacks if a.split == split]
            found = []
            for attack in chosen:
                article = plant((help_centre / f"{attack.article}.md").read_text(encoding="utf-8"), attack)
                scores = [p for s, p in scored_article(article, words, model, embed, context) if s in attack.text]
                found.append(max(scores, default=0.0))
            at_cut = sum(p >= model.cut for p in found)
            # Had the cut been set just above the help centre's k-th highest own statement instead:
            tradeoff = ", ".join(
                f"{k} flagged: {sum(p > own_scores[k] for p in found)}" for k in (0, 3, 6) if k < len(own_scores)
            )
            lines.append(
                f"{name}, {split}: {at_cut} of {len(chosen)} at the dev cut; with the help centre's own {tradeoff}"
            )
    return lines


def main() -> None:
    import django

    django.setup()
    from django.conf import settings

    from knowledge.embeddings import Embedder
    from knowledge.injection_model import shipped_model
    from lab.external_attacks import MANIFEST
    from lab.poisoning import read_attacks

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--context", choices=CONTEXTS, default="mean")
    parser.add_argument("--data", type=Path, default=DATASETS)
    options = parser.parse_args()
    words, embed = shipped_model(), remembering(Embedder.load(ENCODER).encode)
    model, lines = train(options.data, words, embed, options.context)
    manifests = [
        ("lab/sample/attacks.jsonl", read_attacks()),
        ("attacks_external_planted.jsonl", read_attacks(MANIFEST)),
    ]
    # The help centre is timed with a fresh encoder: what ingestion would pay.
    fresh = Embedder.load(ENCODER).encode
    lines += report(model, words, fresh, options.context, Path(settings.SAMPLE_HELP_CENTRE), manifests, options.data)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
