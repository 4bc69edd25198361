"""Calibration: the maths of the trade-off and reading the labelled set."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from answering.decide.abstention import (
    AnswerModel,
    cut_within_each,
    most_answered_within,
    roc_auc,
    tradeoff,
    with_cuts,
)
from conversations.models import AbstentionThreshold
from lab.calibration import SAMPLE_SETS, read_calibration_set
from lab.errors import CalibrationError


def test_calibration_maths():
    scores = [(5.0, True), (3.0, True), (1.0, False), (4.0, False), (-2.0, False)]
    assert roc_auc(scores) == pytest.approx(5 / 6)
    rows = tradeoff(scores)
    assert [(r.threshold, r.answered, r.wrongly_answered) for r in rows][-2:] == [(4.0, 0.5, 1 / 3), (5.0, 0.5, 0.0)]
    assert most_answered_within(rows, 0.0).threshold == 5.0  # no unanswerable one answered: half the answerable
    assert most_answered_within(rows, 0.4).threshold == 3.0


def test_the_answer_cut_is_chosen_for_precision_and_the_suggest_cut_for_reach():
    scores = [(0.9, True), (0.8, True), (0.6, False), (0.5, True), (0.3, False), (0.1, False)]
    model = AnswerModel(("coverage",), (0.0,), (1.0,), (1.0,), 0.0, 0.5)
    fitted = with_cuts(model, tradeoff(scores), max_wrongly_answered=0.0, suggest_reach=1.0)
    # Answer only above every unanswerable question; suggest down to the last answerable one.
    assert (fitted.cut, fitted.suggest_cut) == (0.8, 0.5)
    assert [fitted.kind(p) for p in (0.85, 0.6, 0.2)] == ["answer", "suggest", "abstain"]
    # A decision stored before suggestions existed suggests nothing.
    assert AnswerModel.from_json({**model.as_json(), "suggest_cut": None}).kind(0.4) == "abstain"


def test_the_answer_cut_holds_the_bound_on_each_collection_not_only_on_their_pool():
    # Collection a: its wrong reply scores 0.7; collection b: its wrong reply scores 0.4.
    scores = [
        (0.9, True, "a"), (0.7, False, "a"), (0.6, True, "a"), (0.1, False, "a"),
        (0.8, True, "b"), (0.5, True, "b"), (0.4, False, "b"), (0.2, False, "b"),
    ]  # fmt: skip
    pooled = most_answered_within(tradeoff([(s, r) for s, r, _ in scores]), 0.25).threshold
    assert pooled == 0.5  # one of four others answered in the pool: half of collection a's
    assert cut_within_each(scores, 0.25) == 0.8  # a at most a quarter of each collection's others
    assert cut_within_each(scores, 0.5) == 0.5


def test_the_calibration_set_is_checked_line_by_line(tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"question": "ok?", "audience": "public", "answerable": true}\n{"question": "x", "audience": "vip", "answerable": false}\n'
    )
    with pytest.raises(CalibrationError, match=r"bad.jsonl:2: unknown audience 'vip'"):
        read_calibration_set(bad)
    shipped = read_calibration_set(Path("lab/sample/calibration.jsonl"))
    assert sum(q.answerable for q in shipped) >= 70 and sum(not q.answerable for q in shipped) >= 50


SHIPPED_SIGNALS = Path(settings.BASE_DIR) / "conversations" / "sample" / "helpcentre_signals.json"


def test_the_shipped_signals_are_the_sample_sets_questions():
    """`make run` fits the sample help centre's decision from these instead of asking ~270 questions: they
    must be one record per question of today's sample sets, in their order, with the same labels."""
    records = json.loads(SHIPPED_SIGNALS.read_text())
    expected = [
        (str(path.relative_to(settings.BASE_DIR)), question.answerable)
        for path in SAMPLE_SETS
        for question in read_calibration_set(path)
    ]
    assert [(r["dataset"], r["answerable"]) for r in records] == expected
    assert {r["collection"] for r in records} == {"helpcentre"}


@pytest.mark.django_db
def test_make_run_fits_the_decision_from_the_shipped_signals_once(helpcentre):
    out = StringIO()
    call_command(
        "calibrate", "--collection", "helpcentre", "--if-missing", "--signals", str(SHIPPED_SIGNALS), stdout=out
    )
    stored = AbstentionThreshold.objects.get(collection=helpcentre)
    assert stored.dataset.startswith("lab/sample/calibration.jsonl@helpcentre")
    assert 0 < stored.threshold < 1 and stored.model["suggest_cut"] < stored.threshold
    call_command(
        "calibrate", "--collection", "helpcentre", "--if-missing", "--signals", str(SHIPPED_SIGNALS), stdout=out
    )
    assert AbstentionThreshold.objects.filter(collection=helpcentre).count() == 1
    assert "already calibrated" in out.getvalue()
