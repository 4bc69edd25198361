"""The chat's websocket protocol: what a frame may say, checked before anything acts on it.

Every frame is one JSON object with a "type". The customer's side (``/ws/chat/``):

client → server
  {"type": "hello", "token": str | null, "after": int, "customer_token": str | null}
      First frame of every connection. ``token`` is the one a previous ``welcome`` gave (null for a new
      chat); ``after`` is the highest ``seq`` the client has shown (0 for none): the server replays what
      came later. ``customer_token`` is the host site's signed customer token (customers/tokens.py), for a
      signed-in customer; without one the visitor is anonymous.
  {"type": "message", "id": str, "text": str}
      A customer message. ``id`` is made by the client (1–64 of A–Z a–z 0–9 _ -) and reused on resend: a
      resent id is acknowledged again and answered once.
  {"type": "typing"}
      The customer is typing (shown to staff).
  {"type": "handoff", "seq": int (optional)}
      The customer asks for a person: the conversation joins the staff queue, and the assistant answers
      nothing more in it until staff hand it back. Without ``seq`` the conversation's latest turn is handed
      off ("talk to a person"). With it, the turn of that reply (one of this conversation's assistant replies;
      else an error "unknown_reply", "not_your_reply" or "not_a_reply"): the widget sends it when the
      customer answers "No" to a suggestion, and a suggestion's turn is then referred with the reason code
      "suggestion_declined" and its question in the reason.
  {"type": "contact", "email": str}
      The customer's e-mail address (at most 254 characters), for staff replies while nobody is available:
      they go out by e-mail too, with a link back to the chat. A bad address gets an error "bad_email".
  {"type": "feedback", "seq": int, "rating": "up"|"down", "reason": str (optional, thumbs down only)}
      The customer's rating of the assistant reply ``seq`` (one of this conversation's); a later rating of
      the same reply replaces it. The reason is at most 300 characters.

server → client
  {"type": "welcome", "conversation": uuid, "token": str, "status": str, "signed_in": bool,
   "messages": [message…], "greeting": str}
      ``greeting`` is the served collection's (knowledge/voice.py); the widget shows it unless its page set
      data-greeting.
      A new chat is stored with its first message: until then its token resumes nothing (a hello with it
      starts another new chat, without an error).
  {"type": "ack", "id": str, "seq": int}                 the message is stored
  {"type": "queued", "id": str|null, "position": int, "message": str}
      the assistant is answering others first; this conversation is number ``position`` in line
  {"type": "busy", "id": str|null, "message": str}
      the line is full (CHAT_TURN_QUEUE_LIMIT) or the queue unreachable: the message is kept and goes in
      line as soon as there is room (or at the next hello, if the connection closes first)
  {"type": "token", "id": str, "text": str}              part of the reply to message ``id``, as generated
  {"type": "reset", "id": str}                           drop the streamed text; generation restarted
  {"type": "reply", "id": str, "seq": int, "text": str,
   "decision": "answered"|"suggested"|"abstained"|"referred",
   "citations": [{"number": int, "title": str, "heading_path": str, "version": str, "url": str}…],
   "units": [{"passage": int, "kind": "sentence"|"procedure"|"list"|"row", "text": str, "title": str,
              "heading_path": str, "url": str}…], "rating": "up"|"down"|null}
      ``text`` may hold line breaks (a list or the steps of a procedure, one a line). ``units`` are the whole
      units the reply quoted, each with its [n] markers; a "suggested" reply is the help-centre section that
      looks like what was asked, quoted, without a claim that it answers: the widget shows each unit under
      its section's title, linked to ``url`` (relative to the server), and asks "Did this answer your
      question?": Yes is a feedback "up", No a feedback "down" and a handoff with the reply's seq. Other
      decisions may carry units too (or an empty list).
  {"type": "message", "seq": int, "role": "staff"|"customer"|"assistant", "text": str, "author": str}
      a message from someone else: a staff member, or this customer in another tab
  {"type": "typing", "role": "staff"}
  {"type": "status", "status": "open"|"referred"|"human"|"closed", "availability": {…},
   "person_requested": bool, "contact_email": bool, "email_replies": bool}
      ``availability`` (also in ``welcome``, with the other three): {"available": bool, "reason":
      "nobody_online"|"outside_hours"|"closed_day"|null, "back_at": ISO 8601 UTC|null, "time_zone": str|null,
      "message": str}: whether a person can answer now and, if not, when one will be back (null: not known).
      ``contact_email``: an address is stored; ``email_replies``: the server sends e-mail (else none is asked).
  {"type": "contact", "saved": true, "message": str}       the e-mail address is stored
  {"type": "feedback", "seq": int, "rating": "up"|"down"}    a rating is stored (sent to every tab)
  {"type": "error", "code": str, "message": str, "id": str (when the error concerns one message)}

A message in ``welcome.messages`` has the shape of a ``message`` frame; an assistant's reply in it also
carries ``decision``, ``citations``, ``units``, ``id`` (the question's id) and ``rating`` (the customer's stored
rating, or null), like a ``reply`` frame. Statuses:
``open`` the assistant answers; ``referred`` a person has been asked to follow up (the assistant still
answers); ``human`` a person has taken over (the assistant is silent); ``closed``.

A bad frame gets an ``error`` and the connection stays open.

The staff side (``/ws/staff/``, signed-in staff only) receives ``{"type": "card", "conversation": uuid,
"waiting": bool, "html": str}`` whenever a conversation in the queue changes, ``{"type": "typing",
"conversation": uuid}`` while a customer types, and ``{"type": "presence", "status": "online"|"away"}`` on
connecting and whenever the staff member's presence changes (in any of their tabs). It may send
``{"type": "typing", "conversation": uuid}``, shown to that customer as ``{"type": "typing", "role":
"staff"}``, and ``{"type": "presence", "status": "online"|"away"}``: whether they take hand-offs now. They
are away as soon as their last queue socket closes; the page sends its last choice again on reconnecting.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from conversations.chat.intake import validate_message
from conversations.errors import FrameError, TurnError

CLIENT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class Hello:
    token: str | None
    after: int
    customer_token: str | None = None


@dataclass(frozen=True)
class CustomerMessage:
    id: str
    text: str


@dataclass(frozen=True)
class Typing:
    pass


@dataclass(frozen=True)
class Handoff:
    # The reply the customer declined (a suggestion answered "No"); None: hand off the latest turn.
    seq: int | None = None


@dataclass(frozen=True)
class Contact:
    email: str


@dataclass(frozen=True)
class Feedback:
    seq: int
    rating: str
    reason: str = ""


FEEDBACK_RATINGS = ("up", "down")
MAX_FEEDBACK_REASON_CHARS = 300

Frame = Hello | CustomerMessage | Typing | Handoff | Feedback | Contact


def _json_object(text: str | None, *, max_bytes: int, binary: bool) -> dict[str, Any]:
    """A frame's JSON object, after the checks every socket makes: text, size, UTF-8, JSON, an object."""
    if binary or text is None:
        raise FrameError("not_text", "Frames must be JSON text; binary frames are not accepted.")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise FrameError("invalid_text", "The frame is not valid UTF-8 text.") from None
    if size > max_bytes:
        raise FrameError("too_large", f"The frame is {size} bytes; the limit is {max_bytes}.")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FrameError("bad_json", f"The frame is not valid JSON ({exc.msg} at character {exc.pos}).") from None
    if not isinstance(data, dict):
        raise FrameError("bad_frame", 'A frame must be a JSON object with a "type".')
    return data


