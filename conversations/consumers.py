"""The websockets: a customer's chat (``/ws/chat/``) and the staff hand-off queue (``/ws/staff/``).

The only async code in the project. Everything that touches the database runs off the event loop in
Channels' database thread; turns run where conversations/turn_queue.py sends them (Celery worker processes,
or threads of this process without Redis), so this process only validates, stores, acknowledges and relays.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

from conversations import chat, feedback, presence, staff
from conversations.errors import FrameError, QueueUnavailable
from conversations.events import STAFF_GROUP, conversation_group, staff_member_group
from conversations.intake import store_customer_message
from conversations.models import Conversation, Message
from conversations.protocol import (
    Contact,
    CustomerMessage,
    Feedback,
    Handoff,
    Hello,
    Presence,
    TokenBucket,
    Typing,
    parse_frame,
    parse_staff_frame,
)
from conversations.turn_queue import runner

logger = logging.getLogger(__name__)

BUSY = (
    "The assistant is busy with other customers right now. Your message is kept and will be answered "
    "as soon as there is room; you can leave this page open or come back later."
)


P = ParamSpec("P")
R = TypeVar("R")


def _database(func: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """``func`` in Channels' database thread, run once more on a fresh connection when Postgres dropped the
    old one (a restart or failover): the calls here are reads, or writes keyed so that a second run finds
    what the first stored."""

    @functools.wraps(func)
    def reconnecting(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except (OperationalError, InterfaceError):
            logger.warning("the database connection was lost; reconnecting")
            # Closing a dead connection may fail; it is dropped either way.
            with contextlib.suppress(OperationalError, InterfaceError):
                connection.close()
            return func(*args, **kwargs)

    return database_sync_to_async(reconnecting)


def _store(conversation: Conversation, text: str, client_id: str) -> tuple[Message, bool]:
    return store_customer_message(chat.stored(conversation), text, client_id)


class ChatConsumer(AsyncWebsocketConsumer):
    # Set by hello; not stored until its first message (a bare hello leaves nothing behind).
    conversation: Conversation | None = None

    async def connect(self) -> None:
        self.messages = TokenBucket(settings.CHAT_MESSAGE_BURST, settings.CHAT_MESSAGES_PER_S)
        self.frames = TokenBucket(settings.CHAT_FRAME_BURST, settings.CHAT_FRAMES_PER_S)
        # Turns this connection handed to threads of this process (the "threads" runner only).
        self.local_turns: set[asyncio.Future[None]] = set()
        # While the queue is full: the task that offers the conversation to it again.
        self.retry: asyncio.Task[None] | None = None
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.conversation is not None:
            await self.channel_layer.group_discard(conversation_group(self.conversation.public_id), self.channel_name)
        if self.retry is not None:
            # The messages stay stored and unanswered; the next hello queues them.
            self.retry.cancel()
        # A turn already started finishes and is stored; the customer sees it when they reconnect.
        if self.local_turns:
            await asyncio.gather(*self.local_turns, return_exceptions=True)

    async def send_json(self, frame: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(frame, ensure_ascii=False))

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            if not self.frames.take():
                raise FrameError("rate_limited", f"Too many frames; wait {self.frames.wait_s():.0f} s.")
            frame = parse_frame(text_data, max_bytes=settings.CHAT_MAX_FRAME_BYTES, binary=bytes_data is not None)
            if isinstance(frame, Hello):
                await self.hello(frame)
            elif self.conversation is None:
                raise FrameError("hello_first", 'Send {"type": "hello"} before anything else.')
            elif isinstance(frame, CustomerMessage):
                await self.customer_message(frame)
            elif isinstance(frame, Typing):
                if self.conversation.pk is not None:  # staff cannot see a conversation that has no message yet
                    await self.channel_layer.group_send(
                        STAFF_GROUP, {"type": "queue.typing", "conversation": str(self.conversation.public_id)}
                    )
            elif isinstance(frame, Handoff):
                await _database(chat.request_handoff)(self.conversation)
            elif isinstance(frame, Contact):
                await self.send_json(await _database(chat.save_contact)(self.conversation, frame.email))
            elif isinstance(frame, Feedback):
                await _database(feedback.give_feedback)(
                    self.conversation, reply_seq=frame.seq, rating=frame.rating, reason=frame.reason
                )
        except (FrameError, chat.ChatError) as exc:
            error = exc.as_frame() if isinstance(exc, FrameError) else {"type": "error", "code": exc.code}
            error.setdefault("message", str(exc))
            await self.send_json(error)

    async def hello(self, hello: Hello) -> None:
        if self.conversation is not None:
            raise FrameError("already_started", "This connection already said hello.")
        conversation, refused = await _database(chat.resume_or_start)(hello.token, hello.customer_token)
        self.conversation = conversation
        await self.channel_layer.group_add(conversation_group(conversation.public_id), self.channel_name)
        for error in refused:
            await self.send_json({"type": "error", "code": error.code, "message": str(error)})
        await self.send_json(await _database(chat.welcome_frame)(conversation, hello.after))
        if await _database(chat.unanswered)(conversation):
            await self.queue_turn(None)

    async def customer_message(self, frame: CustomerMessage) -> None:
        assert self.conversation is not None
        if not self.messages.take():
            raise FrameError(
                "rate_limited", f"You are sending messages too fast; wait {self.messages.wait_s():.0f} s.", frame.id
            )
        message, created = await _database(_store)(self.conversation, frame.text, frame.id)
        await self.send_json({"type": "ack", "id": frame.id, "seq": message.pk})
        stored_reply = await _database(chat.receive_customer_message)(message, created)
        if stored_reply is not None:
            await self.send_json(stored_reply)
        else:
            await self.queue_turn(frame.id)

    async def queue_turn(self, client_id: str | None) -> None:
        """Hand the conversation's waiting messages to a worker, telling the customer their place when others
        are ahead; when the queue is full (or unreachable), say so and try again while they wait."""
        if self.retry is not None and not self.retry.done():
            return  # the retry already hands over every waiting message of the conversation
        if not await self.try_queue(client_id):
            await self.send_json({"type": "busy", "id": client_id, "message": BUSY})
            self.retry = asyncio.get_running_loop().create_task(self.queue_when_free(client_id))

    async def queue_when_free(self, client_id: str | None) -> None:
        while not await self.try_queue(client_id):
            await asyncio.sleep(settings.CHAT_BUSY_RETRY_S)

    async def try_queue(self, client_id: str | None) -> bool:
        assert self.conversation is not None
        turns = runner()
        try:
            ahead = await sync_to_async(turns.waiting, thread_sensitive=False)()
            if ahead >= settings.CHAT_TURN_QUEUE_LIMIT:
                return False
            if ahead:
                await self.send_json(
                    {
                        "type": "queued",
                        "id": client_id,
                        "position": ahead + 1,
                        "message": f"The assistant is answering other customers; you are number {ahead + 1} in line.",
                    }
                )
            submitted = await sync_to_async(turns.submit, thread_sensitive=False)(self.conversation)
        except QueueUnavailable as exc:
            # The message is stored; the retry hands it over when Redis is back.
            logger.warning("%s Conversation %s waits.", exc, self.conversation.public_id)
            return False
        if submitted is not None:
            local = asyncio.wrap_future(submitted)
            self.local_turns.add(local)
            local.add_done_callback(self.local_turns.discard)
        return True

    async def chat_frame(self, event: dict[str, Any]) -> None:
        await self.send_json(event["frame"])


class StaffQueueConsumer(AsyncWebsocketConsumer):
    """Live updates of the hand-off queue for signed-in staff: each changed conversation's card, re-rendered
    for the person watching (what personal data they may see depends on who they are). Each open socket
    counts towards the person's presence: when their last one closes they are away."""

    # Set once the connection is accepted: a refused one counts towards nobody's presence.
    user: Any = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_active or not user.is_staff:
            await self.close(code=4403)
            return
        self.frames = TokenBucket(settings.CHAT_FRAME_BURST, settings.CHAT_FRAMES_PER_S)
        await self.channel_layer.group_add(STAFF_GROUP, self.channel_name)
        await self.accept()
        await self.channel_layer.group_add(staff_member_group(user.pk), self.channel_name)
        counted = await _database(presence.socket_opened)(user)
        self.user = user
        await self.send(text_data=json.dumps({"type": "presence", "status": counted.status}))

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(STAFF_GROUP, self.channel_name)
        if self.user is not None:
            await self.channel_layer.group_discard(staff_member_group(self.user.pk), self.channel_name)
            await _database(presence.socket_closed)(self.user)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Staff act through the queue's forms; here they only say they are typing (shown to the customer of
        that conversation) and whether they take hand-offs now."""
        try:
            if not self.frames.take():
                raise FrameError("rate_limited", "Too many frames.")
            frame = parse_staff_frame(text_data, binary=bytes_data is not None)
            if isinstance(frame, Presence):
                await _database(presence.set_status)(self.user, frame.status)
            else:
                await self.channel_layer.group_send(
                    conversation_group(frame.conversation),
                    {"type": "chat.frame", "frame": {"type": "typing", "role": "staff"}},
                )
        except FrameError as exc:
            await self.send(text_data=json.dumps(exc.as_frame()))
        except chat.ChatError as exc:
            await self.send(text_data=json.dumps({"type": "error", "code": exc.code, "message": str(exc)}))

    async def queue_changed(self, event: dict[str, Any]) -> None:
        card = await _database(staff.card_frame)(event["conversation"], self.user)
        await self.send(text_data=json.dumps(card))

    async def queue_typing(self, event: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps({"type": "typing", "conversation": event["conversation"]}))

    async def presence_changed(self, event: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps({"type": "presence", "status": event["status"]}))
