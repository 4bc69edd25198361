"""Where chat turns run, and the queue in front of them.

A turn is the unit of CPU work (~0.5 s of models on 2 cores). With the "celery" runner it runs in Celery
worker processes fed through Redis, so the process holding the websockets only validates, stores,
acknowledges and relays, and more workers (processes or machines) answer more customers. The "threads"
runner keeps one process for development without Redis. Either way a conversation's messages are answered
one at a time, oldest first, by whichever worker holds its lock.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Protocol

from django.conf import settings
from django.db import connection, connections

from conversations.chat import events, session
from conversations.chat.intake import claimable
from conversations.errors import QueueUnavailable
from conversations.models import Conversation, ConversationStatus, Message, Role

if TYPE_CHECKING:
    from redis import Redis

logger = logging.getLogger(__name__)

TASK_NAME = "conversations.tasks.answer_conversation"
QUEUE = "turns"  # CELERY_TASK_ROUTES sends the task here; Redis keeps the waiting ones in a list of this name
# First key of the Postgres advisory lock a worker holds while it answers a conversation (the second is the
# conversation's id): "turn" in ASCII, so no other lock of the project's can collide with it.
_LOCK_SPACE = 0x7475726E
SERVER_ERROR = {"type": "error", "code": "server_error", "message": "Something went wrong; please try again."}


@contextlib.contextmanager
def _answering(conversation_id: int) -> Iterator[bool]:
    """True when this worker now answers the conversation; False when another one already is. A session
    lock: it goes with the worker's database connection if the worker dies."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [_LOCK_SPACE, conversation_id])
        (held,) = cursor.fetchone()
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_SPACE, conversation_id])


def _next_waiting(conversation_id: int) -> Message | None:
    """The oldest customer message the assistant should answer. None while a person has the conversation
    (taken over, or the customer asked for one); a message a staff reply came after was answered by them."""
    waiting = claimable(Message.objects.filter(conversation_id=conversation_id))
    last_staff = Message.objects.filter(conversation_id=conversation_id, role=Role.STAFF).order_by("-pk").first()
    if last_staff is not None:
        waiting = waiting.filter(pk__gt=last_staff.pk)
    return (
        waiting.exclude(conversation__status=ConversationStatus.HUMAN)
        .exclude(conversation__person_requested=True)
        .order_by("pk")
        .first()
    )


def answer_pending(conversation_id: int) -> None:
    """Answer the conversation's waiting messages, oldest first, unless another worker is already at it.

    The holder checks again after letting go: a message stored while it held the lock was queued for a
    worker that found the lock taken and left, so the holder is the one that must see it.
    """
    while True:
        with _answering(conversation_id) as held:
            if not held:
                return
            while (message := _next_waiting(conversation_id)) is not None:
                try:
                    answered = session.answer_in_worker(message.pk)
                except Exception:
                    # answer_message refers every failure of the pipeline; this is a failure to even load or
                    # record the turn. The message stays stored and is answered again when the customer returns.
                    logger.exception("answering message %s failed", message.pk)
                    events.to_customer(message.conversation, SERVER_ERROR)
                    return
                if answered is None:  # taken by a person meanwhile, or claimed by a stale worker's retry
                    return
        if _next_waiting(conversation_id) is None:
            return


class TurnRunner(Protocol):
    def submit(self, conversation: Conversation) -> Future[None] | None:
        """Queue the conversation's waiting messages for a worker."""

    def waiting(self) -> int:
        """Turns queued that no worker has started yet."""


class ThreadRunner:
    def __init__(self, workers: int) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="turn")
        self._lock = threading.Lock()
        self._waiting = 0
        self._unfinished: set[Future[None]] = set()

    def submit(self, conversation: Conversation) -> Future[None]:
        with self._lock:
            self._waiting += 1
        future = self._executor.submit(self._run, conversation.pk)
        with self._lock:
            self._unfinished.add(future)
        # Added after the set holds it: a turn already done is discarded at once, never left behind.
        future.add_done_callback(self._unfinished.discard)
        return future

    def _run(self, conversation_id: int) -> None:
        with self._lock:
            self._waiting -= 1
        try:
            answer_pending(conversation_id)
        finally:
            # Worker threads are few and long-lived; a connection left open in one outlives its usefulness
            # and holds the database (tests cannot drop theirs). Reconnecting costs milliseconds.
            connections.close_all()

    def waiting(self) -> int:
        return self._waiting

    def settle(self, within_s: float) -> bool:
        """Waits for the turns submitted so far (a flood's keep writing after its socket closed): whoever empties
        the database must wait for them, or it races their writes. False if some are still running."""
        with self._lock:
            unfinished = set(self._unfinished)
        return not wait(unfinished, timeout=within_s).not_done

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)


class CeleryRunner:
    def submit(self, conversation: Conversation) -> None:
        from kombu.exceptions import OperationalError

        from supportbot.celery import app

        try:
            app.send_task(TASK_NAME, args=[conversation.pk])
        except OperationalError as exc:
            raise QueueUnavailable(f"The turn queue at REDIS_URL cannot be reached: {exc}") from exc

    def waiting(self) -> int:
        from redis.exceptions import RedisError

        try:
            return int(_redis().llen(QUEUE))
        except RedisError as exc:
            raise QueueUnavailable(f"The turn queue at REDIS_URL cannot be reached: {exc}") from exc


@functools.cache
def _redis() -> Redis:
    from redis import Redis

    return Redis.from_url(settings.REDIS_URL, socket_timeout=5)


@functools.cache
def thread_runner() -> ThreadRunner:
    """The process's pool of turn threads, started on first use."""
    return ThreadRunner(settings.CHAT_TURN_WORKERS)


def runner() -> TurnRunner:
    """The configured runner (CHAT_TURN_RUNNER)."""
    return CeleryRunner() if settings.CHAT_TURN_RUNNER == "celery" else thread_runner()
