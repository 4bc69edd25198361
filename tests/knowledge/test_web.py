"""The web importer against a real HTTP server on loopback serving help-centre pages: a sitemap, robots.txt,
redirects within and off the host, a page with no main content, a 50 MB page and a slow one; and
`manage.py ingest --format web` syncing a sitemap with hash-skip, new versions and retirement."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from knowledge.errors import IngestFileError
from knowledge.models import Article, ArticleVersion, Chunk
from knowledge.sources import SourceDocument
from knowledge.web import WebLimits, page_slug, read_web_source
from tests.loopback import free_port

LIMITS = WebLimits(max_bytes=200_000, timeout_s=1.0, max_pages=50)


def help_page(title: str, sections: str) -> bytes:
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title} | Lumen &amp; Oak Help</title></head>
<body><header><nav><a href="/">Home</a> <a href="/hc">Help centre</a> <a href="/contact">Contact us</a></nav></header>
<aside class="sidebar"><h4>In this section</h4><ul><li><a href="/hc/delivery">Delivery</a></li>
<li><a href="/hc/payments">Payments</a></li></ul></aside>
<main><article><h1>{title}</h1>{sections}</article></main>
<footer><p>© 2026 Lumen &amp; Oak · Privacy policy · Cookie settings</p></footer>
<script>window.dataLayer = [];</script></body></html>""".encode()


RETURNS = help_page(
    "Returning an item",
    "<p>You can return most items within <strong>30 days</strong> of delivery. Items must be unused and in "
    "their original packaging.</p><h2>Start a return</h2><ol><li>Sign in and open Your orders.</li>"
    "<li>Select Return items next to the order.</li><li>Print the label and drop the parcel at any Parcelpoint "
    "shop.</li></ol><h2>Return costs</h2><table><thead><tr><th>Item</th><th>Cost</th></tr></thead><tbody>"
    "<tr><td>Furniture</td><td>EUR 25 collection fee</td></tr><tr><td>Lighting and decor</td><td>Free</td></tr>"
    "</tbody></table><h3>Refund timing</h3><p>Refunds reach your card within 5 to 10 working days after we "
    "receive the item.</p>",
)
DELIVERY = help_page(
    "Delivery",
    "<h2>Where we deliver</h2><p>We deliver to addresses in the UK, Ireland and France. Standard delivery takes "
    "3 to 5 working days, and large furniture comes with a two-person team who carry it to the room you choose."
    "</p><h2>Tracking</h2><p>Every order has a tracking link in its confirmation e-mail. The link works from the "
    "moment the parcel leaves our warehouse until it is delivered.</p>",
)
PAYMENTS = help_page(
    "Payments",
    "<h2>Ways to pay</h2><p>We take Visa, Mastercard, American Express, PayPal and bank transfer. Bank transfers "
    "must arrive within 7 days of the order, or the order is cancelled and the goods go back on sale.</p>",
)
NAV_ONLY = b"""<!doctype html><html><head><title>Help</title></head><body><nav><a href="/">Home</a></nav>
<footer>Privacy</footer></body></html>"""


def sitemap(*paths: str, base: str) -> bytes:
    urls = "".join(f"<url><loc>{p if p.startswith('http') else base + p}</loc></url>" for p in paths)
    return (
        '<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"{urls}</urlset>"
    ).encode()


