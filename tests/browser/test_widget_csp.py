"""The widget on a customer's own site whose Content-Security-Policy allows only what the README says a
host page must: our script and a websocket to our server. No style-src, no 'unsafe-inline'. A real
Chromium on a host page served from another origin (another port on loopback)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import Page, expect

from tests.loopback import free_port

# answers_when_relevant: these test what the widget does with an answer, not where the answer cut sits.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("served_helpcentre", "answers_when_relevant")]

TURN_TIMEOUT_MS = 90_000  # the server's first turn loads the models
REFUND_QUESTION = "How long will my refund take to show on my card?"


def host_policy(live_url: str) -> str:
    socket = re.sub("^http", "ws", live_url)
    return f"default-src 'none'; script-src {live_url}; connect-src {socket}"


@pytest.fixture
def host_page(live_url) -> Iterator[str]:
    """A shop's page on another origin that embeds the widget, served under host_policy."""
    page = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>A shop</title></head><body>"
        f"<h1>A shop</h1><script src='{live_url}/static/widget.js' defer></script></body></html>"
    ).encode()
    policy = host_policy(live_url)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Security-Policy", policy)
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()


@pytest.fixture
def page(browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    # Before any of the page's own code: every refusal the policy makes, whatever asked for it.
    page.add_init_script(
        "window.__violations = [];"
        "document.addEventListener('securitypolicyviolation',"
        " e => window.__violations.push(e.effectiveDirective + ' ' + e.blockedURI));"
    )
    yield page
    context.close()


def test_the_widget_works_under_the_strict_host_policy(page, host_page, live_url):
    refusals: list[str] = []
    page.on("console", lambda message: refusals.append(message.text) if "Content Security" in message.text else None)
    page.goto(host_page)
    launcher = page.locator("[data-role=launcher]")
    # Styled (the shadow root's stylesheet applied): the launcher floats in the corner.
    expect(launcher).to_have_css("position", "fixed")
    launcher.click()
    page.locator("[data-role=input]").fill(REFUND_QUESTION)
    page.keyboard.press("Enter")
    answer = page.locator("[data-role=assistant][data-decision=answered]")
    expect(answer).to_contain_text("5 to 10 business days", timeout=TURN_TIMEOUT_MS)
    assert page.evaluate("window.__violations") == []
    assert refusals == []


def test_the_policy_would_refuse_an_inline_style_element(page, host_page):
    """The check above can fail: under the same policy, what the widget used to do (a <style> element) is
    refused and reported."""
    page.goto(host_page)
    page.evaluate("document.head.appendChild(Object.assign(document.createElement('style'), {textContent: 'h1{}'}))")
    expect(page.locator("h1")).to_be_visible()
    page.wait_for_function("window.__violations.length > 0")
    assert page.evaluate("window.__violations")[0].startswith("style-src-elem")
