"""The configured language-model provider: LLM_PROVIDER picks the client, built from settings; the
clients import the interface, and only this module imports the clients."""

from __future__ import annotations

from django.conf import settings

from answering.providers.base import LanguageModel, generator_name


def configured_generator() -> str:
    """What answered_by will record for the configured provider, without building its client."""
    return generator_name(None if settings.LLM_PROVIDER == "none" else settings.LLM_PROVIDER, settings.LLM_MODEL)


def language_model_from_settings() -> LanguageModel | None:
    """The provider LLM_PROVIDER names, configured from settings; None for `none` (the offline reader)."""
    # Imported here, not at the top: the Anthropic SDK alone takes 1.5 s to import, and a process that
    # answers offline (the default) should not pay it at start-up.
    if settings.LLM_PROVIDER == "anthropic":
        from answering.providers.claude import ClaudeClient

        return ClaudeClient.from_settings()
    if settings.LLM_PROVIDER == "openai":
        from answering.providers.openai_compatible import OpenAICompatibleClient

        return OpenAICompatibleClient.from_settings()
    return None
