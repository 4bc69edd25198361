"""How well content-gap clustering groups what belongs together: the unanswerable questions of the golden and
calibration sets, clustered as insights/gaps.py clusters real ones, against a labelling of their topics
(lab/sample/gap_labels.jsonl, one topic per question: the section an author would write to answer it).

The threshold is tuned on the calibration sets' questions only; the golden set's are the test.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings
from sklearn.metrics import adjusted_rand_score

from answering.privacy.masking import mask_pii
from insights.gaps import cluster, embed_questions, model_text
from knowledge.embeddings import Embedder
from lab.errors import GapLabelError
from lab.jsonl import json_lines

SAMPLE = Path(settings.BASE_DIR) / "lab" / "sample"
GAP_LABELS = SAMPLE / "gap_labels.jsonl"
LABEL_SETS = ("golden", "calibration")
THRESHOLDS = tuple(round(0.3 + 0.025 * i, 3) for i in range(21))  # 0.3 … 0.8


@dataclass(frozen=True)
class LabelledQuestion:
    id: str
    set: str  # "golden" (the test) or "calibration" (for tuning)
    question: str
    topic: str


@dataclass(frozen=True)
class ClusteringFigures:
    threshold: float
    questions: int
    topics: int
    clusters: int
    purity: float  # share of questions in their cluster's most common topic
    inverse_purity: float  # share of questions in their topic's most common cluster
    f: float  # harmonic mean of the two: all-singletons scores purity 1, one big cluster inverse purity 1
    adjusted_rand: float

    def as_json(self) -> dict[str, float | int]:
        return dict(self.__dict__)


def read_gap_labels(path: Path = GAP_LABELS) -> list[LabelledQuestion]:
    labelled, seen = [], set()
    for data, where in json_lines(path, GapLabelError):
        if not isinstance(data, dict):
            raise GapLabelError(f"{where}: expected an object with id, set, topic and question")
        for key in ("id", "set", "topic", "question"):
            if not isinstance(data.get(key), str) or not data[key].strip():
                raise GapLabelError(f"{where}: {key}: a non-empty string is required")
        if data["set"] not in LABEL_SETS:
            raise GapLabelError(f"{where}: set: {data['set']!r} is not one of {', '.join(LABEL_SETS)}")
        if data["id"] in seen:
            raise GapLabelError(f"{where}: id: {data['id']!r} is labelled twice")
        seen.add(data["id"])
        labelled.append(LabelledQuestion(data["id"], data["set"], data["question"], data["topic"]))
    if not labelled:
        raise GapLabelError(f"{path}: no labelled questions")
    return labelled


def _majority_share(groups: Sequence[Sequence[str]]) -> float:
    return sum(Counter(g).most_common(1)[0][1] for g in groups) / sum(len(g) for g in groups)


def score_clustering(topics: Sequence[str], groups: list[list[int]], *, threshold: float) -> ClusteringFigures:
    """Purity, inverse purity and adjusted Rand index of groups (row numbers) against each row's topic."""
    by_cluster = [[topics[i] for i in g] for g in groups]
    cluster_of = {i: n for n, g in enumerate(groups) for i in g}
    by_topic: dict[str, list[str]] = {}
    for i, topic in enumerate(topics):
        by_topic.setdefault(topic, []).append(str(cluster_of[i]))
    purity, inverse = _majority_share(by_cluster), _majority_share(list(by_topic.values()))
    return ClusteringFigures(
        threshold=threshold,
        questions=len(topics),
        topics=len(by_topic),
        clusters=len(groups),
        purity=round(purity, 3),
        inverse_purity=round(inverse, 3),
        f=round(2 * purity * inverse / (purity + inverse), 3),
        adjusted_rand=round(float(adjusted_rand_score(list(topics), [cluster_of[i] for i in range(len(topics))])), 3),
    )


@dataclass
class GapEvaluation:
    sweep: list[ClusteringFigures]  # the calibration questions, every threshold
    chosen: float  # the threshold of the best F on the calibration questions
    test: ClusteringFigures  # the golden set's questions at the chosen threshold
    singletons: ClusteringFigures  # the golden set's questions each alone: what clustering has to beat
    test_groups: list[list[str]]  # the golden questions as clustered, for reading

    def as_json(self) -> dict[str, object]:
        return {
            "sweep": [f.as_json() for f in self.sweep],
            "chosen_threshold": self.chosen,
            "test": self.test.as_json(),
            "singletons": self.singletons.as_json(),
            "test_clusters": self.test_groups,
        }


def evaluate_gaps(
    labelled: list[LabelledQuestion],
    embedder: Embedder,
    *,
    thresholds: Sequence[float] = THRESHOLDS,
    progress: Callable[[], None] = lambda: None,
) -> GapEvaluation:
    """Tune the threshold on the calibration questions (best F), then measure the golden ones with it."""
    tune = [q for q in labelled if q.set == "calibration"]
    test = [q for q in labelled if q.set == "golden"]
    if not tune or not test:
        raise GapLabelError("The labelling needs both calibration questions (to tune) and golden ones (to test).")

    def vectors(questions: list[LabelledQuestion]) -> np.ndarray:
        # As insights/gaps.py reads a turn's question.
        return embed_questions([model_text(q.question, mask_pii(q.question).text) for q in questions], embedder)

    tune_vectors, test_vectors = vectors(tune), vectors(test)
    tune_topics = [q.topic for q in tune]
    sweep = []
    for threshold in thresholds:
        sweep.append(score_clustering(tune_topics, cluster(tune_vectors, threshold=threshold), threshold=threshold))
        progress()
    # Ties go to the higher threshold: smaller, tighter clusters are easier for an author to act on.
    best = max(sweep, key=lambda f: (f.f, f.threshold))
    groups = cluster(test_vectors, threshold=best.threshold)
    test_topics = [q.topic for q in test]
    return GapEvaluation(
        sweep=sweep,
        chosen=best.threshold,
        test=score_clustering(test_topics, groups, threshold=best.threshold),
        singletons=score_clustering(test_topics, [[i] for i in range(len(test))], threshold=1.0),
        test_groups=[[f"{test[i].topic}: {test[i].question}" for i in g] for g in groups],
    )
