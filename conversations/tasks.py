"""The Celery tasks of the chat: answering a conversation's waiting messages in a worker process."""

from typing import Any

from celery import shared_task
from celery.signals import worker_process_init
from django.conf import settings

from conversations.services import warm_up
from conversations.turn_queue import TASK_NAME, answer_pending


@shared_task(name=TASK_NAME)
def answer_conversation(conversation_id: int) -> None:
    answer_pending(conversation_id)


@worker_process_init.connect
def _load_models(**kwargs: Any) -> None:
    # In each worker process, before its first task: the first customer does not wait ~10 s for the models.
    if settings.CHAT_WARM_MODELS:
        warm_up()
