"""ASGI entry point, served by daphne. Websocket routes arrive with the chat issue."""

import os

from channels.routing import ProtocolTypeRouter
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supportbot.settings")

application = ProtocolTypeRouter({"http": get_asgi_application()})
