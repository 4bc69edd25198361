"""The Content-Security-Policy of the product's own pages (admin, staff queue, help centre, demo page).

Django 5.2 has no CSP of its own and the policy is one fixed header, so a middleware of ours rather than a
package. Every page loads its scripts and styles from /static/ and none has inline script, inline style
or event-handler attributes, so the policy needs no 'unsafe-inline'. The widget styles its shadow root
with a constructed stylesheet, which CSP does not govern, so it runs under this policy and under a host
page's as strict as "script-src <this server>; connect-src wss://<this server>".
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"


def policy_for(request: HttpRequest) -> str:
    # 'self' matches same-host websockets only in browsers that implement CSP 3; naming them is explicit.
    try:
        socket = f" {'wss' if request.is_secure() else 'ws'}://{request.get_host()}"
    except DisallowedHost:  # the 400 page of a request for a host that is not ours
        socket = ""
    directives = {
        "default-src": "'self'",
        "script-src": "'self'",
        "style-src": "'self'",
        "img-src": "'self' data:",
        "font-src": "'self'",
        "connect-src": f"'self'{socket}",
        "object-src": "'none'",
        "base-uri": "'none'",
        "form-action": "'self'",
        # No page is meant to be framed (the widget is a script on the host page, not a frame).
        "frame-ancestors": "'none'",
    }
    return "; ".join(f"{name} {value}" for name, value in directives.items())


class ContentSecurityPolicyMiddleware:
    """Adds the policy to HTML responses (scripts, styles and JSON are not documents: a policy there
    does nothing)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html") and HEADER not in response:
            response[HEADER] = policy_for(request)
        return response
