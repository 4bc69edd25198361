"""The abstention decision: the probability that the top evidence answers the question, from every signal a
turn already has, combined by a logistic regression fitted on labelled questions.

Signals, each computed the same way on any collection:
- sentence_top: the cross-encoder logit of the best statement (with its heading) in the top passages, read
  alone or after the statement before it;
- passage_top: the cross-encoder logit of the best reranked passage;
- dense_top, dense_secondary_top: the best cosine of each dense model (MiniLM, bge-small);
- agreement: the share of stages (BM25, each dense model, the reranker) whose first hit is the turn's first;
- coverage: the share of the question's content words (stemmed) that the top passage contains;
- sentence_margin: how far the best statement stands above the best of any other passage (one section
  answers, rather than several touching the topic);
- asked_for: whether the best statement holds the kind of thing the question asks for (a duration, an amount,
  a time, a procedure), 1 when the question asks for none of these;
- numbers_agree: whether every number the question names is in the top passage.

The model is fitted with both classes weighted equally, so its probability does not lean on the share of
unanswerable questions in the set it was fitted on: a collection's share is unknown until it is labelled.
A default fitted on the sample calibration set and StackFAQ's calibration split ships in
`abstention_default.json`; `calibrate` refits one per collection when labelled questions exist.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings

from answering.errors import AbstentionModelError
from answering.ground.claims import content_words, numbers_in
from knowledge.query import identifiers
from knowledge.rerank import PACKAGED_RERANKER
from knowledge.stages import RANKING_STAGES, Stage
from knowledge.stemming import stems

PROBABILITY = "answer_probability"  # the signal a calibrated decision is stored under
SIGNALS = (
    "sentence_top",
    "passage_top",
    "dense_top",
    "dense_secondary_top",
    "agreement",
    "coverage",
    "sentence_margin",
    "asked_for",
    "numbers_agree",
)
# A margin wider than this says no more: one section answers.
MAX_MARGIN = 8.0
AGREEMENT_STAGES = (*RANKING_STAGES, Stage.RERANK)
DEFAULT_MODEL = Path(__file__).resolve().parent / "abstention_default.json"
# Where a signal could not be computed (no hits, a stage switched off): the weakest value it takes.
LOWEST_LOGIT = -12.0
FLOOR: dict[str, float] = {Stage.RERANK: LOWEST_LOGIT, Stage.DENSE: 0.0, Stage.DENSE_SECONDARY: 0.0}
L2 = 1.0  # ridge penalty on the standardised weights
# The cuts' targets on the labelled questions a decision is fitted on (tuned on the calibration sets).
ANSWER_MAX_WRONG = 0.05  # share of unanswerable questions the answer cut may let through
SUGGEST_REACH = 0.95  # share of answerable questions the suggest cut must reach


def _stems(text: str) -> set[str]:
    return set(stems(sorted(content_words(text))))


def coverage(question: str, passage: str) -> float:
    """Share of the question's content words (stemmed) found in the passage; 0 for a question of none."""
    asked = _stems(question)
    return len(asked & _stems(passage)) / len(asked) if asked else 0.0


def unknown_codes(question: str, passages: Sequence[str]) -> set[str]:
    """Codes the question names that no passage contains, of a kind the passages do name: "E-4031" where
    the articles list E-4012 and E-4021. However close the rest of the evidence, it answers another code."""
    asked = identifiers(question)
    if not asked:
        return set()
    known = set().union(*(identifiers(p) for p in passages))
    kinds = {code.partition("-")[0] for code in known}
    return {code for code in asked - known if code.partition("-")[0] in kinds}


@dataclass(frozen=True)
class HitSignals:
    """What the decision reads of one retrieval hit: its text and each stage's rank and score."""

    text: str
    stages: Mapping[str, tuple[int, float]]


@dataclass(frozen=True)
class BestStatements:
    """What the decision reads of the scored statements: the best one (its logit, text and whether it is a
    step or announces one) and the best logit of any other passage."""

    top: float
    text: str
    procedure: bool
    other_passage: float | None


