"""Customer tokens: how a host site vouches for who is chatting.

The host site, which has signed its customer in, passes the widget ``<payload>.<signature>``: the payload
is base64url JSON ``{"sub": customer id, "exp": unix seconds}`` and the signature is the hex HMAC-SHA256 of
the payload with the shared secret (CUSTOMER_TOKEN_SECRET). Any language can make one; ``sign`` is the
reference.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time

from customers.errors import CustomerTokenError

MAX_TOKEN_CHARS = 1000


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _signature(payload: str, secret: str) -> str:
    return hmac.new(secret.encode(), payload.encode(), hashlib.sha256).hexdigest()


def sign(customer_id: str, *, secret: str, ttl_s: int = 3600, now: float | None = None) -> str:
    if not secret:
        raise CustomerTokenError("No CUSTOMER_TOKEN_SECRET is configured, so no customer token can be made.")
    expires = int((time.time() if now is None else now) + ttl_s)
    payload = _b64(json.dumps({"sub": customer_id, "exp": expires}, separators=(",", ":")).encode())
    return f"{payload}.{_signature(payload, secret)}"


def verify(token: str, *, secret: str, now: float | None = None) -> str:
    """The customer id the token vouches for, or CustomerTokenError saying what is wrong with it."""
    if not secret:
        raise CustomerTokenError("This help desk does not accept signed-in customers (no token secret is set).")
    if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS or token.count(".") != 1:
        raise CustomerTokenError("The customer token is malformed.")
    payload, signature = token.split(".")
    if not hmac.compare_digest(signature, _signature(payload, secret)):
        raise CustomerTokenError("The customer token's signature is not valid.")
    try:
        data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        customer_id, expires = data["sub"], data["exp"]
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise CustomerTokenError("The customer token is malformed.") from None
    if not isinstance(customer_id, str) or not customer_id or not isinstance(expires, int):
        raise CustomerTokenError("The customer token is malformed.")
    if expires < (time.time() if now is None else now):
        raise CustomerTokenError("The customer token has expired; sign in again.")
    return customer_id
