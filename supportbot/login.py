"""Sign-in forms that give up on guessing: after LOGIN_FAILURES_PER_USERNAME failed sign-ins for one
username, or LOGIN_FAILURES_PER_IP from one address, within LOGIN_LOCKOUT_S, further attempts are refused
without checking the password until the window ends. The staff sign-in and the admin's use them.

A few lines over the shared cache rather than django-axes: axes keeps its records in tables of its own
and needs its own backend and middleware, and all we need is two counters.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm

from supportbot.rate_limits import Limit, request_address


def username_limit() -> Limit:
    return Limit("login-username", settings.LOGIN_FAILURES_PER_USERNAME, settings.LOGIN_LOCKOUT_S)


def address_limit() -> Limit:
    return Limit("login-address", settings.LOGIN_FAILURES_PER_IP, settings.LOGIN_LOCKOUT_S)


class ThrottledLogin(AuthenticationForm):
    """The staff queue's sign-in; mixed in ahead of the admin's form for the admin's."""

    # Set when the form refused because of the throttle, for templates that word other errors themselves.
    throttled_message = ""

    def clean(self) -> dict[str, Any]:
        username = str(self.data.get("username", "")).strip().lower()
        address = request_address(self.request) if self.request is not None else "unknown"
        for limit, subject in ((username_limit(), username), (address_limit(), address)):
            verdict = limit.peek(subject)
            if not verdict.allowed:
                self.throttled_message = (
                    f"Too many failed sign-ins for this account or from this address. "
                    f"Try again in {verdict.wait_text()}."
                )
                raise forms.ValidationError(self.throttled_message, code="throttled")
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            username_limit().hit(username)
            address_limit().hit(address)
            raise
        username_limit().clear(username)
        return cleaned


class AdminThrottledAuthenticationForm(ThrottledLogin, AdminAuthenticationForm):
    pass
