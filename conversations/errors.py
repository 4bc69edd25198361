"""What the conversations app refuses, and why, in words for whoever sent it."""

from __future__ import annotations

from typing import Any


class TurnError(Exception):
    """The message cannot be answered as sent (empty, too long); the text says what to change."""


class FrameError(Exception):
    """A frame the server will not act on; ``code`` is machine-readable, the text is for people."""

    def __init__(self, code: str, message: str, message_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message_id = message_id

    def as_frame(self) -> dict[str, Any]:
        frame = {"type": "error", "code": self.code, "message": str(self)}
        if self.message_id:
            frame["id"] = self.message_id
        return frame


class ChatError(Exception):
    """The request cannot be done as asked; ``code`` is for machines, the text for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class QueueUnavailable(Exception):
    """The turn queue (Redis, for the Celery runner) cannot be reached; the message stays stored."""
