"""The personal-data evaluation set, its metrics, and `manage.py evaluate pii` on a tiny file."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from answering.privacy.masking import MaskedText, PiiSpan
from lab.errors import PiiDatasetError
from lab.pii_evaluation import evaluate_pii, fully_masked, overlaps, read_pii_set
from lab.pii_set import DEV_TEMPLATES, TEST_TEMPLATES, LabelledSpan, PiiMessage, generate


def message(text: str, personal: dict[str, str], kept: dict[str, str] | None = None) -> PiiMessage:
    def spans(values: dict[str, str]) -> tuple[LabelledSpan, ...]:
        return tuple(
            LabelledSpan(kind, text.index(value), text.index(value) + len(value), value)
            for value, kind in values.items()
        )

    return PiiMessage(text, spans(personal), spans(kept or {}), "")


def masking(*values: str):
    """Masks exactly the given substrings, as PERSON: a stand-in whose result the metrics are checked on."""

    def mask(text: str) -> MaskedText:
        spans = sorted(
            (
                PiiSpan("PERSON", text.index(v), text.index(v) + len(v), f"<PERSON_{i}>")
                for i, v in enumerate(values)
                if v in text
            ),
            key=lambda span: span.start,
        )
        masked, cursor = "", 0
        for span in spans:
            masked += text[cursor : span.start] + span.placeholder
            cursor = span.end
        return MaskedText(masked + text[cursor:], tuple(spans))

    return mask


def test_recall_counts_a_value_gone_from_the_masked_text_and_fully_masked_counts_every_character():
    messages = [
        message("I am Ana Ruiz, order LO-2048173", {"Ana Ruiz": "PERSON"}, {"LO-2048173": "ORDER_NUMBER"}),
        message("I am Bo Li", {"Bo Li": "PERSON"}),
        message("Hi Cy Doe", {"Cy Doe": "PERSON"}),
    ]

    # Ana Ruiz masked whole, "Bo" of Bo Li only (the value is gone, not fully masked), Cy Doe missed;
    # the order number masked although it is no personal data.
    figures = evaluate_pii(messages, mask=masking("Ana Ruiz", "Bo", "LO-2048173"))

    assert figures.recall == {"PERSON": 0.667}
    assert figures.fully_masked == {"PERSON": 0.333}
    assert figures.labelled == {"PERSON": 3}
    assert figures.precision == {"PERSON": 0.667} and figures.masked_spans == {"PERSON": 3}
    assert figures.kept_survived == {"ORDER_NUMBER": 0.0}
    assert figures.kept_lost == ["ORDER_NUMBER 'LO-2048173' in 'I am <PERSON_0>, order <PERSON_2>'"]
    assert figures.missed == {"PERSON": ["'Cy Doe' in 'Hi Cy Doe'"]}
    assert figures.p50_ms >= 0 and figures.p95_ms >= figures.p50_ms


def test_fully_masked_ignores_separators_and_overlaps_needs_a_shared_character():
    value = LabelledSpan("PHONE_NUMBER", 0, 11, "0777 123456")
    assert fully_masked(value, (PiiSpan("PHONE_NUMBER", 0, 4, ""), PiiSpan("PHONE_NUMBER", 5, 11, "")), "0777 123456")
    assert not fully_masked(value, (PiiSpan("PHONE_NUMBER", 0, 4, ""),), "0777 123456")
    assert overlaps(PiiSpan("PERSON", 3, 5, ""), (value,))
    assert not overlaps(PiiSpan("PERSON", 11, 14, ""), (value,))


def test_the_generated_splits_label_exact_spans_and_share_no_template():
    dev, test = generate("dev", 80), generate("test", 80)

    assert not set(DEV_TEMPLATES) & set(TEST_TEMPLATES)
    assert {m.template for m in dev} <= set(DEV_TEMPLATES) and {m.template for m in test} <= set(TEST_TEMPLATES)
    for item in dev + test:
        for span in item.personal + item.kept:
            assert item.text[span.start : span.end] == span.value
    assert generate("dev", 80) == dev  # the seed decides every value
    kinds = {span.kind for item in dev + test for span in item.personal}
    assert kinds == {
        "PERSON", "PHONE_NUMBER", "CREDIT_CARD", "EMAIL_ADDRESS", "IBAN_CODE", "NATIONAL_ID", "STREET_ADDRESS"
    }  # fmt: skip


def test_the_shipped_splits_read_back():
    sample = Path(__file__).resolve().parents[2] / "lab" / "sample"
    for name in ("pii_dev.jsonl", "pii_test.jsonl"):
        assert len(read_pii_set(sample / name)) >= 300


def test_the_sets_written_by_others_read_back_and_share_no_template():
    folder = Path(__file__).resolve().parents[2] / "lab" / "datasets" / "pii"
    dev, test = (read_pii_set(folder / f"{split}.jsonl") for split in ("dev", "test"))

    def groups(messages: list[PiiMessage]) -> set[str]:
        # presidio-synth:t104:6 is template 104; a long record cut in pieces carries #n.
        return {m.template.split("#")[0].rsplit(":", 1)[0] for m in messages if m.template.startswith("presidio")}

    assert len(dev) > 1500 and len(test) > 1500
    assert groups(dev) and not groups(dev) & groups(test)


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("{not json", r"set.jsonl line 1: not JSON"),
        ('{"text": "Hi Ana", "personal": [{"kind": "PERSON", "start": 3, "end": 6, "value": "Bob"}]}', r"not 'Bob'"),
        ('{"text": "Hi", "personal": [{"kind": "PET", "start": 0, "end": 1, "value": "H"}]}', r"unknown kind 'PET'"),
        ('{"text": "Hi", "kept": [{"kind": "DATE", "start": 0, "end": 9, "value": "Hi"}]}', r"outside the text"),
    ],
)
def test_a_malformed_set_is_refused_naming_the_line(tmp_path: Path, line: str, error: str):
    (tmp_path / "set.jsonl").write_text(line + "\n")
    with pytest.raises(PiiDatasetError, match=error):
        read_pii_set(tmp_path / "set.jsonl")


def test_evaluate_pii_prints_the_table_for_a_tiny_file_with_real_masking(tmp_path: Path):
    texts = [
        message(
            "My name is Rubija, card 4131034282458809939, order LO-2048173",
            {"Rubija": "PERSON", "4131034282458809939": "CREDIT_CARD"},
            {"LO-2048173": "ORDER_NUMBER"},
        ),
        message("Here's my SSN: 460-89-9847, error E-4012", {"460-89-9847": "NATIONAL_ID"}, {"E-4012": "ERROR_CODE"}),
    ]
    dataset = tmp_path / "tiny.jsonl"
    dataset.write_text("".join(json.dumps(m.as_json()) + "\n" for m in texts))
    out = StringIO()

    call_command("evaluate", "pii", "--dataset", str(dataset), "--json", str(tmp_path / "pii.json"), stdout=out)

    lines = out.getvalue().splitlines()
    assert lines[0].startswith("2 messages · masking p50 ")
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:5]}
    assert rows == {
        "CREDIT_CARD": ["1", "1.000", "1.000", "CREDIT_CARD", "1", "1.000"],
        "NATIONAL_ID": ["1", "1.000", "1.000", "NATIONAL_ID", "1", "1.000"],
        "PERSON": ["1", "1.000", "1.000", "PERSON", "1", "1.000"],
    }
    assert "kept identifiers surviving: ERROR_CODE 1.000 · ORDER_NUMBER 1.000" in lines
    assert "kept identifiers lost: 0" in lines
    assert json.loads((tmp_path / "pii.json").read_text())["recall"] == {
        "CREDIT_CARD": 1.0, "NATIONAL_ID": 1.0, "PERSON": 1.0
    }  # fmt: skip


def test_evaluate_pii_refuses_a_missing_file(tmp_path: Path):
    with pytest.raises(CommandError, match=r"Cannot read .*nowhere.jsonl"):
        call_command("evaluate", "pii", "--dataset", str(tmp_path / "nowhere.jsonl"), stdout=StringIO())