# What a question asks for, from its interrogative, and how a statement that holds it looks. Question words
# of English, not of any collection; a question that matches none asks for nothing in particular.
_TIME_UNIT = r"(minutes?|hours?|days?|weeks?|months?|years?|business days?|working days?)"
_DURATION = re.compile(
    rf"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|a few|same|next)[\s-]+{_TIME_UNIT}\b|"
    r"\b(immediately|instantly|straight away|right away|overnight)\b",
    re.IGNORECASE,
)
_AMOUNT = re.compile(r"[$£€¥]\s?\d|\d\s?(%|usd|eur|gbp)\b|\bfree\b|\bno (charge|cost|fee)\b", re.IGNORECASE)
_TIME = re.compile(
    r"\b(\d{1,2}(:\d{2})?\s?(am|pm)|\d{1,2}:\d{2}|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"within|after|before|once|until|as soon as|when)\b",
    re.IGNORECASE,
)
_ASKS = (
    ("duration", re.compile(r"\bhow (long|soon|many (minutes|hours|days|weeks|months|years|business days))\b", re.I)),
    ("amount", re.compile(r"\bhow much\b|\bwhat (does|do|will) .{0,40}\bcost\b|\bwhat is the (price|fee)\b", re.I)),
    ("time", re.compile(r"\bwhen\b|\bwhat (time|day|date)\b", re.I)),
    ("procedure", re.compile(r"\bhow (do|can|should|would|could) (i|we|you)\b|\bhow to\b", re.I)),
)


def asked_kind(question: str) -> str | None:
    """What the question asks for: "duration", "amount", "time", "procedure", or None."""
    return next((kind for kind, pattern in _ASKS if pattern.search(question)), None)


def holds_asked(question: str, statement: str, *, procedure: bool) -> bool:
    """Whether a statement holds what the question asks for (always, when it asks for nothing named)."""
    kind = asked_kind(question)
    if kind == "duration":
        return bool(_DURATION.search(statement))
    if kind == "amount":
        return bool(_AMOUNT.search(statement))
    if kind == "time":
        return bool(_TIME.search(statement) or _DURATION.search(statement))
    if kind == "procedure":
        return procedure
    return True


def signals_of(question: str, hits: Sequence[HitSignals], statements: BestStatements | None) -> dict[str, float]:
    """The decision's inputs for one turn: hits as the turn ranked them, the best statements."""
    present = [s for s in AGREEMENT_STAGES if any(s in h.stages for h in hits)]

    def best(stage: str) -> float:
        return max((h.stages[stage][1] for h in hits if stage in h.stages), default=FLOOR[stage])

    top = hits[0] if hits else None
    agreeing = sum(1 for s in present if top is not None and top.stages.get(s, (0, 0.0))[0] == 1)
    sentence = statements.top if statements is not None else LOWEST_LOGIT
    margin = (
        MAX_MARGIN if statements is None or statements.other_passage is None else sentence - statements.other_passage
    )
    asked = statements is not None and holds_asked(question, statements.text, procedure=statements.procedure)
    # A stage that did not run reads as the one standing in for it.
    return {
        "sentence_top": sentence,
        "passage_top": best(Stage.RERANK) if Stage.RERANK in present else sentence,
        "dense_top": best(Stage.DENSE),
        "dense_secondary_top": best(Stage.DENSE_SECONDARY if Stage.DENSE_SECONDARY in present else Stage.DENSE),
        "agreement": agreeing / len(present) if present else 0.0,
        "coverage": coverage(question, top.text) if top is not None else 0.0,
        "sentence_margin": max(0.0, min(MAX_MARGIN, margin)) if statements is not None else 0.0,
        "asked_for": 1.0 if asked else 0.0,
        "numbers_agree": float(top is not None and numbers_in(question) <= numbers_in(top.text)),
    }


