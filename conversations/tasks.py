"""The Celery tasks of the chat: answering a conversation's waiting messages in a worker process."""

import os
from typing import Any

from celery import shared_task
from celery.signals import celeryd_after_setup, worker_process_init
from django.conf import settings

from answering.services import warm_up
from conversations.chat.turn_queue import TASK_NAME, answer_pending


@shared_task(name=TASK_NAME)
def answer_conversation(conversation_id: int) -> None:
    answer_pending(conversation_id)


# Processes of this worker (`-c N`), known in its main process before they are forked.
_processes = 1


@celeryd_after_setup.connect
def _count_processes(sender: str, instance: Any, **kwargs: Any) -> None:
    global _processes
    _processes = max(1, int(instance.concurrency or 1))


@worker_process_init.connect
def _load_models(**kwargs: Any) -> None:
    import torch

    # The machine's cores shared among the worker's processes: each taking every core (torch's default) made
    # 2 processes on 2 cores answer slower than 1 (2.24 vs 3.44 turns/s).
    torch.set_num_threads(settings.CHAT_WORKER_MODEL_THREADS or max(1, (os.cpu_count() or 1) // _processes))
    # In each worker process, before its first task: the first customer does not wait ~10 s for the models.
    if settings.CHAT_WARM_MODELS:
        warm_up()
