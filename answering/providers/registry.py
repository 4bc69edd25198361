"""The configured language-model provider: LLM_PROVIDER picks the client, built from settings; the
clients import the interface, and only this module imports the clients."""

from __future__ import annotations

from django.conf import settings

from answering.providers.base import LanguageModel, generator_name
from answering.providers.claude import ClaudeClient
from answering.providers.openai_compatible import OpenAICompatibleClient


def configured_generator() -> str:
    """What answered_by will record for the configured provider, without building its client."""
    return generator_name(None if settings.LLM_PROVIDER == "none" else settings.LLM_PROVIDER, settings.LLM_MODEL)


def language_model_from_settings() -> LanguageModel | None:
    """The provider LLM_PROVIDER names, configured from settings; None for `none` (the offline reader)."""
    if settings.LLM_PROVIDER == "anthropic":
        return ClaudeClient.from_settings()
    if settings.LLM_PROVIDER == "openai":
        return OpenAICompatibleClient.from_settings()
    return None