@dataclass(frozen=True)
class AnswerModel:
    """Logistic regression on standardised signals, and two cuts on its probability: answer at `cut` or
    above (chosen for precision: few unanswerable questions reach it), suggest the section at
    `suggest_cut` or above (chosen for relevance: most answerable questions reach it), else "I don't know"."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    cut: float
    fitted_on: str = ""
    # A model stored before suggestions existed has none: its suggest cut is its answer cut.
    suggest_cut: float | None = None
    # The cross-encoder (RERANK_MODEL) whose scores it was fitted on; one stored before this was recorded
    # was fitted on the packaged reranker's.
    scored_with: str = PACKAGED_RERANKER

    @property
    def suggests_from(self) -> float:
        return self.cut if self.suggest_cut is None else self.suggest_cut

    def probability(self, signals: Mapping[str, float]) -> float:
        z = self.bias + sum(
            w * (signals[f] - m) / s
            for f, m, s, w in zip(self.features, self.mean, self.scale, self.weights, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def answers(self, signals: Mapping[str, float]) -> bool:
        return self.probability(signals) >= self.cut

    def kind(self, probability: float) -> str:
        """ "answer", "suggest" or "abstain" for a probability."""
        return "answer" if probability >= self.cut else "suggest" if probability >= self.suggests_from else "abstain"

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AnswerModel:
        try:
            model = cls(
                tuple(data["features"]),
                tuple(float(v) for v in data["mean"]),
                tuple(float(v) for v in data["scale"]),
                tuple(float(v) for v in data["weights"]),
                float(data["bias"]),
                float(data["cut"]),
                str(data.get("fitted_on", "")),
                None if data.get("suggest_cut") is None else float(data["suggest_cut"]),
                str(data.get("scored_with", PACKAGED_RERANKER)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise AbstentionModelError(f"not an abstention model: {exc}") from None
        unknown = set(model.features) - set(SIGNALS)
        if unknown or not (len(model.features) == len(model.mean) == len(model.scale) == len(model.weights)):
            raise AbstentionModelError(f"an abstention model needs one mean, scale and weight per signal of {SIGNALS}")
        if not 0.0 <= model.cut <= 1.0:
            raise AbstentionModelError(f"the cut must be a probability, got {model.cut}")
        if not 0.0 <= model.suggests_from <= model.cut:
            raise AbstentionModelError(
                f"the suggest cut must be a probability no higher than the answer cut {model.cut}, "
                f"got {model.suggest_cut}"
            )
        return model


def fit(
    rows: Sequence[tuple[Mapping[str, float], bool]],
    *,
    groups: Sequence[str] | None = None,
    fitted_on: str = "",
    scored_with: str = PACKAGED_RERANKER,
) -> AnswerModel:
    """A logistic regression by Newton's method (L2-penalised), with its two cuts (`with_cuts`). Both classes
    weigh the same, and so does each group (the labelled set of one collection), however many questions
    each has."""
    labels = np.array([answerable for _, answerable in rows], dtype=float)
    if labels.sum() == 0 or labels.sum() == len(labels):
        raise AbstentionModelError("fitting needs both answerable and unanswerable questions")
    raw = np.array([[signals[f] for f in SIGNALS] for signals, _ in rows], dtype=float)
    mean, scale = raw.mean(axis=0), raw.std(axis=0)
    scale[scale == 0] = 1.0
    x = np.hstack([(raw - mean) / scale, np.ones((len(rows), 1))])
    group_of = np.array(groups if groups is not None else [""] * len(rows))
    weight = np.zeros(len(rows))
    cells = [(g, c) for g in dict.fromkeys(group_of.tolist()) for c in (0.0, 1.0)]
    for g, c in cells:
        cell = (group_of == g) & (labels == c)
        if cell.any():
            weight[cell] = len(rows) / (len(cells) * cell.sum())
    penalty = np.diag([L2] * len(SIGNALS) + [0.0])
    beta = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-np.clip(x @ beta, -50, 50)))
        gradient = x.T @ (weight * (p - labels)) + penalty @ beta
        hessian = (x * (weight * p * (1 - p))[:, None]).T @ x + penalty
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    model = AnswerModel(
        SIGNALS,
        tuple(mean.tolist()),
        tuple(scale.tolist()),
        tuple(beta[:-1].tolist()),
        float(beta[-1]),
        0.5,
        fitted_on,
        scored_with=scored_with,
    )
    return _with_best_cut(model, rows)


def _with_best_cut(model: AnswerModel, rows: Sequence[tuple[Mapping[str, float], bool]]) -> AnswerModel:
    scores = [(model.probability(signals), answerable) for signals, answerable in rows]
    return with_cuts(model, tradeoff(scores))


def with_cuts(
    model: AnswerModel,
    rows: list[Row],
    *,
    max_wrongly_answered: float = ANSWER_MAX_WRONG,
    suggest_reach: float = SUGGEST_REACH,
    reach_rows: list[Row] | None = None,
) -> AnswerModel:
    """The two cuts from a trade-off table. The answer cut is chosen for precision: the most questions
    answered right while at most `max_wrongly_answered` of the others are answered. The suggest cut is
    chosen for relevance: the strictest that still reaches `suggest_reach` of the answerable questions, read
    from `reach_rows` (the table over answerability) when given, else from `rows` (a suggestion to an
    unanswerable question is allowed: it says it is not sure)."""
    cut = most_answered_within(rows, max_wrongly_answered).threshold
    reach = reach_rows if reach_rows is not None else rows
    reaching = [r for r in reach if r.answered >= suggest_reach]
    suggest = max((r.threshold for r in reaching), default=min(r.threshold for r in reach))
    return replace(model, cut=cut, suggest_cut=min(suggest, cut))


@dataclass(frozen=True)
class Row:
    threshold: float
    answered: float  # share of answerable questions that would be answered
    wrongly_answered: float  # share of unanswerable questions that would be answered anyway


def rates_at(scores: list[tuple[float, bool]], threshold: float) -> Row:
    """The two rates when answering every question whose score is at least the threshold."""
    answerable = sum(1 for _, label in scores if label) or 1
    unanswerable = sum(1 for _, label in scores if not label) or 1
    answered = sum(1 for score, label in scores if label and score >= threshold)
    wrong = sum(1 for score, label in scores if not label and score >= threshold)
    return Row(threshold, answered / answerable, wrong / unanswerable)


def tradeoff(scores: list[tuple[float, bool]]) -> list[Row]:
    """For every distinct score as a threshold (answer when score ≥ threshold): the two rates."""
    return [rates_at(scores, threshold) for threshold in sorted({score for score, _ in scores})]


def roc_auc(scores: list[tuple[float, bool]]) -> float:
    """Probability that an answerable question outscores an unanswerable one (ties count half)."""
    positives = [s for s, label in scores if label]
    negatives = [s for s, label in scores if not label]
    if not positives or not negatives:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def cut_within_each(scores: Sequence[tuple[float, bool, str]], max_wrongly_answered: float) -> float:
    """The answer cut over (score, right, group) rows that answers the most right questions while answering
    at most `max_wrongly_answered` of each group's others: every collection the decision is fitted on holds
    the bound, not only their pool (the strictest cut when none does)."""
    by_group: dict[str, list[tuple[float, bool]]] = {}
    for score, right, group in scores:
        by_group.setdefault(group, []).append((score, right))
    pooled = [(score, right) for score, right, _ in scores]
    best: tuple[float, float] | None = None  # (share answered right, cut)
    for threshold in sorted({score for score, _ in pooled}):
        if all(rates_at(rows, threshold).wrongly_answered <= max_wrongly_answered for rows in by_group.values()):
            answered = rates_at(pooled, threshold).answered
            if best is None or answered >= best[0]:  # on a tie, the stricter cut
                best = (answered, threshold)
    return best[1] if best is not None else max(score for score, _ in pooled)


def most_answered_within(rows: list[Row], max_wrongly_answered: float) -> Row:
    """The threshold that answers the most answerable questions while answering at most this share of the
    unanswerable ones (the strictest threshold when none does)."""
    allowed = [r for r in rows if r.wrongly_answered <= max_wrongly_answered]
    if not allowed:
        return max(rows, key=lambda r: r.threshold)
    return max(allowed, key=lambda r: (r.answered, -r.wrongly_answered, r.threshold))


def read_model(path: Path) -> AnswerModel:
    try:
        return AnswerModel.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError) as exc:
        raise AbstentionModelError(f"{path}: {exc}") from None


@cache
def default_model() -> AnswerModel:
    """The shipped default (the decision for a collection nobody has calibrated), fitted on the packaged
    reranker's scores: with a cross-encoder of one's own in force, `fits_in_force` says it does not fit."""
    return read_model(DEFAULT_MODEL)


def fits_in_force(model: AnswerModel) -> bool:
    """Whether a decision was fitted on the scores of the cross-encoder in force (RERANK_MODEL)."""
    return model.scored_with == settings.RERANK_MODEL
