"""Cleaning: the footer repeated across the sample found and removed, headings and tables kept."""

from pathlib import Path

from django.conf import settings

from knowledge.cleaning import clean_markdown, find_boilerplate, normalise_whitespace
from knowledge.sources import parse_markdown

FOOTER = "Still stuck? Contact us at help@lumenoak.example or chat with us from any page."


def test_it_finds_the_footer_repeated_across_the_sample():
    paths = Path(settings.SAMPLE_HELP_CENTRE).glob("*.md")
    bodies = [parse_markdown(str(p), p.read_bytes(), max_bytes=10**6).body for p in paths]
    assert find_boilerplate(bodies) == {FOOTER}


def test_it_keeps_headings_tables_and_lines_that_repeat_in_few_documents():
    docs = [
        "# Title\n\n| a | b |\n|---|---|\n\nshared line\n",
        "# Title\n\n| a | b |\n|---|---|\n\nshared line\n",
        "# Title\n\n| a | b |\n|---|---|\n\nother\n",
        "# Title\n\nmore\n",
    ]
    assert find_boilerplate(docs) == set()  # in 2 of 4 documents: under the 3-document minimum
    assert find_boilerplate(docs, min_documents=2) == {"shared line"}


def test_it_removes_boilerplate_and_normalises_whitespace():
    body = "# Refunds\r\n\r\n\r\nWe  refund\tquickly.   \n\nPage 1 of 3\n\n| a  | b |\n|--|--|\n"
    assert clean_markdown(body, {"Page 1 of 3"}) == "# Refunds\n\nWe refund quickly.\n\n| a  | b |\n|--|--|\n"


def test_it_leaves_code_blocks_alone():
    body = "```\nx  =   1\n\n\n```\n"
    assert "x  =   1" in normalise_whitespace(body)
