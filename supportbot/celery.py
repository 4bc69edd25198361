"""The Celery application: chat turns (and, later, ingestion) run in its worker processes.

Start a worker with ``celery -A supportbot worker -Q turns``; settings are the ``CELERY_*`` ones in
supportbot/settings.py, read from the environment like the rest.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supportbot.settings")

app = Celery("supportbot")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
