"""Help-centre pages on the web as source documents: one HTML page, or every page a sitemap.xml lists.

Fetching keeps to the source's own host (redirects included), obeys its robots.txt, and stops a page at a
size and a time limit. The main content of each page (no navigation, sidebars or footers) is extracted with
trafilatura, as Markdown with its headings, lists and tables. Every problem becomes an IngestFileError naming
the address, and the other pages still come through.
"""

from __future__ import annotations

import hashlib
import re
import urllib.error
import urllib.request
import urllib.robotparser
from dataclasses import dataclass
from datetime import date
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit
from xml.etree import ElementTree

import trafilatura

from knowledge.errors import IngestFileError
from knowledge.sources import AUDIENCES, SourceDocument, SourceRead

USER_AGENT = "supportbot-importer/1.0"
_SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
# Fewer words than this besides headings is navigation or an empty page, not an article.
MIN_CONTENT_WORDS = 8
_HTML_LANG = re.compile(r"<html\b[^>]*\blang=[\"']?([A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})?)", re.IGNORECASE)
_SLUG_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class WebLimits:
    max_bytes: int = 5_000_000
    timeout_s: float = 15.0
    max_pages: int = 500
    max_redirects: int = 5


@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    body: bytes
    content_type: str
    last_modified: date | None


class FetchError(Exception):
    pass