class Site:
    """What the server serves: path → (status, headers, body); editable by a test between syncs."""

    def __init__(self, base: str) -> None:
        self.base = base
        html = {"Content-Type": "text/html; charset=utf-8"}
        self.routes: dict[str, tuple[int, dict[str, str], bytes]] = {
            "/robots.txt": (200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /internal/\n"),
            "/hc/returns": (200, {**html, "Last-Modified": "Tue, 03 Nov 2026 10:00:00 GMT"}, RETURNS),
            "/hc/delivery.html": (200, html, DELIVERY),
            "/hc/payments": (200, html, PAYMENTS),
            "/old/payments": (301, {"Location": "/hc/payments"}, b""),
            "/hc/leaves": (302, {"Location": "http://elsewhere.example/phish"}, b""),
            "/internal/notes": (200, html, help_page("Staff notes", "<p>Internal only.</p>")),
            "/hc/nav-only": (200, html, NAV_ONLY),
            "/hc/missing": (404, html, b"not found"),
        }
        self.set_sitemap("/sitemap.xml", "/hc/returns", "/hc/delivery.html", "/old/payments")
        self.set_sitemap(
            "/sitemap-everything.xml",
            "/hc/returns",
            "/hc/delivery.html",
            "/old/payments",
            "/internal/notes",
            "/hc/nav-only",
            "/hc/huge",
            "/hc/slow",
            "/hc/leaves",
            "/hc/missing",
            "http://elsewhere.example/hc/x",
        )

    def set_sitemap(self, path: str, *pages: str) -> None:
        self.routes[path] = (200, {"Content-Type": "application/xml"}, sitemap(*pages, base=self.base))


@pytest.fixture
def site() -> Iterator[Site]:
    port = free_port()
    served = Site(f"http://127.0.0.1:{port}")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/hc/slow":
                time.sleep(3)
            if self.path == "/hc/huge":  # 50 MB, sent until the reader stops reading
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                try:
                    for _ in range(800):
                        self.wfile.write(b"<p>" + b"x" * 65_536 + b"</p>")
                except (BrokenPipeError, ConnectionResetError):
                    pass
                return
            status, headers, body = served.routes.get(self.path, (404, {}, b"not found"))
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    class Server(ThreadingHTTPServer):
        def handle_error(self, request: object, client_address: object) -> None:
            pass  # a client that gave up on the slow or the huge page, as the tests mean it to

    server = Server(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield served
    server.shutdown()
    server.server_close()


def test_a_sitemap_brings_its_pages_and_names_every_page_it_could_not(site):
    read = read_web_source(f"{site.base}/sitemap-everything.xml", limits=LIMITS)
    assert read.lists_every_page
    docs = [i for i in read.items if isinstance(i, SourceDocument)]
    assert sorted(d.slug for d in docs) == ["hc-delivery", "hc-payments", "hc-returns"]  # /old/payments redirected
    errors = " | ".join(str(i) for i in read.items if isinstance(i, IngestFileError))
    assert f"{site.base}/internal/notes: robots.txt disallows it" in errors
    assert f"{site.base}/hc/nav-only: no main content found" in errors
    assert f"{site.base}/hc/huge is over the limit of 200,000 bytes" in errors
    assert f"{site.base}/hc/slow could not be fetched: timed out" in errors
    assert "http://elsewhere.example/phish is not on 127.0.0.1" in errors  # a redirect off the host
    assert "http://elsewhere.example/hc/x: not on 127.0.0.1" in errors  # a sitemap entry off the host
    assert f"{site.base}/hc/missing answered 404" in errors
    assert len(read.items) == 10


def test_a_page_is_its_main_content_as_markdown(site):
    read = read_web_source(f"{site.base}/hc/returns", audience="member", limits=LIMITS, today=date(2026, 12, 1))
    assert not read.lists_every_page  # one page says nothing about the others
    [doc] = read.items
    assert isinstance(doc, SourceDocument)
    assert (doc.slug, doc.title, doc.audience, doc.language) == ("hc-returns", "Returning an item", "member", "en")
    assert doc.effective_date == date(2026, 11, 3)  # from Last-Modified
    body = doc.body
    assert body.startswith("# Returning an item\n")
    assert "## Start a return" in body and "### Refund timing" in body
    assert "1. Sign in and open Your orders." in body
    assert "| Furniture | EUR 25 collection fee |" in body
    for furniture in ("Contact us", "In this section", "Cookie settings", "dataLayer"):
        assert furniture not in body


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("ftp://127.0.0.1/sitemap.xml", "not an http(s) address"),
        ("http://127.0.0.1:{closed}/hc/returns", "could not be fetched"),
    ],
)
def test_an_unusable_address_is_one_clear_error(address, message):
    read = read_web_source(address.format(closed=free_port()), limits=LIMITS)
    [error] = read.items
    assert isinstance(error, IngestFileError) and message in str(error)


def test_a_sitemap_served_as_plain_text_is_still_a_sitemap(site):
    _, _, body = site.routes["/sitemap.xml"]
    site.routes["/sitemap.xml"] = (200, {"Content-Type": "application/octet-stream"}, body)
    read = read_web_source(f"{site.base}/sitemap.xml", limits=LIMITS)
    assert read.lists_every_page and len(read.items) == 3


