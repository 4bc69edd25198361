"""The public help centre: which version of an article customers see, its HTML, and links to its sections.

The chat cites a chunk as help_url(article slug, chunk heading path); render_article gives each heading
the id that link points to, so both sides derive the anchor from the same heading text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from itertools import pairwise

from django.db.models import prefetch_related_objects
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import slugify
from markdown_it import MarkdownIt
from markdown_it.token import Token

from knowledge.chunking import HEADING_SEPARATOR
from knowledge.models import ArticleVersion, Audience, Collection
from knowledge.scope import Scope

# Raw HTML in an article is shown as text, never passed through: articles are written in an editor,
# not reviewed as code, and the pages are public.
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    anchor: str


def section_anchor(heading: str) -> str:
    """The URL fragment of a heading: an ASCII slug of its text.

    Text with no ASCII letters or digits (a heading in Greek, say) slugs to nothing and falls back to
    "section", so such headings are told apart only by their -2, -3 suffixes.
    """
    return slugify(heading) or "section"


def help_url(article_slug: str, heading_path: str) -> str:
    """The page of an article, at the section a chunk with this heading path belongs to."""
    page = reverse("help-article", args=[article_slug])
    headings = heading_path.split(HEADING_SEPARATOR)
    # A one-element path is the article's title (or text above its first heading): the page itself.
    if len(headings) < 2:
        return page
    return f"{page}#{section_anchor(headings[-1])}"


def _anchored(body_markdown: str) -> tuple[list[Token], list[Heading]]:
    """The body's tokens with an id on every heading, and the headings in order.

    The anchor is made from the heading's source text, as the chunker saw it, so that a chunk's heading
    path and the page agree. Two headings with the same anchor get -2, -3 on the later ones; a citation
    names only the heading text, so it always lands on the first of them.
    """
    tokens = _MARKDOWN.parse(body_markdown)
    headings: list[Heading] = []
    used: set[str] = set()
    for opening, inline in pairwise(tokens):
        if opening.type != "heading_open":
            continue
        base = anchor = section_anchor(inline.content)
        n = 2
        while anchor in used:
            anchor = f"{base}-{n}"
            n += 1
        used.add(anchor)
        opening.attrSet("id", anchor)
        text = "".join(child.content for child in inline.children or [] if child.type in ("text", "code_inline"))
        headings.append(Heading(level=int(opening.tag[1:]), text=text, anchor=anchor))
    return tokens, headings


def _is_own_address(src: str) -> bool:
    return src.startswith("/") and not src.startswith("//")


def _without_outside_images(tokens: list[Token]) -> None:
    """An image from another host becomes its alt text: a reader's browser fetches an image unasked, so a
    planted one could carry the page's visitors (and what its address encodes) to someone else's server."""
    for token in tokens:
        for i, child in enumerate(token.children or []):
            if child.type == "image" and not _is_own_address(str(child.attrGet("src") or "")):
                alt = Token("text", "", 0)
                alt.content = child.content
                token.children[i] = alt  # type: ignore[index]


def render_article(body_markdown: str, *, without_title: bool = False) -> SafeString:
    """An article body as HTML, every heading with its section anchor as id; images only from this site.

    without_title leaves out a level-1 heading that opens the body, for a page that prints the title
    itself; the anchors of the other headings are unchanged.
    """
    tokens, _ = _anchored(body_markdown)
    _without_outside_images(tokens)
    if without_title and tokens and tokens[0].type == "heading_open" and tokens[0].tag == "h1":
        tokens = tokens[3:]  # heading_open, inline, heading_close
    html = _MARKDOWN.renderer.render(tokens, _MARKDOWN.options, {})
    # Safe because the parser was built with html disabled: every tag in the output is markdown-it's own.
    return mark_safe(html)


def table_of_contents(body_markdown: str) -> list[Heading]:
    """Every heading of an article body, in order, with the anchor render_article gives it."""
    return _anchored(body_markdown)[1]


def _in_force(collection: Collection, today: date, slug: str | None = None) -> list[ArticleVersion]:
    # The chat's scope rule for the public audience on that day (collection, article not retired, audience,
    # the version in force), reused so that a page shows exactly what the chat may cite.
    where, params = Scope(collection.pk, Audience.PUBLIC, "as_of", today).where(of_chunks=False)
    sql = f"SELECT v.* FROM knowledge_articleversion v JOIN knowledge_article a ON a.id = v.article_id WHERE {where}"
    if slug is not None:
        params["help_slug"] = slug
        sql += " AND a.slug = %(help_slug)s"
    sql += " ORDER BY a.product, a.title, v.effective_date DESC, v.id DESC"
    versions = list(ArticleVersion.objects.raw(sql, params))
    prefetch_related_objects(versions, "article")
    return versions


def public_versions(collection: Collection, today: date) -> list[ArticleVersion]:
    """The public articles of a collection in force today, one version each, by product then title."""
    return _in_force(collection, today)


def public_version(collection: Collection, slug: str, today: date) -> ArticleVersion | None:
    """The version of an article that customers see today, or None when there is none to show them."""
    versions = _in_force(collection, today, slug)
    return versions[0] if versions else None
