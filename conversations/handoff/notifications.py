"""Staff replies by e-mail, for a customer who left an address because nobody was available.

The reply itself is already stored and shown in the widget; the e-mail is an extra copy, sent after the
reply is committed, by a thread of this process so that the staff member's request never waits on SMTP.
A send the SMTP server turns away for now (greylisting, a full queue, no connection) is tried again after a
pause; one that still fails, or is refused for good, is logged with the address masked and stored on the
message, so every server process's queue card shows it until a later send works.
"""

from __future__ import annotations

import functools
import logging
import smtplib
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlencode

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import close_old_connections

from conversations.chat import events
from conversations.models import Conversation, Message, Role

logger = logging.getLogger(__name__)

# The widget on the help page reads this query parameter: the signed token that resumes the chat.
LINK_PARAMETER = "supportbot_chat"
# Pauses before trying a temporarily refused e-mail again: greylisting servers accept after a few minutes at
# most, and the outbox thread must not hold the next reply for long.
RETRY_PAUSES_S: tuple[float, ...] = (10.0, 60.0)


@dataclass(frozen=True)
class ReplyEmail:
    message_id: int
    conversation: Conversation
    to: str
    subject: str
    body: str


def chat_link(token: str) -> str:
    """The help page, opening the widget on the conversation the token names. The token is the widget's own
    resume token: signed and expiring (CHAT_SESSION_MAX_AGE_S), and a signed-in customer's conversation still
    resumes only with their customer token, so a forwarded link opens a guest's chat and nobody else's."""
    return f"{settings.SUPPORTBOT_PUBLIC_URL.rstrip('/')}/help/?{urlencode({LINK_PARAMETER: token})}"


def reply_email(message: Message, *, token: str, author: str) -> ReplyEmail:
    conversation = message.conversation
    days = settings.CHAT_SESSION_MAX_AGE_S // 86_400
    lasts = f"{days} days" if days > 1 else "a day" if days == 1 else "a short while"
    body = (
        f"{author} from our support team replied to your question:\n\n"
        f"{message.text}\n\n"
        f"To answer, or to read the whole conversation, continue the chat here:\n{chat_link(token)}\n\n"
        f"The link works for {lasts}. Please don't reply to this e-mail; answers are read in the chat.\n"
    )
    return ReplyEmail(message.pk, conversation, conversation.contact_email, "A reply from our support team", body)


def masked_address(address: str) -> str:
    """An address as logs may show it: j***@example.com."""
    local, _, domain = address.partition("@")
    return f"{local[:1]}***@{domain}" if domain else "***"


def _temporary(exc: Exception) -> bool:
    """Whether trying again later may work: no connection, or a 4xx answer (RFC 5321's "transient")."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return all(400 <= code < 500 for code, _ in exc.recipients.values())
    if isinstance(exc, smtplib.SMTPResponseException):
        return 400 <= exc.smtp_code < 500
    return isinstance(exc, OSError)  # refused connection, timeout, dropped link (SMTPServerDisconnected too)


def _record(email: ReplyEmail, error: str) -> None:
    Message.objects.filter(pk=email.message_id).update(email_error=error)
    events.queue_changed(email.conversation)


def send(email: ReplyEmail) -> bool:
    """Send one reply e-mail, trying again after a pause while the refusal is temporary; False (logged, and
    stored on the message for the card) when it did not go."""
    close_old_connections()  # this thread's connection may have outlived a database restart
    pauses = list(RETRY_PAUSES_S)
    while True:
        try:
            EmailMessage(email.subject, email.body, settings.DEFAULT_FROM_EMAIL, [email.to]).send()
        except Exception as exc:  # smtplib, socket and TLS errors all mean the same here: not delivered
            reason = f"{type(exc).__name__}: {exc}".replace(email.to, masked_address(email.to))
            if pauses and _temporary(exc):
                logger.info("e-mailing staff reply %s: %s; trying again in %s s", email.message_id, reason, pauses[0])
                time.sleep(pauses.pop(0))
                continue
            logger.warning(
                "e-mailing staff reply %s to %s failed: %s", email.message_id, masked_address(email.to), reason
            )
            _record(email, reason[:300])
            return False
        if Message.objects.filter(pk=email.message_id).exclude(email_error="").exists():
            _record(email, "")
        return True


@functools.cache
def _outbox() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="reply-email")


def email_staff_reply(message: Message, *, token: str, author: str) -> Future[bool]:
    """Queue the e-mail copy of a committed staff reply; the future says whether it went."""
    return _outbox().submit(send, reply_email(message, token=token, author=author))


def failed_replies(conversation: Conversation) -> dict[int, str]:
    """The conversation's staff replies whose e-mail did not go, with why: message id → reason."""
    failed = conversation.messages.filter(role=Role.STAFF).exclude(email_error="")
    return dict(failed.order_by("pk").values_list("pk", "email_error"))