def _same_host(url: str, host: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects are followed by fetch() itself, so that each hop is checked against the source's host."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def fetch(url: str, *, host: str, limits: WebLimits) -> Fetched:
    """GET one address of the source's host, following at most max_redirects redirects within that host."""
    for _ in range(limits.max_redirects + 1):
        if not _same_host(url, host):
            raise FetchError(f"{url} is not on {host}: only the source's own host is fetched")
        request = urllib.request.Request(
            url, headers={"User-Agent": USER_AGENT, "Accept": "text/html, application/xml"}
        )
        try:
            with _OPENER.open(request, timeout=limits.timeout_s) as response:
                length = response.headers.get("Content-Length")
                if length is not None and length.isdigit() and int(length) > limits.max_bytes:
                    raise FetchError(f"{url} is {int(length):,} bytes, over the limit of {limits.max_bytes:,}")
                body = response.read(limits.max_bytes + 1)
                if len(body) > limits.max_bytes:
                    raise FetchError(f"{url} is over the limit of {limits.max_bytes:,} bytes")
                modified = response.headers.get("Last-Modified")
                return Fetched(
                    url=response.geturl(),
                    body=body,
                    content_type=response.headers.get_content_type(),
                    last_modified=_http_date(modified),
                )
        except urllib.error.HTTPError as exc:
            if exc.code in (301, 302, 303, 307, 308) and exc.headers.get("Location"):
                url = urljoin(url, exc.headers["Location"])
                continue
            raise FetchError(f"{url} answered {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise FetchError(f"{url} could not be fetched: {reason}") from None
    raise FetchError(f"{url}: more than {limits.max_redirects} redirects")


def _http_date(value: str | None) -> date | None:
    if not value:
        return None
    try:
        return parsedate_to_datetime(value).date()
    except (TypeError, ValueError):
        return None


def _language_of(html: str) -> str:
    """The page's declared language (<html lang="en-GB"> → en-gb), English when it declares none."""
    declared = _HTML_LANG.search(html[:5_000])
    return declared.group(1).lower() if declared else "en"


def page_slug(url: str) -> str:
    """A stable id from the page's path: /hc/en-us/returns.html → hc-en-us-returns."""
    path = urlsplit(url).path.strip("/")
    path = re.sub(r"\.(html?|php|aspx?)$", "", path)
    slug = _SLUG_CHARS.sub("-", path).strip("-._")[:200]
    return slug or "index"


def page_document(fetched: Fetched, *, audience: str, today: date) -> SourceDocument:
    """A fetched HTML page as a document: its main content as Markdown, titled by the page."""
    if fetched.content_type not in ("text/html", "application/xhtml+xml"):
        raise IngestFileError(fetched.url, f"not an HTML page ({fetched.content_type})")
    html = fetched.body.decode("utf-8", errors="replace")
    extracted = trafilatura.extract(
        html,
        output_format="markdown",
        include_tables=True,
        include_formatting=True,
        include_links=False,
        include_images=False,
        include_comments=False,
        favor_recall=True,
    )
    markdown = (extracted or "").strip()
    prose = [line for line in markdown.splitlines() if not line.lstrip().startswith("#")]
    words = len(" ".join(prose).split())
    if words < MIN_CONTENT_WORDS:
        # The extractor falls back to whatever text there is: a page of links gives back "Home".
        raise IngestFileError(
            fetched.url,
            f"no main content found ({words} words besides headings; an article has {MIN_CONTENT_WORDS} or more)",
        )
    metadata = trafilatura.extract_metadata(html)
    first_heading = re.match(r"#\s+(.+)", markdown)
    title = (first_heading.group(1) if first_heading else (metadata.title if metadata else None)) or page_slug(
        fetched.url
    )
    body = markdown if first_heading else f"# {title}\n\n{markdown}"
    digest = hashlib.sha256(f"{audience}\n{body}".encode()).hexdigest()
    return SourceDocument(
        path=fetched.url[:500],
        slug=page_slug(fetched.url),
        title=" ".join(title.split())[:300],
        product="",
        language=_language_of(html),
        # A page has no version of its own: each new text is one, in force from when it changed.
        version_label=digest[:12],
        effective_date=fetched.last_modified or today,
        audience=audience,
        supersedes=None,
        body=body + "\n",
        content_hash=digest,
    )


def _is_sitemap(fetched: Fetched) -> bool:
    # Servers often label sitemaps text/plain or application/octet-stream: the start of the body decides too.
    start = fetched.body[:200].lstrip()
    return fetched.content_type in ("application/xml", "text/xml") or start.startswith(
        (b"<?xml", b"<urlset", b"<sitemapindex")
    )


def sitemap_urls(fetched: Fetched, *, host: str, limits: WebLimits, index_allowed: bool = True) -> list[str]:
    """The page addresses a sitemap lists (a sitemap index is followed one level: an index inside an index,
    or one listing itself, is refused rather than followed round)."""
    try:
        root = ElementTree.fromstring(fetched.body)
    except ElementTree.ParseError as exc:
        raise FetchError(f"{fetched.url} is not a sitemap (XML: {exc})") from None
    locations = [(loc.text or "").strip() for loc in root.iter(f"{_SITEMAP_NS}loc")]
    if root.tag == f"{_SITEMAP_NS}sitemapindex":
        if not index_allowed:
            raise FetchError(f"{fetched.url} is a sitemap index inside a sitemap index")
        pages: list[str] = []
        for nested in locations:
            pages += sitemap_urls(
                fetch(nested, host=host, limits=limits), host=host, limits=limits, index_allowed=False
            )
        return pages
    if root.tag != f"{_SITEMAP_NS}urlset":
        raise FetchError(f"{fetched.url} is not a sitemap (its root is <{root.tag}>, not <urlset>)")
    return [url for url in locations if url]


def _robots(start: str, host: str, limits: WebLimits) -> urllib.robotparser.RobotFileParser:
    scheme = urlsplit(start).scheme
    robots = urllib.robotparser.RobotFileParser()
    try:
        fetched = fetch(urlunsplit((scheme, host, "/robots.txt", "", "")), host=host, limits=limits)
    except FetchError:
        robots.parse([])  # no robots.txt (or none readable): everything is allowed, as crawlers take it
    else:
        robots.parse(fetched.body.decode("utf-8", errors="replace").splitlines())
    return robots


def read_web_source(
    url: str, *, audience: str = "public", limits: WebLimits = WebLimits(), today: date | None = None
) -> SourceRead:
    """The documents of a web source: the page at ``url``, or every page of the sitemap at ``url``."""
    if audience not in AUDIENCES:
        raise ValueError(f"unknown audience {audience!r} (expected one of: {', '.join(AUDIENCES)})")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return SourceRead([IngestFileError(url, "not an http(s) address")], lists_every_page=False)
    host = parts.netloc.lower()
    robots = _robots(url, host, limits)
    day = today or date.today()
    if not robots.can_fetch(USER_AGENT, url):
        return SourceRead([IngestFileError(url, "robots.txt disallows it")], lists_every_page=False)
    try:
        first = fetch(url, host=host, limits=limits)
    except FetchError as exc:
        return SourceRead([IngestFileError(url, str(exc))], lists_every_page=False)
    if not _is_sitemap(first):
        return SourceRead([_page(first, robots, audience=audience, day=day)], lists_every_page=False)
    try:
        addresses = sitemap_urls(first, host=host, limits=limits)
    except FetchError as exc:
        return SourceRead([IngestFileError(url, str(exc))], lists_every_page=False)
    items: list[SourceDocument | IngestFileError] = []
    if len(addresses) > limits.max_pages:
        items.append(
            IngestFileError(url, f"the sitemap lists {len(addresses):,} pages, over the limit of {limits.max_pages:,}")
        )
        addresses = addresses[: limits.max_pages]
    for address in addresses:
        if not _same_host(address, host):
            items.append(IngestFileError(address, f"not on {host}: only the source's own host is fetched"))
        elif not robots.can_fetch(USER_AGENT, address):
            items.append(IngestFileError(address, "robots.txt disallows it"))
        else:
            try:
                items.append(_page(fetch(address, host=host, limits=limits), robots, audience=audience, day=day))
            except FetchError as exc:
                items.append(IngestFileError(address, str(exc)))
    return SourceRead(items, lists_every_page=True)


def _page(
    fetched: Fetched, robots: urllib.robotparser.RobotFileParser, *, audience: str, day: date
) -> SourceDocument | IngestFileError:
    # Checked again after redirects: an allowed address may lead to a disallowed one.
    if not robots.can_fetch(USER_AGENT, fetched.url):
        return IngestFileError(fetched.url, "robots.txt disallows it")
    try:
        return page_document(fetched, audience=audience, today=day)
    except IngestFileError as exc:
        return exc
