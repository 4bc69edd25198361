"""What answering runs on: the models and the language-model provider, loaded once per process."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from django.conf import settings

from answering.ground.grounding import Grounder
from answering.providers.base import LanguageModel
from answering.providers.registry import language_model_from_settings
from knowledge.embeddings import Embedder, default_embedder
from knowledge.rerank import CrossEncoder, default_reranker


@dataclass
class TurnServices:
    """What a turn needs, loaded once per process; tests build their own."""

    embedder: Embedder
    reranker: CrossEncoder
    grounder: Grounder
    mask: Callable[[str], str]
    # The language model that writes replies, rewrites follow-ups and proposes refund tool calls (its
    # judge sits in the grounder); None: the offline reader and the rules.
    model: LanguageModel | None = None


_services_lock = threading.Lock()


def default_services() -> TurnServices:
    """The process's models, loaded once; the server warms them at start while the first chat may arrive."""
    with _services_lock:
        return _load_services()


@cache
def _load_services() -> TurnServices:
    from answering.ground.nli import load_nli
    from answering.privacy.masking import mask_pii

    embedder, reranker = default_embedder(), default_reranker()
    client = language_model_from_settings()
    grounder = Grounder(
        embedder,
        reranker,
        similarity_threshold=settings.GROUNDING_SIMILARITY_THRESHOLD,
        support_threshold=settings.GROUNDING_SUPPORT_THRESHOLD,
        entailment=load_nli(settings.NLI_MODEL) if settings.NLI_MODEL else None,
        entailment_threshold=settings.NLI_THRESHOLD,
        judge=(lambda claim, passage: client.judge(claim=claim, passage=passage)) if client else None,
    )
    return TurnServices(
        embedder,
        reranker,
        grounder,
        mask=lambda text: mask_pii(text).text,
        model=client,
    )


def warm_up() -> None:
    """Load every model a turn uses (~10 s on 2 cores), so the first customer does not wait for it."""
    from answering.privacy.masking import mask_pii

    default_services()
    mask_pii("warming up")
