"""`manage.py calibrate | evaluate grounding | bench_chat` as an operator runs them."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from answering.decide.abstention import PROBABILITY, default_model, read_model
from conversations.models import AbstentionThreshold, Conversation
from conversations.records.turns import answer_model, warn_stale_decision
from knowledge.rerank import PACKAGED_RERANKER, resolve_reranker_dir

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_calibrate_fits_the_decision_prints_its_tradeoff_and_stores_it(helpcentre, tmp_path: Path):
    dataset = labelled_set(tmp_path / "set.jsonl")
    assert answer_model(helpcentre) == default_model()  # nobody has calibrated this collection yet
    dry = run("calibrate", "--dataset", str(dataset), "--dry-run", "--json", str(tmp_path / "signals.json"))
    assert "the decision in force (" in dry and "sentence_top" in dry and "dense_top" in dry
    assert "← answer cut" in dry and "← suggest cut" in dry
    assert "fitted probability: ROC AUC" in dry
    assert len(json.loads((tmp_path / "signals.json").read_text())) == 6
    assert not AbstentionThreshold.objects.exists()
    # Refitting from the written signals asks nothing again; a saved model can be judged on them.
    saved = run("calibrate", "--signals", str(tmp_path / "signals.json"), "--save-model", str(tmp_path / "m.json"))
    assert "Wrote the fitted decision" in saved and read_model(tmp_path / "m.json").fitted_on
    given = run("calibrate", "--signals", str(tmp_path / "signals.json"), "--decision", str(tmp_path / "m.json"))
    assert f"the decision given ({read_model(tmp_path / 'm.json').fitted_on}" in given
    AbstentionThreshold.objects.all().delete()
    old = [{k: v for k, v in r.items() if k != "right"} for r in json.loads((tmp_path / "signals.json").read_text())]
    (tmp_path / "old.json").write_text(json.dumps(old))
    with pytest.raises(CommandError, match="no 'right' field"):
        run("calibrate", "--signals", str(tmp_path / "old.json"))
    (tmp_path / "junk.json").write_text("[{}]")
    with pytest.raises(CommandError, match="not signals written by calibrate --json"):
        run("calibrate", "--signals", str(tmp_path / "junk.json"))

    stored = run("calibrate", "--dataset", str(dataset))
    chosen = AbstentionThreshold.objects.get()
    assert chosen.signal == PROBABILITY and f"{chosen.threshold:.3f}" in stored
    assert chosen.answered_rate >= chosen.wrongly_answered_rate
    model = answer_model(helpcentre)
    assert model.cut == chosen.threshold and model != default_model() and str(dataset) in model.fitted_on
    assert "already calibrated" in run("calibrate", "--dataset", str(dataset), "--if-missing")
    assert model.suggests_from <= model.cut
    with pytest.raises(CommandError, match="--max-wrong must be a share between 0 and 1"):
        run("calibrate", "--dataset", str(dataset), "--max-wrong", "5")
    with pytest.raises(CommandError, match="--suggest-reach must be a share between 0 and 1"):
        run("calibrate", "--dataset", str(dataset), "--suggest-reach", "-1")
    with pytest.raises(CommandError, match="No collection 'nowhere'"):
        run("calibrate", "--dataset", f"{dataset}@nowhere")

    # Another collection is never fitted on the demo shop's own questions by default.
    with pytest.raises(CommandError, match="--dataset FILE is needed for 'mine'"):
        run("calibrate", "--collection", "mine")

    (tmp_path / "broken.jsonl").write_text("{not json\n")
    with pytest.raises(CommandError, match=r"broken.jsonl:1"):
        run("calibrate", "--dataset", str(tmp_path / "broken.jsonl"))


def test_a_decision_decides_only_with_the_model_whose_scores_it_was_fitted_on(
    helpcentre, tmp_path: Path, settings, caplog
):
    dataset = labelled_set(tmp_path / "set.jsonl")
    signals = tmp_path / "signals.json"
    run("calibrate", "--dataset", str(dataset), "--json", str(signals))
    fitted = answer_model(helpcentre)
    assert fitted.scored_with == PACKAGED_RERANKER == default_model().scored_with and fitted != default_model()
    assert {r["scored_with"] for r in json.loads(signals.read_text())} == {PACKAGED_RERANKER}

    # A cross-encoder of one's own in force (here the same weights named as a folder): the stored decision
    # would read its scores on the wrong scale, so the shipped default decides, with a warning, until
    # calibrate fits one with it; signals scored by another model are not stored for it.
    settings.RERANK_MODEL = str(resolve_reranker_dir(PACKAGED_RERANKER))
    warn_stale_decision.cache_clear()  # said once a process: this test must see it said
    with caplog.at_level("WARNING"):
        assert answer_model(helpcentre) == default_model()
    # Logs pass through the personal-data masker, which may rewrite a path: the warning is told by its shape.
    assert "the shipped answer decision was fitted on" in caplog.text
    assert "until `manage.py calibrate --collection helpcentre` fits one" in caplog.text
    assert "Nothing stored" in run("calibrate", "--signals", str(signals), "--if-missing")
    with pytest.raises(CommandError, match="would never decide"):
        run("calibrate", "--signals", str(signals))
    assert "already calibrated" not in run("calibrate", "--dataset", str(dataset), "--if-missing")
    own = answer_model(helpcentre)
    assert own.scored_with == settings.RERANK_MODEL and AbstentionThreshold.objects.count() == 2
    assert "already calibrated" in run("calibrate", "--dataset", str(dataset), "--if-missing")
    # Back to the packaged reranker: its own decision, stored first, decides again.
    settings.RERANK_MODEL = PACKAGED_RERANKER
    assert answer_model(helpcentre) == fitted

    # Signals written before the model was recorded were scored by the packaged reranker.
    old = [{k: v for k, v in r.items() if k != "scored_with"} for r in json.loads(signals.read_text())]
    (tmp_path / "old.json").write_text(json.dumps(old))
    run("calibrate", "--signals", str(tmp_path / "old.json"), "--save-model", str(tmp_path / "m.json"))
    assert read_model(tmp_path / "m.json").scored_with == PACKAGED_RERANKER
    (tmp_path / "mixed.json").write_text(json.dumps([*old, {**old[0], "scored_with": "elsewhere"}]))
    with pytest.raises(CommandError, match="holds the scores of several models"):
        run("calibrate", "--signals", str(tmp_path / "mixed.json"))


def test_evaluate_kinds_asks_a_labelled_set_as_full_turns_and_counts_each_kind(helpcentre, tmp_path: Path):
    rows: list[dict[str, object]] = [
        {"question": "how long until my money back shows on my card?", "article": "refunds", "answerable": True},
        {"question": "what does error E-4012 mean?", "article": "payment-errors", "answerable": True},
        {"question": "can I pay with seashells?", "article": None, "answerable": False},
    ]
    dataset = tmp_path / "set.jsonl"
    dataset.write_text("".join(json.dumps({**row, "audience": "public"}) + "\n" for row in rows))
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\trefunds\t1\nq1\tpayment-errors\t1\n")
    out = run(
        "evaluate",
        "kinds",
        "--labelled",
        f"{dataset}@helpcentre",
        "--qrels",
        str(qrels),
        "--json",
        str(tmp_path / "k.json"),
    )
    summary = json.loads((tmp_path / "k.json").read_text())
    assert summary["questions"] == 3 and sum(summary["answerable"].values()) == 2
    assert summary["answerable_answered_or_suggested_relevant"] == 1.0, out
    assert summary["unanswerable"]["answered"] == 0 and "unanswerable_answered" in out
    # Without facts in the set, a reply reaches the customer when it cites a relevant article.
    assert summary["reached"] == 1.0 and summary["confident_wrong"] == 0 and "confident_wrong" in out
    assert Conversation.objects.filter(from_lab=True).count() == 3
    with pytest.raises(CommandError, match="needs --labelled"):
        run("evaluate", "kinds")


def test_kinds_count_an_answer_without_its_fact_as_confidently_wrong():
    from lab.kinds_evaluation import KindResult, KindsEvaluation

    evaluation = KindsEvaluation(
        [
            KindResult("a", True, "answered", True, True),  # right
            KindResult("b", True, "answered", True, False),  # the right article, not the fact
            KindResult("c", True, "suggested", True, False),  # a suggestion claims nothing
            KindResult("d", False, "answered", False, False),  # answered what the articles do not cover
        ]
    )
    summary = evaluation.summary()
    assert summary["confident_wrong"] == 2 and summary["confident_wrong_share"] == 0.5
    assert summary["reached"] == round(1 / 3, 3)


def test_evaluate_grounding_refuses_a_folder_without_evidence(tmp_path: Path):
    with pytest.raises(CommandError, match=r"evidence_train\.jsonl does not exist"):
        run("evaluate", "grounding", "--dataset", str(tmp_path), "--split", "train")


@pytest.mark.django_db(transaction=True)
def test_bench_chat_times_real_websocket_turns_and_cleans_up(helpcentre, tmp_path: Path):
    out = StringIO()
    report = tmp_path / "chat.json"
    call_command("bench_chat", "--clients", "2", "--limit", "4", "--json", str(report), stdout=out)
    figures = json.loads(report.read_text())
    assert figures["questions"] == 4 and sum(figures["decisions"].values()) == 4
    assert set(figures["latency"]) >= {"ack", "reply"}
    assert figures["latency"]["ack"]["p50_ms"] <= figures["latency"]["reply"]["p50_ms"]
    assert "4 questions from 2 clients" in out.getvalue()
    assert not Conversation.objects.exists()  # the benchmark's conversations are deleted


def test_bench_chat_refuses_nonsense_counts():
    with pytest.raises(CommandError, match="must be positive"):
        call_command("bench_chat", "--clients", "0")


def labelled_set(path: Path) -> Path:
    rows = [
        ("how long until my money back shows on my card?", True),
        ("what does error E-4012 mean?", True),
        ("can I return a lamp after 20 days?", True),
        ("do you sell gift wrapping in Mars colonies?", False),
        ("what is the name of your CEO's dog?", False),
        ("can I pay with seashells?", False),
    ]
    path.write_text("".join(json.dumps({"question": q, "audience": "public", "answerable": a}) + "\n" for q, a in rows))
    return path
