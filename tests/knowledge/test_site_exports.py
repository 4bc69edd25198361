"""Help centres as their site generators export them (Jekyll, Hugo, Docusaurus, MkDocs, and nine real pages of
Plausible's Docusaurus docs): every page ingests with its front matter read, never refused; template and
component syntax never reaches a chunk; code spans, URLs and commands reach the chunks byte for byte."""

from __future__ import annotations

import io
import re
from datetime import date
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from knowledge.errors import IngestFileError
from knowledge.front_matter import FrontMatterRules, parse_audience_rules
from knowledge.models import Article, ArticleVersion, Chunk
from knowledge.site_markup import CODE_SPAN
from knowledge.sources import SourceDocument, read_folder

EXPORTS = Path(__file__).parent / "exports"
TOOLS = ("jekyll", "hugo", "docusaurus", "mkdocs", "plausible")
TODAY = date(2026, 3, 14)
FENCED = re.compile(r"^(\s*)(`{3,}|~{3,}).*?^\1\2\s*$", re.DOTALL | re.MULTILINE)
# What a site generator's syntax looks like, outside code: none of it may be quoted to a customer.
TEMPLATE_SYNTAX = re.compile(
    r"\{%|%\}|\{\{|\}\}|^\s*:::|^\s*!!!|^\s*\?\?\?|^\s*===\s|</?[A-Z][A-Za-z]*[\s/>]|^import\s|"
    r"&[a-z]+;|&#\d+;|\[TOC\]|--8<--|\{:|\{\s*#[\w-]+\s*\}|</?(?:kbd|i|div|table|tr|td|details|summary|head)\b",
    re.MULTILINE,
)


def prose(text: str) -> str:
    """The text outside fenced code and code spans, where markup is never quoted as written."""
    return CODE_SPAN.sub("", FENCED.sub("", text))


def code_spans(text: str) -> list[str]:
    """Every code span of a page's body outside fenced code (front matter and {% raw %} markers aside)."""
    body = re.sub(r"\A(---|\+\+\+)\n.*?\n\1\n", "", text, flags=re.DOTALL)
    # What a page never shows: its <head> and scripts (a JSON-LD block in an MDX template literal).
    body = re.sub(r"<(head|script)\b.*?</\1>", "", body, flags=re.DOTALL)
    return [m.group(0) for m in CODE_SPAN.finditer(FENCED.sub("", body))]


def pages(tool: str) -> list[Path]:
    return sorted(p for p in (EXPORTS / tool / "docs").rglob("*") if p.suffix in (".md", ".mdx"))


def published(tool: str) -> list[Path]:
    return [p for p in pages(tool) if not re.search(r"^(draft: true|published: false)$", p.read_text(), re.M)]


@pytest.mark.parametrize("tool", TOOLS)
def test_every_page_of_an_export_is_read_and_drafts_are_left_out(tool):
    read = read_folder(EXPORTS / tool / "docs", max_bytes=200_000, today=TODAY)
    assert [item for item in read.items if isinstance(item, IngestFileError)] == []
    documents = [item for item in read.items if isinstance(item, SourceDocument)]
    assert len(documents) == len(published(tool)) > 0
    assert not any("Upcoming" in d.title or "draft" in d.title for d in documents)
    for document in documents:
        assert TEMPLATE_SYNTAX.findall(prose(document.body)) == [], document.path


def test_front_matter_of_each_tool_gives_our_fields():
    def read(tool: str) -> dict[str, SourceDocument]:
        items = read_folder(EXPORTS / tool / "docs", max_bytes=200_000, today=TODAY).items
        return {Path(d.path).stem: d for d in items if isinstance(d, SourceDocument)}

    jekyll, hugo, docusaurus, mkdocs = (read(tool) for tool in TOOLS[:4])
    shortcuts = jekyll["browser-extension"]
    assert shortcuts.title == "Keyboard shortcuts in the browser extension"
    assert shortcuts.summary == "Change or turn off the extension's keyboard shortcuts."
    assert shortcuts.effective_date == date(2025, 3, 14)  # last_modified_at
    assert shortcuts.body.startswith("# Keyboard shortcuts in the browser extension\n")
    assert jekyll["faq"].slug == "5521"  # its own id
    cli = hugo["installing-the-cli"]  # TOML front matter; lastmod before date
    assert (cli.title, cli.effective_date) == ("Installing the command-line tool", date(2025, 1, 20))
    billing = docusaurus["billing"]
    assert (billing.slug, billing.title, billing.effective_date) == ("billing", "Plans and billing", date(2025, 2, 11))
    assert docusaurus["intro"].effective_date == TODAY  # no date given: the day of ingest
    assert mkdocs["sync"].effective_date == date(2024, 11, 2)
    assert {d.audience for tool in (jekyll, hugo, docusaurus, mkdocs) for d in tool.values()} == {"public"}


def test_one_warning_names_the_ignored_keys_with_their_page_counts():
    read = read_folder(EXPORTS / "jekyll" / "docs", max_bytes=200_000, today=TODAY)
    ignored = next(w for w in read.warnings if w.startswith("front matter keys supportbot does not use"))
    for key in ("layout (2 pages)", "categories (1 page)", "redirect_from (1 page)", "permalink (1 page)"):
        assert key in ignored
    assert "title" not in ignored and "description" not in ignored
    drafts = next(w for w in read.warnings if "drafts or unpublished" in w)
    assert drafts.startswith("1 page(s)") and "unpublished.md" in drafts


