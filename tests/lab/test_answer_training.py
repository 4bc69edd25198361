"""The answer model's data and training plumbing: the splits keep pages apart and hold no reserved set, the
shipped reranker turns back into float weights that score as it does, and one training command on a tiny
random model trains, exports int8 ONNX with its SHA-256, and measures it beside the reranker. The real
training (lab.answer_training without --tiny-random) never runs here: it takes half an hour."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from knowledge.rerank import PACKAGED_RERANKER, CrossEncoder, resolve_reranker_dir
from lab.answer_sources import OUT as ANSWER_DATA
from lab.answer_sources import SOURCE_NAMES, split_file, split_of
from lab.answer_training import (
    MODEL_FILE,
    Group,
    load_groups,
    load_split,
    main,
    pair_logits,
    statement_metrics,
    student_of_reranker,
)
from lab.errors import AnswerDataError
from lab.jsonl import json_lines

SAMPLE = Path(__file__).resolve().parents[2] / "lab" / "sample"


def test_the_splits_share_no_page_and_every_question_has_an_answer_among_its_statements():
    pages = {}
    for split in ("train", "dev", "test"):
        groups = load_split(ANSWER_DATA, split)
        assert groups, split
        pages[split] = {g.page for g in groups}
        assert all(split_of(page) == split for page in pages[split])
        for group in groups:
            assert group.answers and max(group.answers) < len(group.statements)
            assert len(group.statements) > len(group.answers)  # on-topic statements that do not answer
    assert not pages["train"] & pages["dev"] and not pages["train"] & pages["test"] and not pages["dev"] & pages["test"]


def test_no_reserved_question_is_trained_on():
    trained = {g.question.casefold().strip() for g in load_split(ANSWER_DATA, "train")}
    for reserved in ("golden.jsonl", "calibration.jsonl", "calibration_conversational.jsonl"):
        asked = {str(row["question"]).casefold().strip() for row, _ in json_lines(SAMPLE / reserved, ValueError)}
        assert not asked & trained, reserved


def test_the_reranker_turns_back_into_float_weights_that_score_as_it_does():
    import torch
    from tokenizers import Tokenizer

    folder = resolve_reranker_dir(PACKAGED_RERANKER)
    model = student_of_reranker(folder, list(range(12))).eval()
    question = "how long does a card refund take"
    passages = [
        "Refunds: Card refunds take 5 to 10 business days.",
        "Refunds: PayPal refunds arrive within 2 business days.",
        "Shipping: We ship to the UK and the EU.",
        "Returns: Pack the item in its original box.",
    ]
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_padding()
    with torch.no_grad():
        logits = pair_logits(model, tokenizer.encode_batch([(question, p) for p in passages]))
    shipped = CrossEncoder(folder).score(question, passages)
    assert np.corrcoef(logits.numpy(), shipped)[0, 1] > 0.99
    assert int(np.argmax(logits.numpy())) == int(np.argmax(shipped)) == 0


def _write_split(folder: Path, name: str, pages: list[str]) -> None:
    rows = [
        {
            "source": "example/set:file",
            "page": page,
            "question": f"when does {page} open",
            "statements": [[page, f"{page} opens at 9."], [page, f"{page} has parking."], [page, "Dogs are welcome."]],
            "answers": [0],
        }
        for page in pages
    ]
    # Each source's file of the split: the pages dealt out in turn (a source may have none).
    for offset, source in enumerate(SOURCE_NAMES):
        dealt = rows[offset :: len(SOURCE_NAMES)]
        (folder / split_file(name, source)).write_text("".join(json.dumps(r) + "\n" for r in dealt))


def test_one_command_trains_exports_int8_and_measures_a_tiny_random_model(tmp_path: Path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    for split, pages in (("train", ["museum", "cafe", "pool", "zoo"]), ("dev", ["park"]), ("test", ["library"])):
        _write_split(data, split, pages)
    out = tmp_path / "model"
    main(["--out", str(out), "--data", str(data), "--tiny-random"])

    digest = hashlib.sha256((out / MODEL_FILE).read_bytes()).hexdigest()
    assert (out / f"{MODEL_FILE}.sha256").read_text().split()[0] == digest
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["sha256"] == digest and metrics["train_groups"] == 4
    assert -1.0 <= metrics["export_pearson"] <= 1.0
    for split in ("dev", "test"):
        for model in ("answer_model", "reranker"):
            assert metrics[split][model]["all"]["questions"] == 1
    # The export is what serving loads: the reranker's reader, inputs and output.
    scores = CrossEncoder(out).score("when does the park open", ["park: park opens at 9.", "park: Dogs are welcome."])
    assert scores.shape == (2,) and np.isfinite(scores).all()
    assert '"sha256"' in capsys.readouterr().out


def test_statement_metrics_count_the_top_statement_and_pool_scores_across_questions():
    class Scores:  # a statement's score is the number it ends with
        def score(self, question: str, passages: list[str]) -> np.ndarray:
            return np.array([float(p.split()[-1]) for p in passages])

    groups = [
        Group("a/set", "p1", "q1", ("x: 3", "x: 1"), frozenset({0})),  # the answer on top
        Group("b/set", "p2", "q2", ("y: 2", "y: 0.5"), frozenset({1})),  # the answer second
    ]
    metrics = statement_metrics(Scores(), groups)  # type: ignore[arg-type]
    assert metrics["all"] == {"questions": 2, "precision_at_1": 0.5, "mrr": 0.75, "auc": 0.5}
    assert metrics["a/set"]["precision_at_1"] == 1.0 and metrics["b/set"]["mrr"] == 0.5


def test_a_malformed_row_is_refused_with_its_line(tmp_path: Path):
    (tmp_path / "bad.jsonl").write_text(
        '{"source": "a:b", "page": "p", "question": "q", "statements": [], "answers": [0]}\n'
    )
    with pytest.raises(AnswerDataError, match=r"bad.jsonl:1: its answers must index its statements"):
        load_groups(tmp_path / "bad.jsonl")
    (tmp_path / "worse.jsonl").write_text('{"page": "p"}\n')
    with pytest.raises(AnswerDataError, match=r"worse.jsonl:1: not a question row"):
        load_groups(tmp_path / "worse.jsonl")


def test_the_collections_built_from_held_out_pages_read_as_calibration_sets():
    from lab.answer_collections import COLLECTIONS
    from lab.calibration import read_calibration_set

    trained = {g.page.removeprefix("selqa:") for g in load_split(ANSWER_DATA, "train")}
    for name in ("selqa-dev", "selqa-test"):
        questions = read_calibration_set(COLLECTIONS / f"{name}.jsonl")
        articles = {p.stem: p.read_text() for p in (COLLECTIONS / name).glob("*.md")}
        assert (
            articles and not {t.splitlines()[2].removeprefix("title: ").strip('"') for t in articles.values()} & trained
        )
        for q in questions:
            if q.answerable:
                assert q.article in articles and len(q.answers) == 1 and q.answers[0] in articles[q.article]
            else:
                assert q.article is None and not q.answers
        assert sum(q.answerable for q in questions) > 100 and sum(not q.answerable for q in questions) > 80
