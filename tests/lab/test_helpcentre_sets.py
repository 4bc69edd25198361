"""The labelled sets we wrote over public help centres: the asides' labels cover their statements and
`evaluate asides` reports on both splits; written questions name the article id ingest gives their page."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from lab.boilerplate_evaluation import asides_report
from lab.errors import AsideDataError
from lab.helpcentre_questions import convert


def test_evaluate_asides_reports_precision_and_recall_on_each_split():
    out = StringIO()
    call_command("evaluate", "asides", stdout=out)
    lines = out.getvalue().splitlines()
    for source, split in (("plausible", "dev"), ("wagtail", "test")):
        (line,) = [x for x in lines if x.startswith(f"{source} ({split}):")]
        assert "precision" in line and "recall" in line and "asides" in line


def test_labels_that_miss_a_statement_are_refused(tmp_path):
    for source in ("plausible", "wagtail"):
        rows = (
            Path(__file__).parents[2] / "lab" / "datasets" / "boilerplate" / f"statements_{source}.jsonl"
        ).read_text()
        (tmp_path / f"statements_{source}.jsonl").write_text(rows)
        first = json.loads(rows.splitlines()[0])
        (tmp_path / f"labels_{source}.jsonl").write_text(json.dumps({"id": first["id"], "label": 0, "kind": "content"}))
    with pytest.raises(AsideDataError, match="does not label exactly"):
        asides_report(tmp_path)


def test_written_questions_name_the_article_id_of_their_page(tmp_path):
    pages = tmp_path / "docs"
    (pages / "Billing").mkdir(parents=True)
    (pages / "Billing" / "Refund policy.md").write_text("---\ntitle: Refunds\n---\nRefunds take 5 days.\n")
    (pages / "intro.mdx").write_text("---\nid: welcome\n---\n# Welcome\n\nHello there, reader.\n")
    written = tmp_path / "written.jsonl"
    rows = [
        {
            "question": "refund time?",
            "audience": "public",
            "answerable": True,
            "page": "Billing/Refund policy.md",
            "answer": "5 days",
            "shape": "sentence",
        },
        {
            "question": "what is this?",
            "audience": "public",
            "answerable": True,
            "page": "intro.mdx",
            "answer": "Hello",
            "shape": "sentence",
        },
        {
            "question": "passkeys?",
            "audience": "public",
            "answerable": False,
            "page": None,
            "answer": None,
            "shape": "out-of-scope",
        },
    ]
    written.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    assert convert(written, pages, out) == 3
    converted = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["article"] for r in converted] == ["billing-refund-policy", "welcome", None]
    assert set(converted[0]) == {"question", "audience", "answerable", "article", "answer", "shape"}
