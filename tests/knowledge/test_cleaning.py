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


def test_page_furniture_is_dropped_by_its_shape_and_content_with_links_is_kept():
    body = (
        "# Exporting data\n\n[Home](/) › [Guides](/guides) › [Export](/guides/export)\n\n## Contents\n\n"
        "- [Formats](#formats)\n- [Schedules](#schedules)\n- [Limits](#limits)\n\n## Formats\n\n"
        "Exports come as CSV or JSON. Read [the schema](/guides/schema) before importing them elsewhere.\n\n"
        "[Sample export](/files/sample.csv)\n\n- Large exports are split into parts.\n- See [Limits](#limits) for sizes.\n\n"
        "[Share on Mastodon](https://example.social/share) · [Share by e-mail](mailto:?subject=Export)\n\n"
        "```\n- [not](furniture)\n- [but](code)\n```\n"
    )
    cleaned = clean_markdown(body)
    assert "Home" not in cleaned and "Guides" not in cleaned  # breadcrumbs
    assert "Schedules" not in cleaned  # a list of nothing but links: a table of contents
    assert "Mastodon" not in cleaned  # share links
    assert "Exports come as CSV or JSON." in cleaned and "the schema" in cleaned
    assert "Sample export" in cleaned  # one link alone on its line may be content
    assert "Large exports are split into parts." in cleaned and "for sizes" in cleaned  # a list with words
    assert "- [not](furniture)" in cleaned  # code is kept as written
