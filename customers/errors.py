"""Errors of the customers app, each carrying a message fit to show a person."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Field


class CustomerDataError(ValueError):
    """Customer data that cannot be stored; the message names the customer, order and field at fault."""


def check_field(field: Field[Any, Any], value: object, *, where: str) -> None:
    """Refuse, as CustomerDataError located by `where`, a value the model field's own validators refuse (too
    long, not a slug, not an email address, too many digits), so a file is held to the same rules as the
    table it fills."""
    try:
        field.run_validators(value)
    except ValidationError as exc:
        raise CustomerDataError(f"{where}: {' '.join(exc.messages)}") from None


class CustomerTokenError(Exception):
    """The token cannot be trusted; the text says why, for the customer and the host site's developer."""
