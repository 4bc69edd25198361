"""A browser's conversation, as plain synchronous functions over the models: the signed token that binds
it, the frames the widget is shown, a customer message received and answered, the contact address.

The websocket consumer calls these off the event loop. Each one that changes something tells the people
watching (the customer's widget, the staff queue) through events.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import signing
from django.db import transaction

from answering.services import default_services
from conversations.chat import events
from conversations.chat.feedback import rating_of
from conversations.chat.intake import claim_answer
from conversations.errors import ChatError
from conversations.handoff import availability
from conversations.models import (
    Conversation,
    ConversationStatus,
    Message,
    Role,
    Turn,
)
from conversations.records.recording import TurnResult
from conversations.records.turns import answer_message
from customers import tokens
from customers.models import Customer
from knowledge.models import Collection
from knowledge.voice import Voice

TOKEN_SALT = "supportbot.chat"


# --- Binding a browser to its conversation ------------------------------------------------------


def issue_token(conversation: Conversation) -> str:
    """A signed, expiring token naming the conversation: the only way back into it. Knowing a
    conversation's id is not enough, because the id alone is not signed."""
    return signing.dumps({"conversation": str(conversation.public_id)}, salt=TOKEN_SALT, compress=True)


def _token_conversation(token: str) -> str | None:
    """The conversation id a token names, None when it is not ours or has expired."""
    try:
        data = signing.loads(token, salt=TOKEN_SALT, max_age=settings.CHAT_SESSION_MAX_AGE_S)
    except signing.BadSignature:
        return None
    public_id = data.get("conversation") if isinstance(data, dict) else None
    return public_id if isinstance(public_id, str) else None


def new_conversation(customer: Customer | None = None) -> Conversation:
    """A conversation for a visitor who has said hello, not yet stored: it is saved with its first message,
    so a page that opens the chat and never asks anything (or a storm of connections) stores nothing."""
    collection = Collection.objects.filter(name=settings.CHAT_COLLECTION).first()
    if collection is None:
        raise ChatError(
            "unavailable",
            f"The help centre {settings.CHAT_COLLECTION!r} has not been loaded yet; chat is unavailable.",
        )
    # Anonymous visitors are the public; a verified customer sees member articles when they are a member.
    audience = "member" if customer is not None and customer.is_member else "public"
    return Conversation(collection=collection, audience=audience, customer=customer)


def stored(conversation: Conversation) -> Conversation:
    """The conversation, saved if it was not yet (its first message is about to be stored)."""
    if conversation.pk is None:
        conversation.save()
    return conversation


def verified_customer(customer_token: str) -> Customer:
    """The customer a host site's token vouches for; ChatError saying why when it cannot be trusted."""
    try:
        external_id = tokens.verify(customer_token, secret=settings.CUSTOMER_TOKEN_SECRET)
    except tokens.CustomerTokenError as exc:
        raise ChatError("customer_token_refused", f"{exc} You are chatting as a guest.") from None
    customer = Customer.objects.filter(external_id=external_id, erased_at__isnull=True).first()
    if customer is None:
        raise ChatError(
            "customer_token_refused", "That customer account is not known here. You are chatting as a guest."
        )
    return customer


def resume_or_start(token: str | None, customer_token: str | None = None) -> tuple[Conversation, list[ChatError]]:
    """The conversation to continue (or a new, unsaved one), and what was refused on the way. A conversation
    resumes only for the same person: a signed-in customer's with their valid customer token, a guest's
    without one. A token whose conversation was never stored (no message was sent) starts a new one quietly:
    there is nothing to resume, and reusing its id could join two visitors' first messages."""
    refused: list[ChatError] = []
    customer = None
    if customer_token:
        try:
            customer = verified_customer(customer_token)
        except ChatError as exc:
            refused.append(exc)
    public_id = _token_conversation(token) if token else None
    if public_id is not None:
        conversation = Conversation.objects.select_related("collection").filter(public_id=public_id).first()
        if conversation is None:
            return new_conversation(customer), refused
        if conversation.status != ConversationStatus.CLOSED and conversation.customer_id == (
            customer.pk if customer else None
        ):
            return conversation, refused
    if token:
        refused.append(ChatError("session_expired", "That chat could not be resumed; a new one has started."))
    return new_conversation(customer), refused


# --- Frames ---------------------------------------------------------------------------------


def author_name(user: Any) -> str:
    """What a customer sees of a staff member: a first name, never the login."""
    return (user.first_name if user is not None else "") or "Support team"


def message_frame(message: Message) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": "message", "seq": message.pk, "role": message.role, "text": message.text}
    if message.role == Role.CUSTOMER:
        frame["id"] = message.client_id or None
    if message.role == Role.STAFF:
        frame["author"] = author_name(message.author)
    return frame


def reply_frame(turn: Turn) -> dict[str, Any]:
    return {
        "type": "reply",
        "id": turn.customer_message.client_id or None,
        "seq": turn.reply_message_id,
        "text": turn.reply,
        "decision": turn.decision,
        "citations": turn.citations,
        # The quoted units: a suggestion's card is built from them (title and link of each section).
        "units": turn.units,
        "rating": rating_of(turn),
    }