def parse_frame(text: str | None, *, max_bytes: int, binary: bool = False) -> Frame:
    """Turn one websocket frame into a typed request, or raise FrameError saying what is wrong with it."""
    data = _json_object(text, max_bytes=max_bytes, binary=binary)
    kind = data.get("type")
    if kind == "hello":
        return _hello(data)
    if kind == "message":
        return _message(data)
    if kind == "typing":
        return Typing()
    if kind == "handoff":
        return _handoff(data)
    if kind == "feedback":
        return _feedback(data)
    if kind == "contact":
        return _contact(data)
    raise FrameError(
        "unknown_type", f"Unknown frame type {kind!r}; expected hello, message, typing, handoff, feedback or contact."
    )


def _hello(data: dict[str, Any]) -> Hello:
    token, after = data.get("token"), data.get("after", 0)
    if token is not None and (not isinstance(token, str) or len(token) > 500):
        raise FrameError("bad_frame", "hello.token must be the token a welcome gave, or null.")
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise FrameError("bad_frame", "hello.after must be a whole number ≥ 0 (the last seq shown).")
    customer_token = data.get("customer_token")
    if customer_token is not None and (not isinstance(customer_token, str) or len(customer_token) > 1000):
        raise FrameError("bad_frame", "hello.customer_token must be the token the shop's site signed, or null.")
    return Hello(token or None, after, customer_token or None)


