"""Argument types shared by the management commands."""

from argparse import ArgumentTypeError
from datetime import date


def iso_date(value: str) -> date:
    """A YYYY-MM-DD date; anything else is refused with the value and the expected form."""
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ArgumentTypeError(f"{value!r} is not a date (use YYYY-MM-DD)") from None
