"""The experiments on the golden set and how their runs appear: stored, reported, shown in the admin."""

import json
from dataclasses import replace
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from knowledge.rerank import PACKAGED_RERANKER, default_reranker
from knowledge.retrieval import default_config
from lab.answer_evaluation import GoldChunk, read_golden_set
from lab.experiments import fusion_settings, golden_stage_figures
from lab.models import EvaluationRun
from tests.conversations.tiny_golden import write_golden

pytestmark = pytest.mark.django_db


def write_labelled(folder: Path, answerable: dict[str, str]) -> Path:
    """A labelled set of one answerable question (as given) and one the help centre does not cover."""
    path = folder / "labelled.jsonl"
    rows = [
        {"audience": "public", "answerable": True, **answerable},
        {"question": "do you sell tickets to Mars?", "audience": "public", "answerable": False},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_fusion_settings_cover_rrf_and_every_alpha_with_and_without_the_reranker():
    settings = dict(fusion_settings(default_config()))
    assert len(settings) == 20
    assert settings["rrf k=10"].fusion == "rrf" and settings["rrf k=10"].rrf_k == 10
    bm25_only = settings["weighted α=0.0"].weights
    assert bm25_only["bm25"] == 1.0 and bm25_only["dense"] == 0.0 and bm25_only["dense_secondary"] == 0.0
    assert settings["weighted α=1.0 + rerank"].rerank and not settings["weighted α=1.0"].rerank


def test_stage_figures_credit_only_questions_whose_answer_a_stage_ranks(helpcentre, embedder, tmp_path):
    card, mars = read_golden_set(write_golden(tmp_path))
    nowhere = replace(card, id="nowhere", gold=(GoldChunk("refunds", "Refunds › No such section"),))
    figures = golden_stage_figures(
        [card, mars, nowhere], helpcentre, config=default_config(), embedder=embedder, reranker=default_reranker()
    )

    assert set(figures) == {"bm25", "dense", "dense_secondary", "fuzzy", "fused", "fused + rerank"}
    # Two answerable questions (the unanswerable one is not counted); only the real section can be found.
    assert figures["fused"]["recall@20"] == 0.5 and figures["fused + rerank"]["recall@3"] == 0.5
    assert figures["dense"]["recall@20"] == 0.5
    assert 0 < figures["fused + rerank"]["ndcg@10"] <= 0.5


def test_the_threshold_experiment_is_stored_reported_and_shown_in_the_admin(helpcentre, tmp_path, admin_client):
    golden = write_golden(tmp_path)
    labelled = write_labelled(tmp_path, {"question": "when does a card refund arrive?"})
    out = StringIO()
    call_command(
        "experiment",
        "threshold",
        "--dataset",
        str(golden),
        "--labelled",
        f"{labelled}@helpcentre",
        "--report",
        str(tmp_path / "r"),
        stdout=out,
    )

    run = EvaluationRun.objects.get(kind="threshold")
    assert set(run.plots) == {"threshold"} and run.finished_at
    sets = {r["set"] for r in run.figures["rows"]}
    assert sets == {"golden (golden.jsonl) on helpcentre", "labelled.jsonl on helpcentre"}
    # On each set the answerable question is more likely answered than the unanswerable one: a cut separates them.
    for name in sets:
        rows = [r for r in run.figures["rows"] if r["set"] == name]
        assert any(r["answerable_at_or_above"] == 1.0 and r["unanswerable_at_or_above"] == 0.0 for r in rows)
        # Each of the two cuts in force is marked once per set, the suggest cut at or below the answer cut.
        marked = {kind: [r["cut"] for r in rows if r[kind]] for kind in ("answer_cut", "suggest_cut")}
        assert len(marked["answer_cut"]) == len(marked["suggest_cut"]) == 1
        assert marked["suggest_cut"][0] <= marked["answer_cut"][0]
    page = (tmp_path / "r" / "index.html").read_text()
    assert "answer cut" in page and "suggest cut" in page and "ROC AUC" in page

    listing = admin_client.get("/admin/lab/evaluationrun/").content.decode()
    assert 'src="data:image/png;base64,' in listing
    with pytest.raises(CommandError, match="No collection 'elsewhere'"):
        call_command("experiment", "threshold", "--dataset", str(golden), "--labelled", f"{labelled}@elsewhere")


def test_experiment_refuses_a_missing_collection(tmp_path):
    with pytest.raises(CommandError, match="No collection 'nope'"):
        call_command("experiment", "threshold", "--collection", "nope")


def test_the_model_experiment_reads_each_set_with_each_model_and_counts_replies_that_state_the_fact(
    helpcentre, tmp_path
):
    golden = write_golden(tmp_path)
    labelled = write_labelled(
        tmp_path,
        {"question": "How long until a card refund shows on my statement?", "answer": "a fact no article states"},
    )
    out = StringIO()
    call_command(
        "experiment",
        "models",
        "--dataset",
        str(golden),
        "--labelled",
        f"{labelled}@helpcentre",
        "--model",
        PACKAGED_RERANKER,
        stdout=out,
    )

    rows = {r["set"]: r for r in EvaluationRun.objects.get(kind="models").figures["rows"]}
    assert set(rows) == {"golden (golden.jsonl)", "labelled.jsonl"}
    assert all(r["model"] == PACKAGED_RERANKER and r["answerable"] == 1 for r in rows.values())
    # The golden question's reply states "5 to 10 business days" and scores above the Mars question; the same
    # question labelled with a fact no article states is not read right, and the AUC is then undefined.
    assert rows["golden (golden.jsonl)"]["read_right"] == 1 and rows["golden (golden.jsonl)"]["sentence_top_auc"] == 1
    assert rows["labelled.jsonl"]["read_right"] == 0 and rows["labelled.jsonl"]["sentence_top_auc"] is None
    with pytest.raises(CommandError, match="--model: Reranker 'nowhere'"):
        call_command("experiment", "models", "--dataset", str(golden), "--model", "nowhere")
