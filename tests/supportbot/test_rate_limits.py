"""Limits per client address: new websockets (through the real ASGI application) and posts (through the
real middleware stack), counted in the cache; with Redis, shared by every process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid

import pytest
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings

from supportbot.asgi import application
from supportbot.rate_limits import CLOSE_RATE_LIMITED, Limit

ORIGIN = (b"origin", b"http://127.0.0.1")


def redis_cache(url: str) -> dict[str, dict[str, object]]:
    return {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": uuid.uuid4().hex,
        }
    }


async def connect_from(address: str) -> tuple[WebsocketCommunicator, bool]:
    socket = WebsocketCommunicator(application, "/ws/chat/", headers=[ORIGIN])
    socket.scope["client"] = (address, 50000)
    connected, _ = await socket.connect()
    return socket, connected


async def assert_refused(socket: WebsocketCommunicator, connected: bool) -> None:
    assert connected  # accepted only to say why
    frame = await socket.receive_json_from(timeout=5)
    assert frame["type"] == "error" and frame["code"] == "rate_limited"
    assert frame["message"].startswith("Too many new chats from your address; try again in ")
    closed = await socket.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": CLOSE_RATE_LIMITED}


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)  # the consumer closes stale database connections
async def test_an_address_opens_only_so_many_chats_per_window(settings):
    settings.RATE_LIMIT_CONNECTIONS_PER_IP = 3
    opened = [await connect_from("203.0.113.7") for _ in range(3)]
    assert all(connected for _, connected in opened)
    for socket, _ in opened:
        await socket.disconnect()

    await assert_refused(*await connect_from("203.0.113.7"))

    # Another address is not held up by the first.
    other, connected = await connect_from("198.51.100.2")
    assert connected
    await other.send_json_to({"type": "typing"})
    assert (await other.receive_json_from(timeout=5))["code"] == "hello_first"  # the consumer is serving it
    await other.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)  # the consumer closes stale database connections
async def test_the_window_opens_again_when_it_ends(settings):
    # Long enough that a loaded machine connects twice within it (1 s was not, in CI).
    settings.RATE_LIMIT_CONNECTIONS_PER_IP, settings.RATE_LIMIT_WINDOW_S = 1, 3
    first, connected = await connect_from("203.0.113.8")
    assert connected
    await first.disconnect()
    await assert_refused(*await connect_from("203.0.113.8"))
    await asyncio.sleep(3.1)
    again, connected = await connect_from("203.0.113.8")
    assert connected
    await again.send_json_to({"type": "typing"})
    assert (await again.receive_json_from(timeout=5))["code"] == "hello_first"
    await again.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)  # the consumer closes stale database connections
async def test_with_redis_the_count_is_shared_by_every_process(settings, private_redis):
    """Another process (a second server) opens the address's connections; this one then refuses it."""
    settings.CACHES = redis_cache(private_redis)
    settings.RATE_LIMIT_CONNECTIONS_PER_IP = 2
    prefix = settings.CACHES["default"]["KEY_PREFIX"]
    code = (
        "import django; django.setup()\n"
        "from django.conf import settings\n"
        f"settings.CACHES['default']['KEY_PREFIX'] = {prefix!r}\n"
        "from supportbot.rate_limits import connection_limit\n"
        "print([connection_limit().hit('203.0.113.9').allowed for _ in range(2)])\n"
    )
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "supportbot.settings",
        "DATABASE_URL": os.environ.get("DATABASE_URL", django_settings.DEFAULT_DATABASE_URL),
        "REDIS_URL": private_redis,
        "RATE_LIMIT_CONNECTIONS_PER_IP": "2",
        "CHAT_WARM_MODELS": "0",
    }
    other = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=django_settings.BASE_DIR, capture_output=True, text=True, timeout=60
    )
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() == "[True, True]"

    await assert_refused(*await connect_from("203.0.113.9"))
    fresh, connected = await connect_from("203.0.113.10")
    assert connected
    await fresh.disconnect()


def test_posts_are_limited_per_address_and_reads_are_not(client, settings, db):
    settings.RATE_LIMIT_WRITES_PER_IP = 3
    for _ in range(3):
        response = client.post("/staff/login/", {"username": "x", "password": "y"}, REMOTE_ADDR="203.0.113.20")
        assert response.status_code == 200  # the form, with its error

    refused = client.post("/staff/login/", {"username": "x", "password": "y"}, REMOTE_ADDR="203.0.113.20")
    assert refused.status_code == 429
    assert refused.content.decode().startswith("Too many requests from your address; try again in ")
    assert 1 <= int(refused["Retry-After"]) <= settings.RATE_LIMIT_WINDOW_S

    as_json = client.post("/staff/login/", REMOTE_ADDR="203.0.113.20", HTTP_ACCEPT="application/json")
    assert as_json.status_code == 429 and as_json.json()["error"] == "rate_limited"
    assert client.get("/staff/login/", REMOTE_ADDR="203.0.113.20").status_code == 200
    other = client.post("/staff/login/", {"username": "x", "password": "y"}, REMOTE_ADDR="198.51.100.20")
    assert other.status_code == 200


def test_with_redis_posts_are_counted_in_redis(client, settings, db, private_redis):
    settings.CACHES = redis_cache(private_redis)
    settings.RATE_LIMIT_WRITES_PER_IP = 1
    assert client.post("/staff/login/", REMOTE_ADDR="203.0.113.21").status_code == 200
    assert client.post("/staff/login/", REMOTE_ADDR="203.0.113.21").status_code == 429
    # The count is Redis's: a fresh in-process cache would have allowed the next post.
    assert Limit("http-write", 1, settings.RATE_LIMIT_WINDOW_S).peek("203.0.113.21").count == 2


def test_a_window_counts_from_its_first_event(settings):
    limit = Limit("trial", 2, 60)
    first, second, third = (limit.hit("someone") for _ in range(3))
    assert (first.allowed, second.allowed, third.allowed) == (True, True, False)
    assert (first.count, third.count) == (1, 3)
    assert 59 <= third.retry_after_s <= 60
    assert limit.hit("someone else").allowed
    limit.clear("someone")
    assert limit.peek("someone").allowed and limit.peek("someone").count == 0
