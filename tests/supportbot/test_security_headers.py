"""Security headers on the product's own pages, and pages that can live with their Content-Security-Policy:
no inline script, inline style or event-handler attribute anywhere (the policy allows none, so any would
be a broken page in a browser)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from conversations.models import Conversation, Message, Role
from knowledge.models import Article, Collection
from tests.knowledge.helpers import sync_folder

pytestmark = pytest.mark.django_db

ARTICLE = (
    "---\nid: opening-hours\ntitle: Opening hours\nversion: '1'\neffective_date: 2026-01-01\naudience: public\n"
    "---\n\n# Opening hours\n\n## Phone support\n\nOur phone line is open from 9am to 5pm, Monday to Friday.\n"
)


class InlineCode(HTMLParser):
    """What a policy without 'unsafe-inline' blocks: <script> without src, <style>, style="…", on…="…",
    javascript: URLs."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name for name, _ in attrs}
        if tag == "script" and "src" not in names:
            self.found.append("inline <script>")
        if tag == "style":
            self.found.append("<style> element")
        for name, value in attrs:
            if name == "style" or name.startswith("on"):
                self.found.append(f"<{tag} {name}=…>")
            if name in ("href", "src", "action") and (value or "").strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}=javascript:…>")


@pytest.fixture
def site(tmp_path: Path, embedder) -> Article:
    folder = tmp_path / "articles"
    folder.mkdir()
    (folder / "opening-hours.md").write_text(ARTICLE)
    sync_folder(folder, embedder, collection=settings.CHAT_COLLECTION)
    collection = Collection.objects.get(name=settings.CHAT_COLLECTION)
    conversation = Conversation.objects.create(collection=collection, audience="public")
    Message.objects.create(conversation=conversation, role=Role.CUSTOMER, text="When can I call you?")
    return Article.objects.get(collection=collection, slug="opening-hours")


def test_every_page_carries_the_headers_and_no_inline_code(client, site):
    staff = get_user_model().objects.create_superuser("root", password="a-long-test-password")
    conversation = Conversation.objects.get()
    public = ["/", "/help/", "/help/opening-hours", "/staff/login/", "/admin/login/", "/no-such-page"]
    staff_pages = [
        "/staff/queue",
        "/admin/",
        "/admin/knowledge/article/",
        f"/admin/knowledge/article/{site.pk}/change/",
        "/admin/conversations/conversation/",
        f"/admin/conversations/conversation/{conversation.pk}/change/",
        "/admin/conversations/systempolicy/add/",
    ]
    for number, path in enumerate([*public, *staff_pages]):
        if number == len(public):
            client.force_login(staff)
        response = client.get(path)
        assert response.status_code in (200, 404), (path, response.status_code)
        policy = response["Content-Security-Policy"]
        assert "script-src 'self';" in policy and "style-src 'self';" in policy, path
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, path
        assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy, path
        assert "connect-src 'self' ws://testserver;" in policy, path
        assert response["X-Frame-Options"] == "DENY", path
        assert response["X-Content-Type-Options"] == "nosniff", path
        assert response["Referrer-Policy"] == "same-origin", path
        parser = InlineCode()
        parser.feed(response.content.decode())
        assert parser.found == [], (path, parser.found)


def test_the_inline_code_finder_finds_inline_code():
    parser = InlineCode()
    parser.feed('<p style="color: red" onclick="go()">x</p><script>alert(1)</script><a href="javascript:x()">')
    assert parser.found == ["<p style=…>", "<p onclick=…>", "inline <script>", "<a href=javascript:…>"]


def test_the_widget_script_is_served_as_javascript_without_a_page_policy(client):
    response = client.get("/static/widget.js")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/javascript")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "Content-Security-Policy" not in response  # a script's own policy does nothing; its host's counts
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert b"adoptedStyleSheets" in body


def test_a_websocket_origin_over_https_is_wss(client):
    response = client.get("/staff/login/", secure=True)
    assert "connect-src 'self' wss://testserver;" in response["Content-Security-Policy"]
