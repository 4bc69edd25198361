"""The answer evaluation's parts: reading a golden set with clear errors, the failure tree, the summary."""

import json
from pathlib import Path
from typing import Any

import pytest

from lab.answer_evaluation import GoldChunk, QuestionResult, _branch, read_golden_set, summarise
from lab.errors import GoldenSetError


def write(tmp_path: Path, *rows: object) -> Path:
    path = tmp_path / "golden.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


ANSWERABLE = {
    "id": "q1",
    "category": "plain",
    "audience": "public",
    "question": "How long do card refunds take?",
    "answerable": True,
    "gold": [{"article": "refunds", "heading_path": "Refunds › When the money arrives"}],
    "fact": "5 to 10 business days",
}


def test_a_golden_set_is_read_with_its_gold_and_facts(tmp_path):
    unanswerable = {"id": "q2", "category": "unanswerable", "question": "Gift wrap?", "answerable": False}
    follow_up = {**ANSWERABLE, "id": "q3", "category": "follow-up", "history": ["refund?"], "fact": ["a", "b"]}
    questions = read_golden_set(write(tmp_path, ANSWERABLE, unanswerable, follow_up))
    assert questions[0].gold == (GoldChunk("refunds", "Refunds › When the money arrives"),)
    assert questions[0].facts == ("5 to 10 business days",) and questions[1].facts == ()
    assert questions[2].history == ("refund?",) and questions[2].facts == ("a", "b")


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("{nope", "line 1|:1: not valid JSON"),
        ({**ANSWERABLE, "category": "easy"}, "category 'easy' is not one of"),
        ({**ANSWERABLE, "audience": "vip"}, "audience 'vip'"),
        ({**ANSWERABLE, "gold": []}, "needs gold chunks and a fact"),
        ({k: v for k, v in ANSWERABLE.items() if k != "question"}, "missing field 'question'"),
        ({**ANSWERABLE, "as_of": "March"}, "as_of 'March' is not a YYYY-MM-DD date"),
    ],
)
def test_a_bad_line_is_refused_with_its_place_and_reason(tmp_path, row, message):
    with pytest.raises(GoldenSetError, match=message):
        read_golden_set(write(tmp_path, row))


def test_duplicate_ids_are_refused(tmp_path):
    with pytest.raises(GoldenSetError, match="unique"):
        read_golden_set(write(tmp_path, ANSWERABLE, ANSWERABLE))


def test_a_gold_section_covers_its_subsections():
    gold = GoldChunk("refunds", "Refunds › When the money arrives")
    assert gold.matches("refunds", "Refunds › When the money arrives › Cards")
    assert not gold.matches("refunds", "Refunds › When the money arrives later")
    assert not gold.matches("returns", "Refunds › When the money arrives")


def result(**fields: Any) -> QuestionResult:
    base: dict[str, Any] = {"id": "q", "category": "plain", "answerable": True, "decision": "answered", "reply": ""}
    return QuestionResult(**(base | fields))


@pytest.mark.parametrize(
    ("fields", "branch"),
    [
        ({"in_index": False}, "coverage"),
        ({"in_index": True, "rank": None}, "retrieval"),
        ({"in_index": True, "rank": 2, "in_context": False}, "assembly"),
        ({"in_index": True, "rank": 2, "in_context": True, "decision": "abstained"}, "generation: abstained"),
        ({"in_index": True, "rank": 2, "in_context": True, "decision": "referred"}, "generation: referred"),
        ({"in_index": True, "rank": 2, "in_context": True, "correct": False}, "generation: wrong"),
        ({"in_index": True, "rank": 2, "in_context": True, "correct": True}, "ok"),
        ({"answerable": False, "decision": "abstained"}, "ok"),
        ({"answerable": False, "decision": "answered"}, "generation: wrong"),
    ],
)
def test_each_failure_lands_on_the_first_stage_that_failed(fields, branch):
    assert _branch(result(**fields)) == branch


def test_the_summary_counts_what_it_says():
    results = [
        result(rank=1, correct=True, shipped_claims=2, supported_shipped_claims=2, citations=2, valid_citations=2),
        result(rank=5, decision="abstained"),
        result(rank=None, decision="referred"),
        result(answerable=False, decision="abstained"),
        result(answerable=False, decision="answered", leaked=True, shipped_claims=1, supported_shipped_claims=1),
    ]
    for r in results:
        r.branch = _branch(r)
    summary = summarise(results)
    assert (summary["questions"], summary["answerable"], summary["unanswerable"]) == (5, 3, 2)
    assert summary["recall@3"] == round(1 / 3, 3) and summary["mrr"] == round((1 + 1 / 5) / 3, 3)
    assert summary["answer_correct"] == round(1 / 3, 3) and summary["abstention_correct"] == 0.5
    assert summary["audience_leaks"] == 1 and summary["unsupported_shipped"] == 0 and summary["faithfulness"] == 1.0
    assert summary["referral_rate"] == 0.2
