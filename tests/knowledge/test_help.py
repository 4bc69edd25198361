"""The public help pages: anchors and links to a section, HTML kept safe, and only public articles in force shown."""

from datetime import date

import pytest
from django.http import Http404
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from knowledge import views
from knowledge.help import help_url, public_version, render_article, section_anchor, table_of_contents
from knowledge.models import Article, ArticleVersion, Audience, Chunk, VersionStatus


def test_it_makes_ascii_anchors_that_are_never_empty():
    assert section_anchor("When the money arrives") == "when-the-money-arrives"
    assert section_anchor("E-5001") == "e-5001"
    assert section_anchor("Café & crème") == "cafe-creme"
    assert section_anchor("★ ★") == "section"


def test_it_links_to_the_last_heading_of_a_path():
    assert help_url("refunds", "Refunds › When the money arrives") == "/help/refunds#when-the-money-arrives"
    assert help_url("care", "Product care › Wood furniture › Oiled finishes") == "/help/care#oiled-finishes"


def test_it_links_a_title_only_path_to_the_page():
    assert help_url("refunds", "Refunds") == "/help/refunds"


def test_it_links_articles_whose_ids_contain_dots():
    assert help_url("returns.eu", "Returns › Return window") == "/help/returns.eu#return-window"


def test_it_escapes_raw_html_in_an_article():
    html = render_article('# Title\n\nHello <script>alert(1)</script>\n\n<img src=x onerror="alert(2)">\n')
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=&quot;alert(2)&quot;&gt;" in html


def test_it_refuses_javascript_links():
    assert "href" not in render_article("[click](javascript:alert(1))")


def test_it_shows_only_this_sites_images():
    html = render_article(
        "![logo](/static/logo.png) ![track](https://evil.example/p?c=1) ![proto](//evil.example/a.png)"
        " ![rel](pixel.png) [a link](https://elsewhere.example)"
    )
    assert html.count("<img") == 1 and 'src="/static/logo.png"' in html
    assert "evil.example" not in html and "pixel.png" not in html
    assert "track" in html and "proto" in html and "rel" in html  # the alt text stays, as words
    assert 'href="https://elsewhere.example"' in html  # links are not fetched unasked, so they stay


def test_it_numbers_repeated_anchors_in_order():
    body = "# Guide\n\n## Eligibility\n\nA.\n\n## Eligibility\n\nB.\n\n### Eligibility 2\n\nC.\n"
    assert [(h.level, h.text, h.anchor) for h in table_of_contents(body)] == [
        (1, "Guide", "guide"),
        (2, "Eligibility", "eligibility"),
        (2, "Eligibility", "eligibility-2"),
        (3, "Eligibility 2", "eligibility-2-2"),
    ]
    html = render_article(body)
    assert html.index('id="eligibility"') < html.index('id="eligibility-2"') < html.index('id="eligibility-2-2"')


def test_it_anchors_a_heading_by_its_source_text():
    body = "## Use `code` and *emphasis*\n\nText.\n"
    (heading,) = table_of_contents(body)
    assert (heading.text, heading.anchor) == ("Use code and emphasis", "use-code-and-emphasis")
    assert '<h2 id="use-code-and-emphasis">Use <code>code</code> and <em>emphasis</em></h2>' in render_article(body)


def test_it_leaves_out_the_opening_title_only_when_asked():
    body = "# Refunds\n\nIntro.\n\n## Eligibility\n\nText.\n"
    assert "<h1" in render_article(body)
    html = render_article(body, without_title=True)
    assert "<h1" not in html and '<h2 id="eligibility">' in html


@pytest.mark.django_db
def test_the_refunds_page_shows_the_section_the_chat_cites(helpcentre, client):
    response = client.get("/help/refunds")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="when-the-money-arrives"' in page
    assert "5 to 10 business days" in page
    assert "Version 1, in force since" in page and "1 February 2026" in page
    assert '<a href="#when-the-money-arrives">When the money arrives</a>' in page  # the table of contents
    assert page.count("<h1") == 1


