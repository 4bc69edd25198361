"""What answering refuses, and why, in words for whoever asked."""

from __future__ import annotations


class AbstentionModelError(ValueError):
    """A stored or fitted answer decision that cannot be used (wrong shape, one class only, a cut that is
    not a probability); the text says which."""
