"""Strict readers for settings that come from the environment.

Each raises ImproperlyConfigured naming the variable, so a typo in a deployment
fails at start-up with a message instead of misbehaving later. Each also records
what it read (name, kind, default, allowed values, a one-sentence help) in
REGISTRY, from which the documentation's configuration reference is generated
(lab/docs_pages.py).
"""

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
N = TypeVar("N", int, float)


@dataclass(frozen=True)
class EnvSetting:
    """One environment variable as a reader saw it: the default is the one passed on this read, so it may
    depend on settings read before it (SUPPORTBOT_ENV, REDIS_URL ...)."""

    name: str
    kind: str  # "text", "boolean", "integer", "number" or "choice"
    default: str | bool | int | float
    help: str
    choices: tuple[str, ...] = ()
    minimum: int | float | None = None
    maximum: int | float | None = None
    file: str = ""  # where the read is, for grouping the reference by the settings file's sections
    line: int = 0


# Every variable read through these readers in this process, by name (the last read wins).
REGISTRY: dict[str, EnvSetting] = {}


def _record(
    name: str,
    kind: str,
    default: str | bool | int | float,
    help: str,
    choices: tuple[str, ...] = (),
    minimum: int | float | None = None,
    maximum: int | float | None = None,
) -> None:
    caller = sys._getframe(2)  # the reader's caller: _record ← env_x ← settings
    REGISTRY[name] = EnvSetting(
        name, kind, default, help, choices, minimum, maximum, caller.f_code.co_filename, caller.f_lineno
    )


def env_str(name: str, default: str, *, help: str = "") -> str:
    _record(name, "text", default, help)
    return os.environ.get(name, default)


def env_bool(name: str, default: bool, *, help: str = "") -> bool:
    _record(name, "boolean", default, help)
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


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None, help: str = "") -> int:
    _record(name, "integer", default, help, minimum=minimum, maximum=maximum)
    return _env_number(name, default, int, "an integer", minimum, maximum)


def env_float(
    name: str, default: float, *, minimum: float | None = None, maximum: float | None = None, help: str = ""
) -> float:
    _record(name, "number", default, help, minimum=minimum, maximum=maximum)
    return _env_number(name, default, float, "a number", minimum, maximum)


def env_choice(name: str, default: str, choices: tuple[str, ...], *, help: str = "") -> str:
    _record(name, "choice", default, help, choices=choices)
    value = os.environ.get(name, default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of: {', '.join(choices)}.")
    return value