def test_an_audience_mapping_restricts_pages_and_an_unknown_audience_is_refused(tmp_path):
    (tmp_path / "internal.md").write_text("---\ntitle: Escalations\nvisibility: internal\n---\nCall the lead.\n")
    (tmp_path / "members.md").write_text("---\ntitle: Perks\ntags: [members, billing]\n---\nFree shipping.\n")
    (tmp_path / "odd.md").write_text("---\ntitle: Odd\naudience: partners\n---\nText.\n")
    rules = FrontMatterRules(audiences=parse_audience_rules("visibility:internal=staff, tags:members=member"))
    read = read_folder(tmp_path, max_bytes=10_000, today=TODAY, rules=rules)
    audiences = {d.slug: d.audience for d in read.items if isinstance(d, SourceDocument)}
    assert audiences == {"internal": "staff", "members": "member"}
    (error,) = [e for e in read.items if isinstance(e, IngestFileError)]
    assert "unknown audience 'partners'" in error.message and "FRONT_MATTER_AUDIENCES" in error.message
    # Mapped, the value is no longer unknown.
    mapped = FrontMatterRules(audiences=parse_audience_rules("audience:partners=member"))
    odd = read_folder(tmp_path / "odd.md", max_bytes=10_000, today=TODAY, rules=mapped).items[0]
    assert isinstance(odd, SourceDocument) and odd.audience == "member"
    with pytest.raises(ValueError, match="KEY:VALUE=AUDIENCE"):
        parse_audience_rules("visibility=staff")


def test_the_strict_format_refuses_other_tools_front_matter_field_by_field(tmp_path):
    (tmp_path / "a.md").write_text((EXPORTS / "jekyll" / "docs" / "browser-extension.md").read_text())
    (tmp_path / "b.md").write_text("# B\n\nNo front matter.\n")
    read = read_folder(tmp_path, max_bytes=10_000, today=TODAY, rules=FrontMatterRules(strict=True))
    messages = {Path(e.path).name: e.message for e in read.items if isinstance(e, IngestFileError)}
    assert set(messages) == {"a.md", "b.md"}
    assert "no YAML front matter" in messages["b.md"]


@pytest.mark.django_db
@pytest.mark.parametrize("tool", TOOLS)
def test_an_export_ingests_with_no_failure_and_its_chunks_quote_code_and_urls_byte_for_byte(tool, embedder):
    out, err = io.StringIO(), io.StringIO()
    call_command("ingest", str(EXPORTS / tool / "docs"), "--collection", f"export-{tool}", stdout=out, stderr=err)
    assert ", 0 failed," in out.getvalue() and "error:" not in err.getvalue()
    assert "front matter keys supportbot does not use were ignored" in err.getvalue()
    chunks = list(Chunk.objects.filter(collection__name=f"export-{tool}").values_list("text", flat=True))
    live = Article.objects.filter(collection__name=f"export-{tool}", retired_at__isnull=True).count()
    assert chunks and live == len(published(tool))
    text = "\n".join(chunks)
    for chunk in chunks:
        assert TEMPLATE_SYNTAX.findall(prose(chunk)) == [], chunk
    spans = [span for page in published(tool) for span in code_spans(page.read_text())]
    assert spans
    assert [span for span in spans if span not in text] == []


def ingested_text(tool: str) -> str:
    """The chunks' text once an export is ingested."""
    call_command(
        "ingest", str(EXPORTS / tool / "docs"), "--collection", tool, stdout=io.StringIO(), stderr=io.StringIO()
    )
    return "\n".join(Chunk.objects.filter(collection__name=tool).values_list("text", flat=True))


@pytest.mark.django_db
def test_what_the_jekyll_page_shows_reaches_its_chunks(embedder):
    text = ingested_text("jekyll")
    assert "`chrome://extensions/shortcuts`" in text
    assert "<https://developer.chrome.com/docs/extensions/reference/commands>" in text  # the autolink whole
    assert "Warning: Shortcuts that another extension already uses are silently ignored" in text
    assert "**OK** → **Save**" in text  # &rarr; decoded
    assert "| Firefox | `about:addons`, then the *gear* icon |" in text  # a row with inline HTML kept
    assert "`{{ username }}`" in text  # {% raw %} keeps what it holds
    summary = ArticleVersion.objects.get(article__slug="browser-extension", status="published").summary
    assert summary == "Change or turn off the extension's keyboard shortcuts."


@pytest.mark.django_db
def test_a_placeholder_outside_code_reaches_the_chunks(embedder):
    assert "Replace <server> with the address your admin gave you." in ingested_text("hugo")


@pytest.mark.django_db
def test_the_strict_flag_refuses_an_export_and_writes_nothing(embedder):
    with pytest.raises(CommandError, match="failed"):
        call_command(
            "ingest",
            str(EXPORTS / "docusaurus" / "docs"),
            "--collection",
            "strict",
            "--strict-front-matter",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
    assert not Article.objects.filter(collection__name="strict").exists()
