"""Chunking by headings: heading paths kept, no chunk across two sections, the size bounds respected."""

from itertools import pairwise
from pathlib import Path

import pytest
from django.conf import settings

from knowledge.chunking import (
    HEADING_SEPARATOR,
    ChunkBounds,
    chunk_document,
    chunk_section,
    embedding_text,
    join_units,
    needs_sentence_vectors,
    parse_sections,
    split_sentences,
)
from knowledge.cleaning import clean_markdown
from knowledge.embeddings import Embedder
from knowledge.sources import parse_markdown
from knowledge.statements import passage_statements

BOUNDS = ChunkBounds(min_tokens=40, max_tokens=200)


def _sections(embedder: Embedder, markdown: str):
    return parse_sections(clean_markdown(markdown), embedder.count_tokens)


def _semantic_chunks(embedder: Embedder, markdown: str, bounds: ChunkBounds = BOUNDS):
    sections = _sections(embedder, markdown)
    vectors = [
        embedder.encode([u.text for u in s.units]) if needs_sentence_vectors(s, bounds) else None for s in sections
    ]
    return sections, chunk_document(sections, "heading-semantic", bounds, embedder.count_tokens, vectors)


def _sample_docs():
    for path in sorted(Path(settings.SAMPLE_HELP_CENTRE).glob("*.md")):
        yield parse_markdown(str(path), path.read_bytes(), max_bytes=10**6)


def test_it_keeps_heading_paths(embedder):
    refunds = next(d for d in _sample_docs() if d.slug == "refunds")
    _, chunks = _semantic_chunks(embedder, refunds.body)
    arrival = [c for c in chunks if c.heading_path == f"Refunds{HEADING_SEPARATOR}When the money arrives"]
    assert arrival, [c.heading_path for c in chunks]
    assert any("5 to 10 business days" in c.text for c in arrival)


def test_it_never_lets_a_chunk_straddle_two_sections(embedder):
    for doc in _sample_docs():
        sections, chunks = _semantic_chunks(embedder, doc.body)
        section_text = {HEADING_SEPARATOR.join(s.heading_path): join_units(s.units) for s in sections}
        for chunk in chunks:
            assert chunk.text in section_text[chunk.heading_path], (doc.slug, chunk.heading_path)


def test_it_respects_the_bounds(embedder):
    bounds = ChunkBounds(min_tokens=30, max_tokens=90)
    for doc in _sample_docs():
        sections, chunks = _semantic_chunks(embedder, doc.body, bounds)
        section_tokens = {HEADING_SEPARATOR.join(s.heading_path): s.tokens for s in sections}
        for chunk in chunks:
            whole_table = chunk.text.startswith("|") and chunk.text.count("\n|") == chunk.text.count("\n")
            assert chunk.token_count <= bounds.max_tokens or whole_table, (doc.slug, chunk.token_count, chunk.text)
            # Only a section that is itself short may yield a chunk under the minimum... or the remainder
            # that could not be folded without passing the maximum.
            if chunk.token_count < bounds.min_tokens:
                assert section_tokens[chunk.heading_path] < 2 * bounds.min_tokens or any(
                    c.heading_path == chunk.heading_path and c.token_count + chunk.token_count > bounds.max_tokens
                    for c in chunks
                    if c is not chunk
                ), (doc.slug, chunk)


TOPIC_SHIFT = """# Help

## Mixed section

Refunds are paid back to the card you used for the purchase. A refund reaches your bank account within ten business days after approval. If the refund is late, your bank can trace it with the refund reference. Partial refunds happen when an item comes back used or incomplete.

Our pendant lamps take E27 bulbs up to sixty watts. Use warm white LED bulbs of about six watts for the nicest light. Let a hot bulb cool down for fifteen minutes before you change it. Never exceed the wattage printed inside the lamp shade.
"""


def test_it_splits_a_topic_shift_inside_one_section(embedder):
    _, chunks = _semantic_chunks(embedder, TOPIC_SHIFT, ChunkBounds(min_tokens=20, max_tokens=200))
    assert len(chunks) == 2, [c.text for c in chunks]
    assert "Partial refunds" in chunks[0].text and "lamp" not in chunks[0].text
    assert chunks[1].text.startswith("Our pendant lamps")


def test_heading_strategy_keeps_the_same_section_together(embedder):
    sections = _sections(embedder, TOPIC_SHIFT)
    chunks = chunk_document(sections, "heading", ChunkBounds(20, 200), embedder.count_tokens)
    assert len(chunks) == 1


TABLE_DOC = """# Prices

## Delivery options

Here are the options.

| Option | Delivery time | Price |
|---|---|---|
| Standard | 3-5 business days | $5.95 |
| Express | next business day | $12 |
| Large items | 5-10 business days | $39 |
| International | 6-10 business days | from $20 |

Prices include VAT. Orders over $50 ship free.
"""


