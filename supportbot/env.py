"""Strict readers for settings that come from the environment.

Each raises ImproperlyConfigured naming the variable, so a typo in a deployment
fails at start-up with a message instead of misbehaving later.
"""

import os
from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
N = TypeVar("N", int, float)


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use 1/0, true/false, yes/no or on/off.")


def _env_number(name: str, default: N, parse: Callable[[str], N], kind: str, minimum: N | None, maximum: N | None) -> N:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = parse(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not {kind}.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum of {minimum}.")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} is above the maximum of {maximum}.")
    return value


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    return _env_number(name, default, int, "an integer", minimum, maximum)


def env_float(name: str, default: float, *, minimum: float | None = None, maximum: float | None = None) -> float:
    return _env_number(name, default, float, "a number", minimum, maximum)


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of: {', '.join(choices)}.")
    return value
