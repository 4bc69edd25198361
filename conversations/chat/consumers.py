"""The websockets: a customer's chat (``/ws/chat/``) and the staff hand-off queue (``/ws/staff/``).

The only async code in the project. Everything that touches the database runs off the event loop in this
module's thread pools; turns run where conversations/chat/turn_queue.py sends them (Celery worker processes,
or threads of this process without Redis), so this process only validates, stores, acknowledges and relays.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import weakref
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection
from redis.exceptions import RedisError

from conversations.chat import feedback, session
from conversations.chat.events import STAFF_GROUP, conversation_group, staff_member_group
from conversations.chat.intake import Incoming, store_customer_messages
from conversations.chat.protocol import (
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
from conversations.chat.turn_queue import runner
from conversations.errors import ChatError, FrameError, QueueUnavailable
from conversations.handoff import actions, presence, staff
from conversations.models import PRESENCE_HEARTBEAT_S, Conversation, Message
from supportbot.rate_limits import CLOSE_UNAVAILABLE, SOCKET_UNAVAILABLE, close_saying

logger = logging.getLogger(__name__)

BUSY = (
    "The assistant is busy with other customers right now. Your message is kept and will be answered "
    "as soon as there is room; you can leave this page open or come back later."
)

P = ParamSpec("P")
R = TypeVar("R")


# Channels' own database_sync_to_async runs every consumer's calls one at a time in one thread: with 200
# customers at once, an acknowledgement waited behind everyone else's hello (p95 4.2 s). Instead a pool whose
# threads each have their own connection, and one thread of its own for storing customer messages (what an
# acknowledgement waits for). Not the loop's default executor: asyncio resolves host names there, and a call
# blocked on the loop (a group_send from sync code) could wait for a thread it occupies itself.
_DATABASE = ThreadPoolExecutor(max_workers=settings.CHAT_DATABASE_THREADS, thread_name_prefix="chat-database")
_INTAKE = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chat-intake")


def _database(func: Callable[P, R], pool: ThreadPoolExecutor = _DATABASE) -> Callable[P, Awaitable[R]]:
    """``func`` in one of ``pool``'s threads, run once more on a fresh connection when Postgres dropped the
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

    return database_sync_to_async(reconnecting, thread_sensitive=False, executor=pool)


def _offer(conversation: Conversation) -> tuple[int, Future[None] | None] | None:
    """Queue the conversation's waiting messages unless the line is full (None): how many turns are ahead,
    and the turn's future when it runs in this process. One trip to Redis's thread, not two."""
    turns = runner()
    ahead = turns.waiting()
    if ahead >= settings.CHAT_TURN_QUEUE_LIMIT:
        return None
    return ahead, turns.submit(conversation)


class MessageWriter:
    """Stores the customer messages of every chat of this process, a batch at a time: the messages that
    arrive while one batch is being written go into the next, with one commit for all (group commit). One
    per event loop: its futures belong to the loop."""

    def __init__(self) -> None:
        self.waiting: list[tuple[Incoming, asyncio.Future[tuple[Message, bool]]]] = []
        self.writer: asyncio.Task[None] | None = None  # held: the loop keeps only a weak reference to tasks

    async def store(self, incoming: Incoming) -> tuple[Message, bool]:
        stored: asyncio.Future[tuple[Message, bool]] = asyncio.get_running_loop().create_future()
        self.waiting.append((incoming, stored))
        if self.writer is None:
            self.writer = asyncio.get_running_loop().create_task(self.write())
        return await stored

    async def write(self) -> None:
        # Once round the loop first: the frames that arrived with this one join its batch.
        await asyncio.sleep(0)
        try:
            while self.waiting:
                batch, self.waiting = self.waiting, []
                try:
                    results = await _database(store_customer_messages, _INTAKE)([item for item, _ in batch])
                except Exception as exc:  # each customer gets the error as if theirs had been stored alone
                    for _, stored in batch:
                        if not stored.cancelled():
                            stored.set_exception(exc)
                else:
                    for (_, stored), result in zip(batch, results, strict=True):
                        if not stored.cancelled():  # the customer left meanwhile; the message is stored anyway
                            stored.set_result(result)
        finally:
            self.writer = None


_writers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, MessageWriter] = weakref.WeakKeyDictionary()


def message_writer() -> MessageWriter:
    loop = asyncio.get_running_loop()
    if loop not in _writers:
        _writers[loop] = MessageWriter()
    return _writers[loop]


