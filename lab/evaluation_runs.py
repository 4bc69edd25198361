"""Evaluation runs kept in the database: what was run, with which settings and models, each question's
result as soon as it is known (so an interrupted run resumes), the figures and the plots."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.conf import settings
from django.utils import timezone

from answering.providers.registry import configured_generator
from conversations.records.turns import answer_model
from knowledge.models import Collection
from knowledge.retrieval import default_config
from lab.answer_evaluation import BRANCHES, CATEGORIES, KINDS, AnswerEvaluation, QuestionResult, recall_at
from lab.models import EvaluationResult, EvaluationRun
from lab.report import Section, bar_chart, encode, line_chart

RECALL_DEPTHS = range(1, 7)


def snapshot_settings(collection: Collection) -> dict[str, Any]:
    """The settings a result depends on: two runs with the same snapshot measure the same system."""
    retrieval = default_config(collection)
    return {
        "generator": configured_generator(),
        "retrieval_stages": list(settings.RETRIEVAL_STAGES),
        "fusion": retrieval.fusion,
        "weights": dict(retrieval.weights),
        "rerank_blend": retrieval.rerank_blend,
        "rerank": settings.RERANK_ENABLED,
        "answer_passages": settings.ANSWER_PASSAGES,
        "context_budget_tokens": settings.CONTEXT_BUDGET_TOKENS,
        "abstention": _decision(collection),
        "grounding": [settings.GROUNDING_SIMILARITY_THRESHOLD, settings.GROUNDING_SUPPORT_THRESHOLD],
    }


def _decision(collection: Collection) -> dict[str, Any]:
    model = answer_model(collection)
    return {"cut": round(model.cut, 4), "weights": [round(w, 4) for w in model.weights], "fitted_on": model.fitted_on}


def fingerprint(collection: Collection) -> str:
    spaces = [collection.embedding_space, collection.secondary_space]
    return " + ".join(f"{s.model_name}@{s.weights_sha256[:12]}" for s in spaces if s is not None)


def open_run(kind: str, dataset: str, collection: Collection, *, resume: bool) -> EvaluationRun:
    """A new run, or with ``resume`` the newest unfinished one of the same kind, dataset, settings and models."""
    snapshot, models = snapshot_settings(collection), fingerprint(collection)
    if resume:
        unfinished = EvaluationRun.objects.filter(
            kind=kind, dataset=dataset, fingerprint=models, settings=snapshot, finished_at__isnull=True
        ).first()
        if unfinished is not None:
            return unfinished
    return EvaluationRun.objects.create(kind=kind, dataset=dataset, settings=snapshot, fingerprint=models)


def finished_results(run: EvaluationRun) -> dict[str, QuestionResult]:
    return {r.question_id: QuestionResult(**r.result) for r in run.results.all()}


def save_result(run: EvaluationRun, result: QuestionResult) -> None:
    EvaluationResult.objects.update_or_create(run=run, question_id=result.id, defaults={"result": asdict(result)})


def close_run(run: EvaluationRun, figures: dict[str, Any], plots: dict[str, bytes]) -> None:
    run.figures, run.plots, run.finished_at = figures, encode(plots), timezone.now()
    run.save(update_fields=["figures", "plots", "finished_at"])


def stages_report(stages: dict[str, dict[str, float]]) -> tuple[Section, dict[str, bytes]]:
    """Each retrieval stage's figures (from `golden_stage_figures`) as a table and recall@k curves."""
    cutoffs = [int(key.split("@")[1]) for key in next(iter(stages.values())) if key.startswith("recall@")]
    plot = line_chart(
        cutoffs,
        {stage: [figures[f"recall@{k}"] for k in cutoffs] for stage, figures in stages.items()},
        title="Answer among each stage's first k chunks",
        xlabel="k",
        ylabel="share of answerable questions",
    )
    section = Section(
        "Retrieval by stage",
        "Each stage alone, their fusion, and the fusion reranked by the cross-encoder (measured whether or not "
        "the reranker is on), every question searched as a turn searches it. One relevant item per question: "
        "its answer, i.e. any chunk of a gold section.",
        columns=["stage", "nDCG@10", "MRR@10", *(f"recall@{k}" for k in cutoffs)],
        rows=[
            [stage, figures["ndcg@10"], figures["mrr@10"], *(figures[f"recall@{k}"] for k in cutoffs)]
            for stage, figures in stages.items()
        ],
        plots=["recall_by_stage"],
    )
    return section, {"recall_by_stage": plot}


