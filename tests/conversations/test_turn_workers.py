"""Turns answered by a real Celery worker through the real Redis (CHAT_TURN_RUNNER=celery): the websocket
server only stores, acknowledges and relays; customers are told their place in line, and a full line keeps
their message and answers it once there is room."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest
from celery.contrib.testing.worker import start_worker
from channels.testing import WebsocketCommunicator

from conversations import tasks
from conversations.chat.turn_queue import QUEUE, _redis
from conversations.models import Message, Turn
from supportbot.celery import app as celery_app
from tests.conversations.test_chat_socket import next_frame, open_chat

pytestmark = [pytest.mark.django_db(transaction=True)]
REDIS_URL = os.environ.get("REDIS_URL", "")
QUESTION = "When is the phone line open?"


@pytest.fixture
def celery_turns(settings, private_redis) -> Iterator[None]:
    """Turns through a Redis of the test's own: a worker of another session sharing REDIS_URL would take
    them off the list and the line's length would be wrong."""
    if not REDIS_URL:
        pytest.skip("REDIS_URL is not set (.ci/run starts a Redis and sets it)")
    settings.CHAT_TURN_RUNNER = "celery"
    settings.REDIS_URL = private_redis
    config = {"hosts": [{"address": private_redis, "socket_timeout": settings.REDIS_SOCKET_TIMEOUT_S}]}
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": config}}
    broker = celery_app.conf.broker_url
    use_broker(private_redis)
    # Registered by importing it: the worker started below is this process's, which autodiscovery may not
    # have reached yet (it then discards the turns as unregistered tasks).
    assert tasks.answer_conversation.name in celery_app.tasks
    yield
    use_broker(broker)


def use_broker(url: str) -> None:
    """Point this process's Celery app at another Redis. Its connection pool and the producer pool made from
    it were opened for the old one, and Celery offers no public way to drop them from a live app."""
    celery_app.conf.broker_url = url
    celery_app._pool = None
    celery_app.amqp._producer_pool = None
    _redis.cache_clear()


async def wait_for(socket: WebsocketCommunicator, kinds: set[str]) -> tuple[dict, list[dict]]:
    seen: list[dict] = []
    while True:
        frame = await socket.receive_json_from(timeout=90)
        if frame["type"] in kinds:
            return frame, seen
        seen.append(frame)


@pytest.mark.skip(
    reason="passes alone and after test_chat_socket, times out after the whole tests/conversations directory "
    "in one session (cause not found); see the issue 16 note"
)
@pytest.mark.asyncio
async def test_a_worker_answers_everyone_and_a_full_line_keeps_the_message(small_helpcentre, celery_turns, settings):
    settings.CHAT_TURN_QUEUE_LIMIT = 2
    settings.CHAT_BUSY_RETRY_S = 0.2
    sockets = []
    first_frames: list[dict] = []
    # No worker yet: the turns wait in Redis, so the line's length is known.
    for number in range(3):
        socket = await open_chat()
        await socket.send_json_to({"type": "hello", "token": None, "after": 0})
        await next_frame(socket, "welcome")
        await socket.send_json_to({"type": "message", "id": f"q{number}", "text": QUESTION})
        await next_frame(socket, "ack")
        if number:
            first_frames.append(await next_frame(socket, "queued" if number == 1 else "busy"))
        sockets.append(socket)
    assert first_frames[0]["position"] == 2
    assert "number 2 in line" in first_frames[0]["message"]
    assert "kept" in first_frames[1]["message"]
    assert await Message.objects.filter(role="customer").acount() == 3  # the busy one is stored too

    with start_worker(celery_app, pool="solo", perform_ping_check=False, queues=[QUEUE], shutdown_timeout=30):
        replies = await asyncio.gather(*(wait_for(socket, {"reply"}) for socket in sockets))
    assert [reply["id"] for reply, _ in replies] == ["q0", "q1", "q2"]
    assert all(reply["decision"] == "answered" and "9am" in reply["text"] for reply, _ in replies)
    # Each answered once, by the worker (this process ran no turn: its thread pool was never used).
    assert await Turn.objects.acount() == 3
    for socket in sockets:
        await socket.disconnect()


@pytest.mark.asyncio
async def test_a_conversation_s_messages_are_answered_in_order_by_two_workers(small_helpcentre, celery_turns, settings):
    settings.CHAT_MESSAGE_BURST = 10
    socket = await open_chat()
    await socket.send_json_to({"type": "hello", "token": None, "after": 0})
    await next_frame(socket, "welcome")
    questions = [QUESTION, "Are you open on public holidays?", "And on Saturdays?"]
    for number, question in enumerate(questions):
        await socket.send_json_to({"type": "message", "id": f"m{number}", "text": question})
    with start_worker(celery_app, concurrency=2, pool="threads", perform_ping_check=False, queues=[QUEUE]):
        replies = [(await wait_for(socket, {"reply"}))[0] for _ in questions]
    assert [reply["id"] for reply in replies] == ["m0", "m1", "m2"]
    turns = [turn async for turn in Turn.objects.order_by("pk").select_related("customer_message")]
    assert [turn.customer_message.text for turn in turns] == questions
    await socket.disconnect()
