"""ASGI entry point, served by daphne: Django over HTTP, the chat and the staff queue over websockets."""

import os

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supportbot.settings")
# Django first: the consumers import models, which need the app registry ready.
http = get_asgi_application()

import threading  # noqa: E402

from django.conf import settings  # noqa: E402
from django.urls import path  # noqa: E402

from answering.services import warm_up  # noqa: E402
from conversations.chat.consumers import ChatConsumer, StaffQueueConsumer  # noqa: E402
from supportbot.rate_limits import ConnectionRateLimit  # noqa: E402

# With the Celery runner the models load in the workers; this process never runs a turn.
if settings.CHAT_WARM_MODELS and settings.CHAT_TURN_RUNNER == "threads":
    threading.Thread(target=warm_up, name="warm-models", daemon=True).start()

# Sessions identify staff; the signed chat token identifies a customer's conversation, so the chat socket
# skips the session and user lookups (two database round trips per connection in a storm of them).
websocket_routes = [
    path("ws/chat/", ChatConsumer.as_asgi()),
    path("ws/staff/", AuthMiddlewareStack(StaffQueueConsumer.as_asgi())),
]

# One address opens at most RATE_LIMIT_CONNECTIONS_PER_IP sockets a window, counted across processes.
# A page on a host not in DJANGO_ALLOWED_HOSTS cannot open either socket (a site embedding the widget
# must be listed).
application = ProtocolTypeRouter(
    {
        "http": http,
        "websocket": ConnectionRateLimit(AllowedHostsOriginValidator(URLRouter(websocket_routes))),
    }
)
