"""Staff replies by e-mail, for a customer who left an address because nobody was available.

The reply itself is already stored and shown in the widget; the e-mail is an extra copy, sent after the
reply is committed, by a thread of this process so that the staff member's request never waits on SMTP.
A send that fails is logged with the address masked and remembered (in the cache) for the queue card.
"""

from __future__ import annotations

import functools
import logging
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlencode

from django.conf import settings
from django.core.cache import cache
from django.core.mail import EmailMessage

from conversations import events
from conversations.models import Conversation, Message, Role

logger = logging.getLogger(__name__)

# The widget on the help page reads this query parameter: the signed token that resumes the chat.
LINK_PARAMETER = "supportbot_chat"
# How long the card shows that a reply's e-mail failed.
FAILURE_KEPT_S = 14 * 24 * 3600


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


def failure_key(message_id: int) -> str:
    return f"supportbot:reply-email-failed:{message_id}"


def send(email: ReplyEmail) -> bool:
    """Send one reply e-mail; False (logged, and remembered for the card) when the SMTP server refuses it
    or cannot be reached."""
    try:
        EmailMessage(email.subject, email.body, settings.DEFAULT_FROM_EMAIL, [email.to]).send()
    except Exception as exc:  # smtplib, socket and TLS errors all mean the same here: not delivered
        reason = f"{type(exc).__name__}: {exc}".replace(email.to, masked_address(email.to))
        logger.warning("e-mailing staff reply %s to %s failed: %s", email.message_id, masked_address(email.to), reason)
        cache.set(failure_key(email.message_id), reason[:300], FAILURE_KEPT_S)
        events.queue_changed(email.conversation)
        return False
    cache.delete(failure_key(email.message_id))
    return True


@functools.cache
def _outbox() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="reply-email")


def email_staff_reply(message: Message, *, token: str, author: str) -> Future[bool]:
    """Queue the e-mail copy of a committed staff reply; the future says whether it went."""
    return _outbox().submit(send, reply_email(message, token=token, author=author))


def failed_replies(conversation: Conversation) -> dict[int, str]:
    """The conversation's staff replies whose e-mail did not go, with why: message id → reason."""
    ids = list(conversation.messages.filter(role=Role.STAFF).values_list("pk", flat=True))
    found = cache.get_many([failure_key(i) for i in ids])
    return {i: found[failure_key(i)] for i in ids if failure_key(i) in found}