def history_frames(conversation: Conversation, after: int) -> list[dict[str, Any]]:
    """Every message after ``after`` (a seq the client has shown), as the frames that first carried them."""
    if conversation.pk is None:
        return []
    messages = conversation.messages.filter(pk__gt=after).select_related(
        "author", "answered_turn__customer_message", "answered_turn__feedback"
    )
    frames = []
    for message in messages.order_by("pk"):
        turn = getattr(message, "answered_turn", None)
        frames.append(reply_frame(turn) if turn is not None else message_frame(message))
    return frames


def welcome_frame(conversation: Conversation, after: int) -> dict[str, Any]:
    return {
        "type": "welcome",
        "conversation": str(conversation.public_id),
        "token": issue_token(conversation),
        "status": conversation.status,
        "signed_in": conversation.customer_id is not None,
        "messages": history_frames(conversation, after),
        # The widget greets in the collection's name unless the page gave it a greeting of its own.
        "greeting": Voice.of(conversation.collection).greeting,
        **_handoff_state(conversation),
    }


def status_frame(conversation: Conversation) -> dict[str, Any]:
    return {"type": "status", "status": conversation.status, **_handoff_state(conversation)}


def _handoff_state(conversation: Conversation) -> dict[str, Any]:
    """What the widget needs to say about reaching a person: whether one is available (and if not, when one
    will be back), whether the customer asked for one, and whether an e-mail address is worth asking for."""
    return {
        "availability": availability.for_collection(conversation.collection).as_frame(),
        "person_requested": conversation.person_requested,
        "contact_email": bool(conversation.contact_email),
        "email_replies": settings.EMAIL_REPLIES,
    }


def open_chat(
    token: str | None, customer_token: str | None, after: int
) -> tuple[Conversation, list[ChatError], dict[str, Any] | None]:
    """resume_or_start, with the welcome frame when the conversation is new. A resumed one gets None: its
    history must be read after the socket joined the conversation's group (chat.resumed), or a reply sent in
    between would reach neither."""
    conversation, refused = resume_or_start(token, customer_token)
    return conversation, refused, welcome_frame(conversation, after) if conversation.pk is None else None


def resumed(conversation: Conversation, after: int) -> tuple[dict[str, Any], bool]:
    """A resumed conversation's welcome frame, and whether messages in it wait for an answer."""
    return welcome_frame(conversation, after), bool(unanswered(conversation))


def unanswered(conversation: Conversation) -> list[Message]:
    """Customer messages stored but never answered (the server stopped mid-turn): answered on resume."""
    if conversation.pk is None or conversation.status == ConversationStatus.HUMAN or conversation.person_requested:
        return []
    return list(conversation.messages.filter(role=Role.CUSTOMER, turn__isnull=True).order_by("pk"))


# --- The customer's side --------------------------------------------------------------------


def receive_customer_message(message: Message, created: bool) -> dict[str, Any] | None:
    """After a customer message is stored: tell staff, and return the stored reply if it has one."""
    if created:
        # The connection's copy of the conversation is as old as the connection; staff may have taken it since.
        message.conversation.refresh_from_db(fields=["status"])
        events.to_customer(message.conversation, message_frame(message))
        if message.conversation.status in (ConversationStatus.REFERRED, ConversationStatus.HUMAN):
            events.queue_changed(message.conversation)
    turn = Turn.objects.filter(customer_message=message).select_related("customer_message").first()
    return reply_frame(turn) if turn is not None else None


def answer_in_worker(message_id: int) -> TurnResult | None:
    """Answer one stored customer message, streaming the reply to everyone watching the conversation.
    Runs in a worker thread; returns None when the message needs no answer from the assistant."""
    message = Message.objects.select_related("conversation__collection").get(pk=message_id)
    conversation = message.conversation
    if conversation.status == ConversationStatus.HUMAN or conversation.person_requested or not claim_answer(message):
        return None
    question = message.client_id or None
    result = answer_message(
        message,
        services=turn_services(),
        on_delta=lambda text: events.to_customer(conversation, {"type": "token", "id": question, "text": text}),
        on_reset=lambda: events.to_customer(conversation, {"type": "reset", "id": question}),
    )
    turn = Turn.objects.select_related("customer_message").get(pk=result.turn_id)
    events.to_customer(conversation, reply_frame(turn))
    conversation.refresh_from_db(fields=["status"])
    if result.decision == "referred":
        events.to_customer(conversation, status_frame(conversation))
        events.queue_changed(conversation)
    return result


def turn_services() -> Any:
    """The models a chat turn uses, loaded once per process (tests replace this to fake Claude's HTTP)."""
    return default_services()


def announce_status(conversation: Conversation) -> None:
    events.to_customer(conversation, status_frame(conversation))
    events.queue_changed(conversation)


def save_contact(conversation: Conversation, email: str) -> dict[str, Any]:
    """The customer's e-mail address for staff replies while nobody is available (``email`` is checked by the
    protocol). Storing it stores the conversation: an address is worth keeping even before a question."""
    if not settings.EMAIL_REPLIES:
        raise ChatError("email_unavailable", "Replies by e-mail are not set up here; please keep this page open.")
    conversation = stored(conversation)
    conversation.contact_email = email
    conversation.save(update_fields=["contact_email", "updated_at"])
    transaction.on_commit(lambda: events.queue_changed(conversation))
    return {
        "type": "contact",
        "saved": True,
        "message": f"Thanks. We'll e-mail {email} when a person replies, with a link back to this chat.",
    }
