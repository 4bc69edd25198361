"""The Django project: settings, URLs, the ASGI and Celery apps, and helpers every app may use."""

# Loaded with Django, so tasks queued from any process (the websocket server) use the project's Celery app.
from supportbot.celery import app as celery_app

__all__ = ["celery_app"]
