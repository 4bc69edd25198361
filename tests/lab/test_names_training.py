"""The name tagger's training: its data read and checked, labels aligned to word pieces, and one command that
trains, exports int8 and measures a tiny random model (the real training, ~25 min, never runs here)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer

from answering.privacy.names import LABELS, NameTagger
from knowledge.embeddings import minilm_dir
from lab.errors import NamesDataError
from lab.names_training import (
    IGNORED,
    Sentence,
    entity_metrics,
    main,
    piece_labels,
    read_sentences,
    without_punctuation,
)
from lab.onnx_export import MODEL_FILE

ROWS: list[dict[str, Any]] = [
    {
        "source": "news",
        "doc": "d1",
        "tokens": ["Ngozi", "Okafor", "flew", "to", "Lagos", "."],
        "tags": ["B-PER", "I-PER", "O", "O", "B-LOC", "O"],
    },
    {
        "source": "chat",
        "doc": "d2",
        "tokens": ["thanks", ",", "brightwater", "bank", "called", "me"],
        "tags": ["O", "O", "B-ORG", "I-ORG", "O", "O"],
    },
]


def _write(folder: Path, rows: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "test"):
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_entities_are_character_spans_of_the_joined_tokens():
    sentence = Sentence("news", "d1", ("Ngozi", "Okafor", "flew", "to", "Lagos", "."), tuple(ROWS[0]["tags"]))
    text, starts = sentence.text_and_offsets()
    assert text == "Ngozi Okafor flew to Lagos ."
    assert starts == [0, 6, 13, 18, 21, 27]
    assert {text[s:e]: kind for kind, s, e in sentence.entities()} == {"Ngozi Okafor": "PER", "Lagos": "LOC"}
    # An I- with nothing to continue still starts an entity; a new type ends the one before.
    odd = Sentence("x", "d", ("a", "b", "c"), ("I-ORG", "I-PER", "O"))
    assert sorted(odd.entities()) == [("ORG", 0, 1), ("PER", 2, 3)]


def test_every_piece_of_a_name_says_it_is_inside_one_and_special_tokens_are_ignored():
    tokenizer = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    sentence = Sentence("x", "d", ("Szczepanowska", "paid"), ("B-PER", "O"))
    encoded = tokenizer.encode(sentence.text_and_offsets()[0])
    labels = piece_labels(sentence, encoded.offsets, encoded.special_tokens_mask)
    name_pieces = [i for i, (s, e) in enumerate(encoded.offsets) if e <= len("Szczepanowska") and e > s]
    assert len(name_pieces) > 1  # a rare name is several pieces
    assert labels[name_pieces[0]] == LABELS.index("B-PER")
    assert all(labels[i] == LABELS.index("I-PER") for i in name_pieces[1:])
    assert labels[0] == IGNORED and labels[-1] == IGNORED
    assert labels[-2] == LABELS.index("O")  # "paid"


def test_a_sentence_typed_without_punctuation_keeps_its_names():
    sentence = Sentence("x", "d", ("Hi", ",", "I'm", "O'Neill", "!"), ("O", "O", "O", "B-PER", "O"))
    bare = without_punctuation(sentence)
    assert bare.tokens == ("Hi", "I'm", "O'Neill") and bare.tags == ("O", "O", "B-PER")


def test_a_malformed_row_is_refused_with_its_line(tmp_path: Path):
    (tmp_path / "bad.jsonl").write_text('{"source": "a", "doc": "d", "tokens": ["x"], "tags": ["O", "O"]}\n')
    with pytest.raises(NamesDataError, match=r"bad.jsonl:1: needs one tag per token"):
        read_sentences(tmp_path / "bad.jsonl")
    (tmp_path / "tags.jsonl").write_text('{"source": "a", "doc": "d", "tokens": ["x"], "tags": ["B-MISC"]}\n')
    with pytest.raises(NamesDataError, match=r"tags.jsonl:1: unknown tags \['B-MISC'\]"):
        read_sentences(tmp_path / "tags.jsonl")
    (tmp_path / "worse.jsonl").write_text('{"doc": "d"}\n')
    with pytest.raises(NamesDataError, match=r"worse.jsonl:1: not a sentence row"):
        read_sentences(tmp_path / "worse.jsonl")


def test_entity_metrics_count_exact_spans_by_type():
    class Tagger:  # finds the person, and calls the place an organisation
        def tag(self, text: str) -> list[object]:
            from answering.privacy.names import TaggedSpan

            return [TaggedSpan("PER", 0, 12, 0.9), TaggedSpan("ORG", 21, 26, 0.9)] if text.startswith("Ngozi") else []

    sentences = read_sentences_from(ROWS[:1])
    figures = entity_metrics(Tagger(), sentences)  # type: ignore[arg-type]
    assert figures["all/PER"] == {"gold": 1, "precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert figures["all/LOC"]["recall"] == 0.0 and figures["all/ORG"]["precision"] == 0.0


def read_sentences_from(rows: list[dict[str, Any]]) -> list[Sentence]:
    return [Sentence(str(r["source"]), str(r["doc"]), tuple(r["tokens"]), tuple(r["tags"])) for r in rows]


def test_one_command_trains_exports_int8_and_measures_a_tiny_random_model(tmp_path: Path, capsys):
    data = tmp_path / "data"
    _write(data, ROWS)
    out = tmp_path / "model"
    main(["--out", str(out), "--data", str(data), "--tiny-random", "--epochs", "1"])

    digest = hashlib.sha256((out / MODEL_FILE).read_bytes()).hexdigest()
    assert (out / f"{MODEL_FILE}.sha256").read_text().split()[0] == digest
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["sha256"] == digest and metrics["train_sentences"] == 2
    assert metrics["test"]["all/PER"]["gold"] == 1 and metrics["dev"]["chat/ORG"]["gold"] == 1
    # The export is what serving loads: spans inside the text, of the three types.
    text = "ngozi okafor wrote from lagos"
    for span in NameTagger(out).tag(text):
        assert span.entity in ("PER", "LOC", "ORG") and 0 <= span.start < span.end <= len(text)
    assert '"sha256"' in capsys.readouterr().out