@pytest.mark.django_db
def test_every_public_chunk_links_to_an_anchor_on_its_page(helpcentre, client):
    today = timezone.localdate()
    chunks = Chunk.objects.filter(
        version__article__collection=helpcentre,
        version__article__retired_at__isnull=True,
        version__audience=Audience.PUBLIC,
        version__status=VersionStatus.PUBLISHED,
        version__effective_date__lte=today,
    ).select_related("version__article")
    pages: dict[str, str] = {}
    linked = 0
    for chunk in chunks:
        slug = chunk.version.article.slug
        if slug not in pages:
            response = client.get(reverse("help-article", args=[slug]))
            assert response.status_code == 200, slug
            pages[slug] = response.content.decode()
        page, _, anchor = help_url(slug, chunk.heading_path).partition("#")
        assert page == f"/help/{slug}"
        if anchor:
            assert f'id="{anchor}"' in pages[slug], chunk.heading_path
            linked += 1
    assert len(pages) == 12 and linked > 40


@pytest.mark.django_db
@pytest.mark.parametrize("slug", ["loyalty-programme", "refund-escalation-procedure", "no-such-article"])
def test_articles_that_are_not_public_are_not_found(helpcentre, client, slug):
    response = client.get(f"/help/{slug}")
    assert response.status_code == 404
    # The page says why, and links back to the help centre.
    assert "There is no public help article called" in response.content.decode() and 'href="/help/"' in (
        response.content.decode()
    )


@pytest.mark.django_db
def test_the_shipping_page_shows_the_current_version_not_the_superseded_one(helpcentre, client):
    old = ArticleVersion.objects.get(article__slug="shipping", version_label="1")
    assert old.status == VersionStatus.SUPERSEDED
    page = client.get("/help/shipping").content.decode()
    assert "Version 2, in force since" in page
    assert "3-5 business days" in page and "From 1 June 2026" in page
    assert "5-7 business days" not in page and "$6.95" not in page


@pytest.mark.django_db
def test_before_a_versions_effective_date_the_version_then_in_force_is_shown(helpcentre):
    assert public_version(helpcentre, "shipping", date(2026, 5, 31)).version_label == "1"
    assert public_version(helpcentre, "shipping", date(2026, 6, 1)).version_label == "2"
    assert public_version(helpcentre, "shipping", date(2024, 12, 31)) is None  # before version 1


@pytest.mark.django_db
def test_drafts_and_retired_articles_are_not_shown(helpcentre, client):
    published = ArticleVersion.objects.get(article__slug="warranty", status=VersionStatus.PUBLISHED)
    ArticleVersion.objects.filter(pk=published.pk).update(status=VersionStatus.DRAFT)
    assert client.get("/help/warranty").status_code == 404
    Article.objects.filter(slug="returns").update(retired_at=timezone.now())
    assert client.get("/help/returns").status_code == 404


@pytest.mark.django_db
def test_the_index_lists_only_public_articles_in_force(helpcentre, client):
    response = client.get("/help/")
    assert response.status_code == 200
    page = response.content.decode()
    assert '<a href="/help/refunds">Refunds</a>' in page
    assert '<a href="/help/shipping">Shipping and delivery</a>' in page
    assert page.count('<a href="/help/') == 12
    assert "/help/loyalty-programme" not in page and "/help/refund-escalation-procedure" not in page
    assert '<script src="/static/widget.js" defer></script>' in page


@pytest.mark.django_db
@override_settings(CHAT_COLLECTION="not-ingested")
def test_the_pages_say_when_the_help_centre_is_missing(client, rf):
    assert client.get("/help/").status_code == 404
    with pytest.raises(Http404, match="has not been ingested"):
        views.help_index(rf.get("/help/"))
    with pytest.raises(Http404, match="has not been ingested"):
        views.help_article(rf.get("/help/refunds"), "refunds")