def test_a_sitemap_index_is_followed_one_level_and_never_round(site):
    index = (
        '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{site.base}/sitemap.xml</loc></sitemap></sitemapindex>"
    ).encode()
    site.routes["/index.xml"] = (200, {"Content-Type": "application/xml"}, index)
    assert len(read_web_source(f"{site.base}/index.xml", limits=LIMITS).items) == 3
    looping = index.replace(b"/sitemap.xml", b"/index.xml")
    site.routes["/index.xml"] = (200, {"Content-Type": "application/xml"}, looping)
    [error] = read_web_source(f"{site.base}/index.xml", limits=LIMITS).items
    assert "is a sitemap index inside a sitemap index" in str(error)


def test_a_broken_sitemap_is_one_clear_error(site):
    site.routes["/sitemap.xml"] = (200, {"Content-Type": "application/xml"}, b"<urlset><url><loc>")
    [error] = read_web_source(f"{site.base}/sitemap.xml", limits=LIMITS).items
    assert "is not a sitemap" in str(error)


def test_a_page_says_its_language(site):
    status, headers, body = site.routes["/hc/payments"]
    site.routes["/hc/payments"] = (status, headers, body.replace(b'<html lang="en">', b'<html lang="de-AT">'))
    [doc] = read_web_source(f"{site.base}/hc/payments", limits=LIMITS).items
    assert isinstance(doc, SourceDocument) and doc.language == "de-at"


def test_page_ids_come_from_the_path():
    assert page_slug("https://help.example.com/hc/en-us/articles/360-Returns.html") == "hc-en-us-articles-360-Returns"
    assert page_slug("https://help.example.com/") == "index"


@pytest.mark.django_db
def test_syncing_a_sitemap_skips_what_is_unchanged_versions_edits_and_retires_what_it_dropped(
    site, embedder, settings, capsys
):
    settings.WEB_FETCH_TIMEOUT_S = 2
    args = [f"{site.base}/sitemap.xml", "--collection", "web", "--format", "web"]
    call_command("ingest", *args)
    assert "3 new, 0 changed, 0 unchanged, 0 failed, 0 retired" in capsys.readouterr().out
    returns = ArticleVersion.objects.get(article__slug="hc-returns")
    assert returns.audience == "public" and returns.article.title == "Returning an item"
    assert "EUR 25 collection fee" in " ".join(Chunk.objects.filter(version=returns).values_list("text", flat=True))

    call_command("ingest", *args)
    unchanged = capsys.readouterr().out
    assert "0 new, 0 changed, 3 unchanged" in unchanged and "embedding calls: 0 " in unchanged

    status, headers, _ = site.routes["/hc/returns"]
    site.routes["/hc/returns"] = (status, headers, RETURNS.replace(b"30 days", b"45 days"))
    site.set_sitemap("/sitemap.xml", "/hc/returns", "/old/payments")  # delivery dropped from the site
    call_command("ingest", *args)
    assert "1 new, 0 changed, 1 unchanged, 0 failed, 1 retired" in capsys.readouterr().out
    statuses = sorted(ArticleVersion.objects.filter(article__slug="hc-returns").values_list("status", flat=True))
    assert statuses == ["published", "superseded"]
    assert Article.objects.get(slug="hc-delivery").retired_at is not None


@pytest.mark.django_db
def test_a_sitemap_with_failures_ingests_the_rest_retires_nothing_and_exits_non_zero(site, embedder, capsys):
    call_command("ingest", f"{site.base}/sitemap.xml", "--collection", "web", "--format", "web")
    capsys.readouterr()
    site.set_sitemap("/sitemap.xml", "/hc/returns", "/hc/missing")
    with pytest.raises(CommandError, match="1 document"):
        call_command("ingest", f"{site.base}/sitemap.xml", "--collection", "web", "--format", "web")
    captured = capsys.readouterr()
    assert "/hc/missing answered 404" in captured.err and "0 retired" in captured.out
    assert not Article.objects.filter(retired_at__isnull=False).exists()


def test_audience_is_for_web_sources_only(sample_dir):
    with pytest.raises(CommandError, match="--audience applies to --format web only"):
        call_command("ingest", str(sample_dir), "--collection", "x", "--audience", "member")
