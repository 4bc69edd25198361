"""Evaluation runs: stored with their settings, figures and plots; an interrupted run resumes without redoing
finished questions; the report is a page people can open."""

from io import StringIO
from pathlib import Path
from typing import Any, cast

import pytest
from django.core.management import call_command

from answering.services import TurnServices
from lab.answer_evaluation import QuestionResult, evaluate_answers, read_golden_set
from lab.evaluation_runs import close_run, finished_results, open_run, save_result
from lab.models import EvaluationRun
from tests.conversations.tiny_golden import write_golden

pytestmark = pytest.mark.django_db


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    return write_golden(tmp_path)


def test_resume_reopens_the_unfinished_run_with_the_same_settings(helpcentre):
    run = open_run("answers", "golden.jsonl", helpcentre, resume=True)
    assert open_run("answers", "golden.jsonl", helpcentre, resume=True) == run
    assert open_run("answers", "other.jsonl", helpcentre, resume=True) != run
    assert open_run("answers", "golden.jsonl", helpcentre, resume=False) != run
    close_run(run, {"recall@3": 1.0}, {})
    assert open_run("answers", "golden.jsonl", helpcentre, resume=True) != run


def test_finished_questions_are_not_redone(golden):
    questions = read_golden_set(golden)
    done = {q.id: QuestionResult(q.id, q.category, q.answerable, "abstained", "…") for q in questions}
    seen: list[tuple[str, bool]] = []
    # Services that would fail if a turn ran: every question comes from the finished results.
    evaluation = evaluate_answers(
        questions,
        cast(Any, None),
        cast(TurnServices, None),
        finished=done,
        progress=lambda r, new: seen.append((r.id, new)),
    )
    assert seen == [("card-days", False), ("mars", False)]
    assert evaluation.summary["abstention_correct"] == 1.0


def test_the_command_stores_the_run_writes_the_report_and_resumes(helpcentre, golden, tmp_path):
    # An interrupted run that had finished the first question.
    interrupted = open_run("answers", str(golden), helpcentre, resume=False)
    save_result(interrupted, QuestionResult("card-days", "plain", True, "answered", "5 to 10 business days", rank=1))
    err, out = StringIO(), StringIO()
    call_command(
        "evaluate",
        "answers",
        "--dataset",
        str(golden),
        "--resume",
        "--report",
        str(tmp_path / "r"),
        stdout=out,
        stderr=err,
    )

    assert f"Resuming run {interrupted.pk}: 1 questions already done" in err.getvalue()
    run = EvaluationRun.objects.get(pk=interrupted.pk)
    assert run.finished_at is not None and set(finished_results(run)) == {"card-days", "mars"}
    assert run.figures["questions"] == 2
    assert set(run.plots) == {"recall_at_k", "recall_by_stage", "by_category", "failure_tree"}
    assert set(run.figures["stages"]) == {"bm25", "dense", "dense_secondary", "fuzzy", "fused", "fused + rerank"}
    assert run.settings["generator"] == "extractive" and "all-MiniLM-L6-v2" in run.fingerprint
    page = (tmp_path / "r" / "index.html").read_text()
    assert (
        "Failure tree" in page
        and "Retrieval by stage" in page
        and "<img src='recall_at_k.png'" in page
        and (tmp_path / "r" / "recall_at_k.png").stat().st_size > 1000
    )