def _message(data: dict[str, Any]) -> CustomerMessage:
    message_id = data.get("id")
    if not isinstance(message_id, str) or not CLIENT_ID.fullmatch(message_id):
        raise FrameError("bad_frame", "message.id must be 1–64 characters of letters, digits, '_' or '-'.")
    try:
        text = validate_message(data.get("text"))
        # JSON escapes can spell lone surrogates ("\ud800"), which no database or reader can take.
        text.encode("utf-8")
    except TurnError as exc:
        code = "too_long" if "limit" in str(exc) else "bad_message"
        raise FrameError(code, str(exc), message_id) from None
    except UnicodeEncodeError:
        raise FrameError("invalid_text", "The message is not valid UTF-8 text.", message_id) from None
    return CustomerMessage(message_id, text)


def _reply_seq(value: Any) -> int | None:
    """A frame's ``seq`` when it can name a reply: a whole number ≥ 1 (JSON true is not one); else None."""
    return value if not isinstance(value, bool) and isinstance(value, int) and value >= 1 else None


def _handoff(data: dict[str, Any]) -> Handoff:
    given = data.get("seq")
    seq = _reply_seq(given)
    if given is not None and seq is None:
        raise FrameError(
            "bad_frame",
            "handoff.seq must be the seq of the reply that did not answer (a whole number ≥ 1), or left out.",
        )
    return Handoff(seq)


def _feedback(data: dict[str, Any]) -> Feedback:
    seq, rating, reason = _reply_seq(data.get("seq")), data.get("rating"), data.get("reason")
    if seq is None:
        raise FrameError("bad_frame", "feedback.seq must be the seq of the reply being rated (a whole number ≥ 1).")
    if rating not in FEEDBACK_RATINGS:
        raise FrameError("bad_rating", f'feedback.rating must be "up" or "down", not {rating!r}.')
    if reason is not None and not isinstance(reason, str):
        raise FrameError("bad_frame", "feedback.reason must be text, or left out.")
    cleaned = (reason or "").replace("\x00", "").strip()
    try:
        cleaned.encode("utf-8")
    except UnicodeEncodeError:
        raise FrameError("invalid_text", "The reason is not valid UTF-8 text.") from None
    if len(cleaned) > MAX_FEEDBACK_REASON_CHARS:
        raise FrameError(
            "reason_too_long", f"The reason is {len(cleaned)} characters; the limit is {MAX_FEEDBACK_REASON_CHARS}."
        )
    if cleaned and rating == "up":
        raise FrameError("bad_frame", "feedback.reason goes with a thumbs down only.")
    return Feedback(seq, rating, cleaned)


MAX_EMAIL_CHARS = 254  # the longest address SMTP carries (RFC 5321)


def _contact(data: dict[str, Any]) -> Contact:
    email = data.get("email")
    if not isinstance(email, str):
        raise FrameError("bad_email", "contact.email must be your e-mail address, as text.")
    cleaned = email.strip()
    if len(cleaned) > MAX_EMAIL_CHARS:
        raise FrameError(
            "bad_email", f"That e-mail address is {len(cleaned)} characters; the limit is {MAX_EMAIL_CHARS}."
        )
    try:
        validate_email(cleaned)
    except ValidationError:
        raise FrameError(
            "bad_email", f"{cleaned[:60]!r} is not an e-mail address; it should look like name@example.com."
        ) from None
    return Contact(cleaned)


STAFF_FRAME_BYTES = 1024


@dataclass(frozen=True)
class StaffTyping:
    conversation: uuid.UUID


@dataclass(frozen=True)
class Presence:
    status: str


STAFF_PRESENCE = ("online", "away")


def parse_staff_frame(text: str | None, *, binary: bool = False) -> StaffTyping | Presence:
    """What a staff member's queue page says: they type in a conversation, or they are online or away.
    Everything else staff do goes through the queue's forms."""
    data = _json_object(text, max_bytes=STAFF_FRAME_BYTES, binary=binary)
    kind = data.get("type")
    if kind == "presence":
        status = data.get("status")
        if status not in STAFF_PRESENCE:
            raise FrameError("bad_status", f'presence.status must be "online" or "away", not {status!r}.')
        return Presence(status)
    if kind != "typing":
        raise FrameError(
            "read_only", 'Staff act through the queue\'s buttons; this socket takes only "typing" and "presence".'
        )
    try:
        return StaffTyping(uuid.UUID(str(data.get("conversation"))))
    except ValueError:
        raise FrameError("bad_frame", "typing.conversation must be a conversation id.") from None


class TokenBucket:
    """A rate limit that allows bursts: ``capacity`` frames at once, refilled at ``per_second``."""

    def __init__(self, capacity: float, per_second: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity, self.per_second, self.clock = capacity, per_second, clock
        self.tokens, self.updated = capacity, clock()

    def take(self) -> bool:
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.per_second)
        self.updated = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

    def wait_s(self) -> float:
        """Seconds until one frame is allowed again."""
        return max(0.0, (1 - self.tokens) / self.per_second) if self.per_second else float("inf")
