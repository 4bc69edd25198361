"""A real SMTP server on 127.0.0.1 (aiosmtpd) for the tests of e-mailed replies, with the settings that send
to it; it refuses one address as a real server refuses an unknown mailbox, and greylists another (a temporary
refusal the first time, as many real servers answer a sender they have not seen)."""

from __future__ import annotations

import email
import time
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message as MailMessage
from typing import Any

from aiosmtpd.controller import Controller

from tests.loopback import free_port

REFUSED = "refused@example.com"
GREYLISTED = "greylisted@example.com"


class Mailbox:
    """An SMTP server's side: what it accepted, and one address it refuses as a real server would."""

    def __init__(self) -> None:
        self.received: list[MailMessage] = []
        self.greylisted_once = False

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: Any) -> str:
        if address == REFUSED:
            return f"550 5.1.1 <{address}>: Recipient address rejected: User unknown"
        if address == GREYLISTED and not self.greylisted_once:
            self.greylisted_once = True
            return f"451 4.7.1 <{address}>: Recipient address rejected: Greylisted, try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.received.append(email.message_from_bytes(envelope.content))
        return "250 Message accepted for delivery"

    def wait_for(self, count: int, within_s: float = 15) -> list[MailMessage]:
        deadline = time.monotonic() + within_s
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.received


@contextmanager
def smtp_server(settings: Any, *, public_url: str = "https://support.shop.example/") -> Iterator[Mailbox]:
    """A running server, and Django's settings (pytest-django's ``settings`` fixture) pointed at it."""
    mailbox = Mailbox()
    port = free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    # pytest-django swaps in the in-memory backend; these tests are about the real one.
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_USE_TLS = "127.0.0.1", port, False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_REPLIES = True
    settings.DEFAULT_FROM_EMAIL = "Support <support@shop.example>"
    settings.SUPPORTBOT_PUBLIC_URL = public_url
    try:
        yield mailbox
    finally:
        controller.stop()
