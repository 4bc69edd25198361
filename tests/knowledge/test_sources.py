"""Reading articles: front matter and body, bad files located by line and field, size limits."""

import json
from datetime import date

import pytest

from knowledge.errors import IngestFileError
from knowledge.sources import parse_markdown, read_beir_corpus

GOOD = """---
id: refunds
title: Refunds
product: shop
version: "2"
effective_date: 2026-02-01
audience: public
language: en
---

# Refunds

We refund within 30 days.
"""


def _error(raw: bytes, max_bytes: int = 10_000) -> IngestFileError:
    with pytest.raises(IngestFileError) as info:
        parse_markdown("kb/refunds.md", raw, max_bytes=max_bytes)
    return info.value


def test_it_reads_front_matter_and_body():
    doc = parse_markdown("kb/refunds.md", GOOD.encode(), max_bytes=10_000)
    assert (doc.slug, doc.title, doc.version_label, doc.audience) == ("refunds", "Refunds", "2", "public")
    assert doc.effective_date == date(2026, 2, 1)
    assert doc.body.strip().startswith("# Refunds")
    assert len(doc.content_hash) == 64


@pytest.mark.parametrize(
    ("raw", "line", "field", "words"),
    [
        (b"# Refunds\n\nNo front matter here.\n", 1, None, "no YAML front matter"),
        (GOOD.replace("audience: public", "audience: vip").encode(), 7, "audience", "unknown audience 'vip'"),
        (GOOD.replace("2026-02-01", "2026-13-01").encode(), 6, "effective_date", "is not a date"),
        (GOOD.replace("2026-02-01", "soon").encode(), 6, "effective_date", "is not a date"),
        (GOOD.replace("title: Refunds\n", "").encode(), 1, "title", "required field is missing"),
        (GOOD.replace("language: en", "langauge: en").encode(), 8, "langauge", "unknown field"),
        (GOOD.replace("id: refunds", "id: refunds policy").encode(), 2, "id", "is not a valid id"),
        (GOOD.replace("product: shop", "product: [shop").encode(), 5, None, "not valid YAML"),
        (GOOD.replace("language: en", "language: en\nlanguage: fr").encode(), 9, "language", "given twice"),
        (GOOD.replace("---\n\n# Refunds\n\nWe refund within 30 days.\n", "---\n\n").encode(), 10, None, "no body"),
        (GOOD.encode().replace(b"30 days", b"30 \xff days"), 13, None, "not valid UTF-8"),
        (GOOD.replace("product: shop", "product: [shop, home]").encode(), 4, "product", "not a list"),
    ],
)
def test_it_locates_each_bad_file_by_line_and_field(raw, line, field, words):
    error = _error(raw)
    assert (error.line, error.field) == (line, field)
    assert words in error.message
    assert str(error).startswith(f"kb/refunds.md:{line}: ")


def test_it_refuses_files_over_the_size_limit():
    error = _error(GOOD.encode(), max_bytes=100)
    assert "over the limit of 100 bytes" in str(error)


def test_it_reads_a_beir_corpus_and_reports_bad_lines(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        json.dumps({"_id": "d1", "title": "Aspirin", "text": "Aspirin thins the blood."})
        + "\n"
        + "{not json\n"
        + json.dumps({"_id": "d2", "title": "Empty", "text": ""})
        + "\n"
    )
    items = list(read_beir_corpus(tmp_path, effective_date=date(2026, 1, 1)))
    doc, bad_json, empty = items
    assert not isinstance(doc, IngestFileError)
    assert doc.slug == "d1" and doc.body == "# Aspirin\n\nAspirin thins the blood.\n"
    assert isinstance(bad_json, IngestFileError) and bad_json.line == 2
    assert isinstance(empty, IngestFileError) and (empty.line, empty.field) == (3, "text")