def answers_report(evaluation: AnswerEvaluation) -> tuple[list[Section], dict[str, bytes]]:
    summary, results = evaluation.summary, evaluation.results
    by_category = summary["by_category"]
    categories = [c for c in CATEGORIES if c in by_category]
    tree = summary["failure_tree"]
    plots = {
        "recall_at_k": line_chart(
            list(RECALL_DEPTHS),
            {"recall@k": [recall_at(results, k) for k in RECALL_DEPTHS]},
            title="Gold chunk among the turn's first k candidates",
            xlabel="k",
            ylabel="share of answerable questions",
        ),
        "by_category": bar_chart(
            categories,
            {
                "right": [
                    summary["by_category"][c]["correct"] / summary["by_category"][c]["questions"] for c in categories
                ]
            },
            title="Right answers (or right abstentions) by category",
            ylabel="share",
        ),
        "failure_tree": bar_chart(
            ["ok", *BRANCHES],
            {"questions": [tree.get(b, 0) for b in ("ok", *BRANCHES)]},
            title="Where each question went wrong (first failing stage)",
            ylabel="questions",
        ),
    }
    headline = [k for k in summary if not isinstance(summary[k], dict)]
    sections = [
        Section(
            "Figures", columns=["measure", "value"], rows=[[k, summary[k]] for k in headline], plots=["recall_at_k"]
        ),
        Section(
            "By category",
            "right: answered with the fact (or, unanswerable, not answered); reached: the fact in an answer or in a "
            "suggestion's quote (unanswerable: not answered); then how many got each kind of reply.",
            columns=["category", "questions", "right", "reached", *KINDS],
            rows=[[c, *(by_category[c][k] for k in ("questions", "correct", "reached", *KINDS))] for c in categories],
            plots=["by_category"],
        ),
        Section(
            "Kinds of reply",
            columns=["questions", *KINDS],
            rows=[[group, *(summary["kinds"][group][k] for k in KINDS)] for group in ("answerable", "unanswerable")],
        ),
        Section(
            "Failure tree",
            "coverage: the gold chunk is not in the index; retrieval: not among the turn's candidates; assembly: "
            "retrieved but not kept in the context; generation: in the context but not answered, or answered wrong.",
            columns=["branch", "questions"],
            rows=[[b, tree.get(b, 0)] for b in ("ok", *BRANCHES)],
            plots=["failure_tree"],
        ),
        Section(
            "Questions that went wrong",
            "unit: the kind and text of each whole unit the reply quoted.",
            columns=["id", "category", "branch", "decision", "rank", "unit", "reply"],
            rows=[
                [
                    r.id,
                    r.category,
                    r.branch,
                    r.decision,
                    r.rank or "–",
                    " | ".join(f"{u.get('kind')}: {u.get('text')}" for u in r.units)[:300] or "–",
                    r.reply[:160],
                ]
                for r in results
                if r.branch != "ok"
            ],
        ),
        Section(
            "The reader's view of the questions that went wrong",
            "The probability that the evidence answers (the turn answers at or above the cut), the signals "
            "behind it, and the statements the reader weighed: score, passage, and ✓ for those it said.",
            columns=["id", "probability", "signals", "statements"],
            rows=[
                [r.id, r.signals.get("answer_probability", "–"), _signals_text(r.signals), _reading_text(r.reading)]
                for r in results
                if r.branch != "ok"
            ],
        ),
    ]
    return sections, plots


def _signals_text(signals: dict[str, float]) -> str:
    return ", ".join(f"{name} {value:.2f}" for name, value in signals.items() if name != "answer_probability")


def _reading_text(reading: list[dict[str, Any]]) -> str:
    return " | ".join(
        f"{'✓ ' if s['chosen'] else ''}{s['score']:.2f} [{s['passage']}] {str(s['text'])[:90]}" for s in reading[:5]
    )
