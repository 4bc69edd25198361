"""The Zendesk Help Center importer: an export page as the Help Center API returns it (tests/knowledge/zendesk/)
read into source documents, and synced by `manage.py ingest --format zendesk` with hash-skip, versions,
retirement and per-article errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from knowledge.errors import IngestFileError
from knowledge.models import Article, ArticleVersion, Chunk
from knowledge.sources import SourceDocument
from knowledge.zendesk import html_to_markdown, parse_export_page, parse_segments, read_zendesk_export

EXPORT = Path(__file__).parent / "zendesk" / "articles-1.json"
MEMBERS = 7001


def page(*articles: dict[str, Any], next_page: str | None = None) -> bytes:
    return json.dumps({"articles": list(articles), "next_page": next_page}).encode()


def article(**fields: Any) -> dict[str, Any]:
    base = {
        "id": 42,
        "title": "Delivery times",
        "body": "<p>Sofas arrive within 3 weeks.</p>",
        "edited_at": "2026-05-01T10:00:00Z",
        "user_segment_id": None,
        "locale": "en-us",
        "draft": False,
    }
    return {**base, **fields}


def read(raw: bytes, *, whole_export: bool = True) -> list[SourceDocument | IngestFileError]:
    return list(
        parse_export_page("p.json", raw, segments={MEMBERS: "member"}, max_bytes=10_000, whole_export=whole_export)
    )


def test_html_becomes_markdown_with_headings_lists_and_tables_and_no_scripts_or_images():
    markdown = html_to_markdown(json.loads(EXPORT.read_text())["articles"][0]["body"])
    assert "## Start a return" in markdown and "## Return costs" in markdown
    assert "1. Sign in and open [Your orders](https://lumenoak.example/orders)." in markdown
    assert "| Furniture | EUR 25 collection fee |" in markdown
    assert "You can return most items within **30 days** of delivery." in markdown
    assert "Refunds reach your card within 5 to 10 working days" in markdown
    assert "A return label" in markdown and "label.png" not in markdown and "![" not in markdown
    assert "analytics" not in markdown and "<" not in markdown


def test_an_export_page_gives_its_published_articles_with_their_audience():
    docs = list(read_zendesk_export(EXPORT, segments=parse_segments([f"{MEMBERS}=member"]), max_bytes=100_000))
    assert all(isinstance(d, SourceDocument) for d in docs)
    returns, members = docs  # the draft is left out: customers cannot see it in Zendesk either
    assert (returns.slug, returns.audience, returns.language) == ("zendesk-360011111101", "public", "en-us")
    # The text's own edit time, not updated_at (which also moves on votes).
    assert (returns.version_label, str(returns.effective_date)) == ("2026-10-02T08:30:00Z", "2026-10-02")
    assert returns.body.startswith("# Returning an item\n\n") and returns.path.endswith("-Returning-an-item")
    assert (members.slug, members.audience) == ("zendesk-360011111102", "member")


@pytest.mark.parametrize(
    ("raw", "field", "message"),
    [
        (b"{not json", None, "not JSON"),
        (b'{"results": []}', "articles", 'no "articles" list'),
        (page(article(id="42")), "id", "is not an article id"),
        (page(article(title=" ")), "title", "has no title"),
        (page(article(body=None)), "body", "has no body"),
        (page(article(body="<script>x()</script><img src=a.png>")), "body", "holds no text"),
        (page(article(body="<p>" + "x" * 10_001 + "</p>")), "body", "over the limit"),
        (page(article(user_segment_id=9)), "user_segment_id", "user segment 9 has no audience: pass --segment 9="),
        (page(article(edited_at=None, updated_at=None)), "edited_at", "has no edited_at"),
        (page(article(edited_at="yesterday")), "edited_at", "is not an ISO 8601 time"),
        (page(article(locale="English")), "locale", "is not a locale"),
        (
            page(article(), next_page="https://x.zendesk.com/api/v2/help_center/articles.json?page=2"),
            "next_page",
            "more follow",
        ),
    ],
)
def test_a_bad_export_names_the_article_and_field(raw, field, message):
    errors = [item for item in read(raw) if isinstance(item, IngestFileError)]
    assert len(errors) == 1 and message in str(errors[0]) and errors[0].field == field, errors


def test_one_bad_article_does_not_stop_the_others():
    items = read(page(article(id=1, title=""), article(id=2)))
    assert [type(i).__name__ for i in items] == ["IngestFileError", "SourceDocument"]
    assert "article 1" in str(items[0])


@pytest.mark.parametrize("value", ["7001", "7001=vip", "abc=member", "7001=member=staff"])
def test_a_bad_segment_mapping_is_refused(value):
    with pytest.raises(ValueError, match="SEGMENT_ID=AUDIENCE"):
        parse_segments([value])


@pytest.mark.django_db
def test_syncing_an_export_skips_what_is_unchanged_keeps_versions_and_retires_what_disappeared(
    embedder, tmp_path, capsys
):
    export = tmp_path / "export"
    export.mkdir()
    (export / "articles-1.json").write_bytes(EXPORT.read_bytes())
    args = [str(export), "--collection", "zd", "--format", "zendesk", "--segment", f"{MEMBERS}=member"]

    call_command("ingest", *args)
    assert "2 new, 0 changed, 0 unchanged, 0 failed, 0 retired" in capsys.readouterr().out
    returns = ArticleVersion.objects.get(article__slug="zendesk-360011111101")
    assert returns.audience == "public" and returns.article.title == "Returning an item"
    assert ArticleVersion.objects.get(article__slug="zendesk-360011111102").audience == "member"
    texts = " ".join(Chunk.objects.filter(version=returns).values_list("text", flat=True))
    assert "EUR 25 collection fee" in texts and "Parcelpoint" in texts

    call_command("ingest", *args)
    unchanged = capsys.readouterr().out
    assert "0 new, 0 changed, 2 unchanged" in unchanged and "embedding calls: 0 " in unchanged

    # The returns article is edited and the member article deleted in Zendesk.
    data = json.loads(EXPORT.read_text())
    edited = data["articles"][0]
    edited["edited_at"] = "2026-11-25T12:00:00Z"
    edited["body"] = edited["body"].replace("30 days", "45 days")
    data["articles"] = [edited]
    (export / "articles-1.json").write_text(json.dumps(data))
    call_command("ingest", *args)
    assert "1 new, 0 changed, 0 unchanged, 0 failed, 1 retired" in capsys.readouterr().out
    versions = dict(
        ArticleVersion.objects.filter(article__slug="zendesk-360011111101").values_list("version_label", "status")
    )
    assert versions == {"2026-10-02T08:30:00Z": "superseded", "2026-11-25T12:00:00Z": "published"}
    assert Article.objects.get(slug="zendesk-360011111102").retired_at is not None


@pytest.mark.django_db
def test_an_unmapped_segment_fails_that_article_retires_nothing_and_exits_non_zero(embedder, capsys):
    with pytest.raises(CommandError, match="1 document"):
        call_command("ingest", str(EXPORT), "--collection", "zd", "--format", "zendesk")
    err = capsys.readouterr().err
    assert "user segment 7001 has no audience" in err
    assert list(Article.objects.values_list("slug", flat=True)) == ["zendesk-360011111101"]


def test_segments_are_for_zendesk_only(sample_dir):
    with pytest.raises(CommandError, match="--segment applies to --format zendesk only"):
        call_command("ingest", str(sample_dir), "--collection", "x", "--segment", "1=member")
