"""A Zendesk Help Center export as source documents: the JSON its Help Center API returns for articles
(``GET /api/v2/help_center/articles.json``: ``{"articles": [...], "next_page": ...}``), one page in a file or
every page in a folder. Bodies are HTML and become Markdown with their headings, lists and tables kept.

Pure functions, like knowledge/sources.py: every problem becomes an IngestFileError naming the file, the
article and the field, and the other articles still come through.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from bs4 import BeautifulSoup
from markdownify import markdownify

from knowledge.errors import IngestFileError
from knowledge.sources import AUDIENCES, LANGUAGE_CODE, SourceDocument

# An API page holds up to 100 articles, so a page may be this many times an article's size limit.
ARTICLES_PER_PAGE = 100
# Elements whose content is never article text: scripts, styles, embedded players and forms.
_DROPPED_ELEMENTS = ("script", "style", "noscript", "iframe", "object", "embed", "form", "svg")
_SEGMENT = re.compile(r"^(\d+)=([a-z]+)$")


def parse_segments(values: list[str]) -> dict[int, str]:
    """``--segment 360001=member`` options as user segment id → audience; a ValueError names a bad one."""
    segments: dict[int, str] = {}
    for value in values:
        match = _SEGMENT.match(value.strip())
        if not match or match.group(2) not in AUDIENCES:
            raise ValueError(
                f"{value!r} is not SEGMENT_ID=AUDIENCE with an audience of {', '.join(AUDIENCES)} (e.g. 360001=member)"
            )
        segments[int(match.group(1))] = match.group(2)
    return segments


def html_to_markdown(html: str) -> str:
    """An article body as Markdown: ATX headings, lists and pipe tables kept; images become their alt text
    (the chat shows none, and the ingestion's planted-text check would read an outside image as an attack);
    scripts, styles and embeds dropped with their content."""
    soup = BeautifulSoup(html, "html.parser")
    for element in soup.find_all(_DROPPED_ELEMENTS):
        element.decompose()
    for image in soup.find_all("img"):
        alt = str(image.get("alt") or "").strip()
        image.replace_with(alt)
    markdown = markdownify(str(soup), heading_style="ATX", bullets="-", strip=["span", "div", "font"])
    return re.sub(r"\n{3,}", "\n\n", markdown).strip()


def _timestamp(article: Mapping[str, Any]) -> str | None:
    # edited_at moves only when the text does; updated_at also moves for votes and comments.
    for name in ("edited_at", "updated_at", "created_at"):
        value = article.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def parse_article(
    path: str, index: int, article: Any, *, segments: Mapping[int, str], max_bytes: int
) -> SourceDocument | IngestFileError | None:
    """One article of an export page, or the error naming its field; None for a draft (not published, so
    not for customers)."""
    where = f"{path}: articles[{index}]"
    if not isinstance(article, dict):
        return IngestFileError(where, "not a JSON object")
    article_id = article.get("id")
    if not isinstance(article_id, int) or isinstance(article_id, bool) or article_id < 1:
        return IngestFileError(where, f"{article_id!r} is not an article id (a positive whole number)", field="id")
    where = f"{path}: article {article_id}"
    if article.get("draft") is True:
        return None
    title = article.get("title")
    if not isinstance(title, str) or not title.strip():
        return IngestFileError(where, "the article has no title", field="title")
    body = article.get("body")
    if not isinstance(body, str):
        return IngestFileError(where, "the article has no body (HTML text)", field="body")
    size = len(body.encode())
    if size > max_bytes:
        return IngestFileError(
            where, f"the body is {size:,} bytes, over the limit of {max_bytes:,} bytes", field="body"
        )
    markdown = html_to_markdown(body)
    if not markdown:
        return IngestFileError(where, "the body holds no text once its HTML is read", field="body")
    segment = article.get("user_segment_id")
    if segment is None:
        audience = "public"
    elif segment in segments:
        audience = segments[segment]
    else:
        # Never guessed as public: a segment exists to keep an article from some readers.
        return IngestFileError(
            where,
            f"user segment {segment} has no audience: pass --segment {segment}=member (or staff, public)",
            field="user_segment_id",
        )
    stamp = _timestamp(article)
    if stamp is None:
        return IngestFileError(where, "the article has no edited_at, updated_at or created_at", field="edited_at")
    try:
        effective = datetime.fromisoformat(stamp.replace("Z", "+00:00")).date()
    except ValueError:
        return IngestFileError(where, f"{stamp!r} is not an ISO 8601 time", field="edited_at")
    language = str(article.get("locale") or "en").strip().lower()
    if not LANGUAGE_CODE.match(language):
        return IngestFileError(where, f"{language!r} is not a locale such as 'en-us'", field="locale")
    content = json.dumps([article_id, title, body, audience, language, stamp], ensure_ascii=False)
    return SourceDocument(
        path=str(article.get("html_url") or where)[:500],
        slug=f"zendesk-{article_id}",
        title=" ".join(title.split())[:300],
        product="",
        language=language,
        # Each edit is a version of its own, in force from the day it was made; older ones stay as history.
        version_label=stamp[:50],
        effective_date=effective,
        audience=audience,
        supersedes=None,
        body=f"# {' '.join(title.split())}\n\n{markdown}\n",
        content_hash=hashlib.sha256(content.encode()).hexdigest(),
    )


def parse_export_page(
    path: str, raw: bytes, *, segments: Mapping[int, str], max_bytes: int, whole_export: bool
) -> Iterator[SourceDocument | IngestFileError]:
    """The articles of one page of the export, each body at most ``max_bytes``. ``whole_export``: this page is
    all there is, so it must not say that more pages follow (the articles on those would otherwise look
    deleted)."""
    if len(raw) > max_bytes * ARTICLES_PER_PAGE:
        limit = max_bytes * ARTICLES_PER_PAGE
        yield IngestFileError(path, f"file is {len(raw):,} bytes, over the limit of {limit:,} bytes for a page")
        return
    try:
        page = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        yield IngestFileError(path, f"not JSON: {exc}")
        return
    if not isinstance(page, dict) or not isinstance(page.get("articles"), list):
        yield IngestFileError(path, 'not a Help Center articles page (no "articles" list)', field="articles")
        return
    for index, article in enumerate(page["articles"]):
        parsed = parse_article(path, index, article, segments=segments, max_bytes=max_bytes)
        if parsed is not None:
            yield parsed
    if whole_export and page.get("next_page"):
        yield IngestFileError(
            path,
            "this page says more follow (next_page is set); save every page into one folder and ingest the "
            "folder, so that articles on the other pages are not taken as deleted",
            field="next_page",
        )


def read_zendesk_export(
    root: Path, *, segments: Mapping[int, str], max_bytes: int
) -> Iterator[SourceDocument | IngestFileError]:
    """Every article of an export: one page file, or every *.json page in a folder (in name order); each
    article's body at most ``max_bytes``."""
    paths = sorted(root.glob("*.json")) if root.is_dir() else [root]
    for path in paths:
        yield from parse_export_page(
            str(path), path.read_bytes(), segments=segments, max_bytes=max_bytes, whole_export=not root.is_dir()
        )