@pytest.mark.parametrize("max_tokens", [16, 40, 200])
def test_it_keeps_a_table_whole_with_its_header(embedder, max_tokens):
    table = TABLE_DOC.split("\n\n")[3].strip()
    sections = _sections(embedder, TABLE_DOC)
    bounds = ChunkBounds(min_tokens=max_tokens // 2, max_tokens=max_tokens)
    chunks = chunk_section(sections[-1], bounds, embedder.count_tokens)
    holding = [c for c in chunks if "| Standard" in c.text]
    assert len(holding) == 1
    assert table in holding[0].text


def test_it_splits_sentences_but_not_abbreviations():
    text = "Use a soft cloth, e.g. microfibre. Do not use bleach! Is it dry? Yes (mostly). 3 coats."
    assert split_sentences(text) == [
        "Use a soft cloth, e.g. microfibre.",
        "Do not use bleach!",
        "Is it dry?",
        "Yes (mostly).",
        "3 coats.",
    ]


def test_it_cuts_one_giant_sentence_at_word_boundaries(embedder):
    giant = "# T\n\n" + " ".join(f"word{i}" for i in range(400)) + "."
    sections = _sections(embedder, giant)
    chunks = chunk_section(sections[0], ChunkBounds(20, 60), embedder.count_tokens)
    assert len(chunks) > 1
    assert all(c.token_count <= 60 for c in chunks)
    assert " ".join(c.text for c in chunks) == " ".join(f"word{i}" for i in range(400)) + "."


def test_fixed_windows_overlap_and_cover_everything(embedder):
    doc = next(d for d in _sample_docs() if d.slug == "warranty")
    sections = _sections(embedder, doc.body)
    bounds = ChunkBounds(min_tokens=20, max_tokens=80, overlap_tokens=20)
    chunks = chunk_document(sections, "fixed", bounds, embedder.count_tokens)
    words = " ".join(u.text for s in sections for u in s.units).split()
    assert chunks[0].text.split()[:5] == words[:5]
    assert chunks[-1].text.split()[-5:] == words[-5:]
    for first, second in pairwise(chunks):
        a, b = first.text.split(), second.text.split()
        shared = next(m for m in range(len(b), -1, -1) if a[len(a) - m :] == b[:m])
        assert 1 <= shared <= 20  # the next window starts inside the previous one, by at most the overlap
        assert first.token_count <= 80 + 10  # per-word counts approximate the window's own count


def test_sentence_strategy_packs_whole_sentences_across_sections(embedder):
    doc = next(d for d in _sample_docs() if d.slug == "refunds")
    sections = _sections(embedder, doc.body)
    chunks = chunk_document(sections, "sentence", BOUNDS, embedder.count_tokens)
    assert len(chunks) < sum(len(s.units) for s in sections)
    units = {u.text for s in sections for u in s.units}
    for chunk in chunks:
        assert chunk.token_count <= BOUNDS.max_tokens + 5
        first_unit = chunk.text.split("\n")[0]
        assert any(first_unit.startswith(u) for u in units)


def test_bounds_are_validated():
    with pytest.raises(ValueError):
        ChunkBounds(min_tokens=0, max_tokens=100)
    with pytest.raises(ValueError):
        ChunkBounds(min_tokens=60, max_tokens=100)


def test_the_embedded_text_carries_title_and_heading_path():
    assert embedding_text("Refunds", "Refunds › When the money arrives", "5 to 10 days.") == (
        "Refunds › When the money arrives\n\n5 to 10 days."
    )
    assert embedding_text("Refunds", "Card refunds", "x") == "Refunds › Card refunds\n\nx"
    assert embedding_text("Refunds", "", "x") == "Refunds\n\nx"


def test_text_before_the_first_heading_has_an_empty_path(embedder):
    sections = _sections(embedder, "Intro line.\n\n# Title\n\nBody.\n")
    assert [s.heading_path for s in sections] == [(), ("Title",)]


STEPS_DOC = """# Evaluations

## Test cases

Each scenario is one test case. To add more test cases:
Select Add scenario.
Enter the inputs and the expected output.
Select Save.

Repeat to create multiple scenarios.
"""


def test_plain_lines_under_a_line_ending_in_a_colon_keep_their_breaks_as_steps(embedder):
    [chunk] = chunk_document(_sections(embedder, STEPS_DOC), "heading", BOUNDS, embedder.count_tokens)
    assert "To add more test cases:\nSelect Add scenario.\nEnter the inputs" in chunk.text
    statements = passage_statements(chunk.text)
    steps = [s.text for s in statements if s.step]
    assert steps == ["Select Add scenario.", "Enter the inputs and the expected output.", "Select Save."]
    assert {s.block for s in statements if s.step} == {statements[2].block}  # one procedure
    assert not statements[-1].step  # the paragraph after the blank line is prose again
