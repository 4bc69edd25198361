"""Fusion fitted to a collection: the stage weights and rerank blend that rank its own questions best.

Fixed weights chosen on one corpus cost another: the help centre's 0.4 BM25 suits its keyword questions,
and costs StackFAQ's paraphrases 0.02 nDCG@10 against dense retrieval alone. So each collection can
have its own, fitted on its labelled questions. Every stage runs once per question and the reranker reads
every candidate any setting would shortlist once; each setting of the grid is then pure arithmetic over
those readings, so a grid of hundreds of settings costs little more than one evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import product
from math import comb
from types import MappingProxyType

from knowledge.embeddings import Embedder
from knowledge.fusion import Fused, blend_rerank, fuse
from knowledge.fuzzy import corrected, find_typos
from knowledge.models import Chunk, Collection
from knowledge.rerank import CrossEncoder, read_passages
from knowledge.retrieval import RetrievalConfig, prepare_query, run_stages, shortlist_size
from knowledge.scope import Scope
from knowledge.sparse import StageHit
from knowledge.stages import Stage
from lab import metrics
from lab.retrieval_evaluation import Query

# Weights of BM25, the first and the second dense model in tenths summing to one, with fuzzy at 0 or 0.1.
WEIGHT_STEP = 10
BLENDS = (0.0, 0.25, 0.5, 0.75, 1.0)
FUZZY_WEIGHTS = (0.0, 0.1)
# A fitted setting replaces the default only when it ranks the questions better by more than this on the
# whole, and question by question significantly (sign test), see fit().
MIN_GAIN = 0.002
MAX_P = 0.05


@dataclass(frozen=True)
class Setting:
    weights: Mapping[str, float]
    blend: float

    @property
    def name(self) -> str:
        return " ".join(f"{stage}×{weight:g}" for stage, weight in self.weights.items()) + f" blend {self.blend:g}"

    def config(self, base: RetrievalConfig) -> RetrievalConfig:
        return replace(base, fusion="weighted", weights=MappingProxyType(dict(self.weights)), rerank_blend=self.blend)


@dataclass(frozen=True)
class Observation:
    """What the stages and the reranker made of one question: enough to rank it under any setting."""

    rankings: Mapping[str, list[StageHit]]
    rerank_scores: Mapping[int, float]
    relevant: Mapping[str, int]


@dataclass(frozen=True)
class Fit:
    chosen: Setting
    default: Setting
    best: Setting  # the grid's best on these questions, chosen or not
    ndcg: Mapping[str, float]  # by setting name, every setting of the grid
    questions: int
    wins: int  # questions the best ranks better than the default
    losses: int  # and worse
    p_value: float

    @property
    def gain(self) -> float:
        return self.ndcg[self.chosen.name] - self.ndcg[self.default.name]


def grid(stages: Sequence[str]) -> list[Setting]:
    """Every weighting of the dense and BM25 stages in tenths (fuzzy 0 or 0.1), at every blend."""
    ranked = [s for s in (Stage.BM25, Stage.DENSE, Stage.DENSE_SECONDARY) if s in stages]
    weightings = [parts for parts in product(range(WEIGHT_STEP + 1), repeat=len(ranked)) if sum(parts) == WEIGHT_STEP]
    fuzzy = FUZZY_WEIGHTS if Stage.FUZZY in stages else (0.0,)
    # Every stage named, zeros too: fusion weighs a stage it is given no weight for as 1.
    return [
        Setting(
            MappingProxyType(
                {
                    **{s: p / WEIGHT_STEP for s, p in zip(ranked, parts, strict=True)},
                    **({Stage.FUZZY: f} if Stage.FUZZY in stages else {}),
                }
            ),
            blend,
        )
        for parts in weightings
        for f in fuzzy
        for blend in BLENDS
    ]


def setting_of(config: RetrievalConfig) -> Setting:
    return Setting(MappingProxyType(dict(config.weights)), config.rerank_blend)


def reranked(fused: list[Fused], observation: Observation, config: RetrievalConfig) -> list[Fused]:
    """The fused list as search() would rerank it, from the cached readings."""
    size = shortlist_size(fused, observation.rankings, config)
    shortlist = fused[:size]
    scores = [observation.rerank_scores[f.chunk_id] for f in shortlist]
    return blend_rerank(shortlist, scores, blend=config.rerank_blend) + fused[size:] if shortlist else fused


def _fused(observation: Observation, config: RetrievalConfig) -> list[Fused]:
    chosen = {stage: hits for stage, hits in observation.rankings.items() if stage in config.weights}
    return fuse(chosen, method="weighted", depth=config.depth, weights=config.weights)


def observe(
    collection: Collection,
    queries: Sequence[Query],
    *,
    embedder: Embedder,
    reranker: CrossEncoder,
    base: RetrievalConfig,
    settings: Sequence[Setting],
    progress: Callable[[int, int], None] | None = None,
) -> list[Observation]:
    """Each question's stage rankings and the reranker's reading of every chunk that any setting would
    shortlist, read together as search() reads a shortlist (each statement also after its predecessor)."""
    scope = Scope(collection.pk, "staff")
    stages = tuple(dict.fromkeys(stage for s in settings for stage in s.weights))
    # Settings that differ only in their blend shortlist the same chunks.
    weightings = list({tuple(sorted(s.weights.items())): s for s in settings}.values())
    observations = []
    for done, query in enumerate(queries, start=1):
        prepared = prepare_query(query.text, collection)
        typos = find_typos(collection.pk, prepared)
        rankings = run_stages(
            scope,
            prepared,
            collection=collection,
            embedder=embedder,
            config=replace(base, stages=stages),
            k=base.depth,
            typos=typos,
        )
        wanted: dict[int, None] = {}
        for setting in weightings:
            config = setting.config(base)
            fused = _fused(Observation(rankings, {}, query.relevant), config)
            wanted.update(dict.fromkeys(f.chunk_id for f in fused[: shortlist_size(fused, rankings, config)]))
        rows = {
            pk: (path, text)
            for pk, path, text in Chunk.objects.filter(pk__in=list(wanted)).values_list("id", "heading_path", "text")
        }
        ids = list(wanted)
        passages = [rows[i] for i in ids]
        read = read_passages(reranker, corrected(prepared, typos, [t for _, t in passages]), passages) if ids else []
        observations.append(Observation(rankings, {i: r.score for i, r in zip(ids, read, strict=True)}, query.relevant))
        if progress:
            progress(done, len(queries))
    return observations


def question_ndcg(
    observation: Observation, setting: Setting, base: RetrievalConfig, document_of: dict[int, str]
) -> float:
    config = setting.config(base)
    fused = _fused(observation, config)
    ranked = reranked(fused, observation, config) if base.rerank else fused
    documents = metrics.roll_up([f.chunk_id for f in ranked], document_of)
    return metrics.ndcg_at(documents, dict(observation.relevant), 10)


def ndcg_by_setting(
    observations: Sequence[Observation], settings: Sequence[Setting], base: RetrievalConfig, document_of: dict[int, str]
) -> dict[str, float]:
    unique = list({s.name: s for s in settings}.values())  # the default is often a point of the grid
    return {
        s.name: round(sum(question_ndcg(o, s, base, document_of) for o in observations) / max(1, len(observations)), 4)
        for s in unique
    }


def sign_test(wins: int, losses: int) -> float:
    """One-sided p-value that a setting winning `wins` questions and losing `losses` (ties left out) is
    no better than the other: P(X ≥ wins) for X ~ Binomial(wins + losses, ½)."""
    n = wins + losses
    return sum(comb(n, k) for k in range(wins, n + 1)) / 2**n if n else 1.0


def fit(observations: Sequence[Observation], base: RetrievalConfig, document_of: dict[int, str]) -> Fit:
    """The grid's best setting on these questions. It replaces the default only when it is better on the
    whole (by MIN_GAIN nDCG@10) and question by question: more questions ranked better than worse, by a
    sign test at MAX_P. A grid of hundreds of settings always has one that is a little better on the
    questions it was chosen on; most such gains come from a handful of questions and do not carry over."""
    default = setting_of(base)
    settings = [*grid(base.stages), default]
    ndcg = ndcg_by_setting(observations, settings, base, document_of)
    best = max(settings, key=lambda s: ndcg[s.name])
    differences = [
        question_ndcg(o, best, base, document_of) - question_ndcg(o, default, base, document_of) for o in observations
    ]
    wins, losses = sum(d > 0 for d in differences), sum(d < 0 for d in differences)
    p_value = sign_test(wins, losses)
    better = ndcg[best.name] - ndcg[default.name] > MIN_GAIN and p_value < MAX_P
    return Fit(best if better else default, default, best, ndcg, len(observations), wins, losses, p_value)