class ChatConsumer(AsyncWebsocketConsumer):
    # Set by hello; not stored until its first message (a bare hello leaves nothing behind).
    conversation: Conversation | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """The consumer, and when the channel layer's Redis goes away (nothing can reach the chat without it):
        a frame saying so before the close, where a bare 1011 would tell the customer nothing."""
        accepted = False

        async def noting_accept(message: dict[str, Any]) -> None:
            nonlocal accepted
            accepted = accepted or message["type"] == "websocket.accept"
            await send(message)

        try:
            await super().__call__(scope, receive, noting_accept)
        except RedisError as exc:
            logger.warning("the channel layer's Redis cannot be reached (%s); closing the chat", exc)
            await close_saying(send, SOCKET_UNAVAILABLE, CLOSE_UNAVAILABLE, accept=not accepted)

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
                await _database(actions.request_handoff)(self.conversation, frame.seq)
            elif isinstance(frame, Contact):
                await self.send_json(await _database(session.save_contact)(self.conversation, frame.email))
            elif isinstance(frame, Feedback):
                await _database(feedback.give_feedback)(
                    self.conversation, reply_seq=frame.seq, rating=frame.rating, reason=frame.reason
                )
        except (FrameError, ChatError) as exc:
            error = exc.as_frame() if isinstance(exc, FrameError) else {"type": "error", "code": exc.code}
            error.setdefault("message", str(exc))
            await self.send_json(error)

    async def hello(self, hello: Hello) -> None:
        if self.conversation is not None:
            raise FrameError("already_started", "This connection already said hello.")
        conversation, refused, welcome = await _database(session.open_chat)(
            hello.token, hello.customer_token, hello.after
        )
        self.conversation = conversation
        await self.channel_layer.group_add(conversation_group(conversation.public_id), self.channel_name)
        for error in refused:
            await self.send_json({"type": "error", "code": error.code, "message": str(error)})
        waiting = False
        if welcome is None:
            welcome, waiting = await _database(session.resumed)(conversation, hello.after)
        await self.send_json(welcome)
        if waiting:
            await self.queue_turn(None)

    async def customer_message(self, frame: CustomerMessage) -> None:
        assert self.conversation is not None
        if not self.messages.take():
            raise FrameError(
                "rate_limited", f"You are sending messages too fast; wait {self.messages.wait_s():.0f} s.", frame.id
            )
        # parse_frame validated the text.
        message, created = await message_writer().store(Incoming(self.conversation, frame.text, frame.id))
        await self.send_json({"type": "ack", "id": frame.id, "seq": message.pk})
        stored_reply = await _database(session.receive_customer_message)(message, created)
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
        try:
            offered = await sync_to_async(_offer, thread_sensitive=False)(self.conversation)
        except QueueUnavailable as exc:
            # The message is stored; the retry hands it over when Redis is back.
            logger.warning("%s Conversation %s waits.", exc, self.conversation.public_id)
            return False
        if offered is None:
            return False
        ahead, submitted = offered
        if ahead:
            await self.send_json(
                {
                    "type": "queued",
                    "id": client_id,
                    "position": ahead + 1,
                    "message": f"The assistant is answering other customers; you are number {ahead + 1} in line.",
                }
            )
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
        self.heartbeat = asyncio.create_task(self._beat())
        await self.send(text_data=json.dumps({"type": "presence", "status": counted.status}))

    async def _beat(self) -> None:
        """Say every PRESENCE_HEARTBEAT_S that this socket is open: if this process stops without closing
        it, the silence is what tells the others the person is gone."""
        while True:
            await asyncio.sleep(PRESENCE_HEARTBEAT_S)
            try:
                await _database(presence.heartbeat)(self.user)
            except Exception:  # one missed beat is harmless; a stopped heartbeat would make the person away
                logger.exception("staff presence heartbeat failed; trying again at the next beat")

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(STAFF_GROUP, self.channel_name)
        if self.user is not None:
            self.heartbeat.cancel()
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
        except ChatError as exc:
            await self.send(text_data=json.dumps({"type": "error", "code": exc.code, "message": str(exc)}))

    async def queue_changed(self, event: dict[str, Any]) -> None:
        card = await _database(staff.card_frame)(event["conversation"], self.user)
        await self.send(text_data=json.dumps(card))

    async def queue_typing(self, event: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps({"type": "typing", "conversation": event["conversation"]}))

    async def presence_changed(self, event: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps({"type": "presence", "status": event["status"]}))
