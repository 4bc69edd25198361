"""The websockets: a customer's chat (``/ws/chat/``) and the staff hand-off queue (``/ws/staff/``).

The only async code in the project. Everything that touches the database or the models runs off the event
loop: short queries in Channels' database thread, turns in a pool of worker threads of their own (a turn
is CPU-bound for ~0.2 s and must not hold up other connections' acknowledgements).
"""

from __future__ import annotations

import asyncio
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import connections

from conversations import chat, staff
from conversations.errors import FrameError
from conversations.events import STAFF_GROUP, conversation_group
from conversations.intake import store_customer_message
from conversations.models import Conversation
from conversations.protocol import CustomerMessage, Handoff, Hello, TokenBucket, Typing, parse_frame, parse_staff_typing

logger = logging.getLogger(__name__)


@cache
def turn_executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=settings.CHAT_TURN_WORKERS, thread_name_prefix="turn")


def _answer(message_id: int) -> None:
    try:
        chat.answer_in_worker(message_id)
    finally:
        # Worker threads are few and long-lived; a connection left open in one outlives its usefulness and
        # holds the database (tests cannot drop theirs). Reconnecting costs milliseconds against a turn.
        connections.close_all()


class ChatConsumer(AsyncWebsocketConsumer):
    conversation: Conversation | None = None

    async def connect(self) -> None:
        self.messages = TokenBucket(settings.CHAT_MESSAGE_BURST, settings.CHAT_MESSAGES_PER_S)
        self.frames = TokenBucket(settings.CHAT_FRAME_BURST, settings.CHAT_FRAMES_PER_S)
        # One turn at a time per connection, so replies arrive in the order the questions were asked.
        self.turn_lock = asyncio.Lock()
        self.turns: set[asyncio.Task[None]] = set()
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.conversation is not None:
            await self.channel_layer.group_discard(conversation_group(self.conversation.public_id), self.channel_name)
        # A turn already started finishes and is stored; the customer sees it when they reconnect.
        if self.turns:
            await asyncio.gather(*self.turns, return_exceptions=True)

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
                await self.channel_layer.group_send(
                    STAFF_GROUP, {"type": "queue.typing", "conversation": str(self.conversation.public_id)}
                )
            elif isinstance(frame, Handoff):
                await database_sync_to_async(chat.request_handoff)(self.conversation)
        except (FrameError, chat.ChatError) as exc:
            error = exc.as_frame() if isinstance(exc, FrameError) else {"type": "error", "code": exc.code}
            error.setdefault("message", str(exc))
            await self.send_json(error)

    async def hello(self, hello: Hello) -> None:
        if self.conversation is not None:
            raise FrameError("already_started", "This connection already said hello.")
        conversation, refused = await database_sync_to_async(chat.resume_or_start)(hello.token, hello.customer_token)
        self.conversation = conversation
        await self.channel_layer.group_add(conversation_group(conversation.public_id), self.channel_name)
        for error in refused:
            await self.send_json({"type": "error", "code": error.code, "message": str(error)})
        await self.send_json(await database_sync_to_async(chat.welcome_frame)(conversation, hello.after))
        for message in await database_sync_to_async(chat.unanswered)(conversation):
            self.schedule(message.pk)

    async def customer_message(self, frame: CustomerMessage) -> None:
        assert self.conversation is not None
        if not self.messages.take():
            raise FrameError(
                "rate_limited", f"You are sending messages too fast; wait {self.messages.wait_s():.0f} s.", frame.id
            )
        message, created = await database_sync_to_async(store_customer_message)(self.conversation, frame.text, frame.id)
        await self.send_json({"type": "ack", "id": frame.id, "seq": message.pk})
        stored_reply = await database_sync_to_async(chat.receive_customer_message)(message, created)
        if stored_reply is not None:
            await self.send_json(stored_reply)
        else:
            self.schedule(message.pk)

    def schedule(self, message_id: int) -> None:
        task = asyncio.get_running_loop().create_task(self.answer(message_id))
        self.turns.add(task)
        task.add_done_callback(self.turns.discard)

    async def answer(self, message_id: int) -> None:
        async with self.turn_lock:
            try:
                await sync_to_async(_answer, thread_sensitive=False, executor=turn_executor())(message_id)
            except Exception:
                # answer_message refers every failure; this is a failure to even load or record the turn.
                logger.exception("answering message %s failed", message_id)
                await self.send_json(
                    {"type": "error", "code": "server_error", "message": "Something went wrong; please try again."}
                )

    async def chat_frame(self, event: dict[str, Any]) -> None:
        await self.send_json(event["frame"])


class StaffQueueConsumer(AsyncWebsocketConsumer):
    """Live updates of the hand-off queue for signed-in staff: each changed conversation's card, re-rendered
    for the person watching (what personal data they may see depends on who they are)."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_active or not user.is_staff:
            await self.close(code=4403)
            return
        self.user = user
        self.frames = TokenBucket(settings.CHAT_FRAME_BURST, settings.CHAT_FRAMES_PER_S)
        await self.channel_layer.group_add(STAFF_GROUP, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(STAFF_GROUP, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Staff act through the queue's forms; the one frame they send here is "typing", shown to the
        customer of that conversation."""
        try:
            if not self.frames.take():
                raise FrameError("rate_limited", "Too many frames.")
            public_id = parse_staff_typing(text_data, binary=bytes_data is not None)
            await self.channel_layer.group_send(
                conversation_group(public_id), {"type": "chat.frame", "frame": {"type": "typing", "role": "staff"}}
            )
        except FrameError as exc:
            await self.send(text_data=json.dumps(exc.as_frame()))

    async def queue_changed(self, event: dict[str, Any]) -> None:
        card = await database_sync_to_async(staff.card_frame)(event["conversation"], self.user)
        await self.send(text_data=json.dumps(card))

    async def queue_typing(self, event: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps({"type": "typing", "conversation": event["conversation"]}))
