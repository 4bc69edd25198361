"""Customer tokens: a signed token verifies until it expires, and one that cannot be trusted is refused with the
reason."""

import base64
import hashlib
import hmac
import json

import pytest

from customers.errors import CustomerTokenError
from customers.tokens import sign, verify

SECRET = "s" * 40
NOW = 1_800_000_000
EXPIRED = "The customer token has expired; sign in again."
BAD_SIGNATURE = "The customer token's signature is not valid."
MALFORMED = "The customer token is malformed."


def encoded(payload: bytes) -> str:
    return base64.urlsafe_b64encode(payload).rstrip(b"=").decode()


def signed(payload: bytes) -> str:
    """A token correctly signed around any payload, as only a holder of the secret could make."""
    return f"{encoded(payload)}.{hmac.new(SECRET.encode(), encoded(payload).encode(), hashlib.sha256).hexdigest()}"


GOOD = sign("c-1001", secret=SECRET, ttl_s=60, now=NOW)
PAYLOAD, SIGNATURE = GOOD.split(".")


def test_a_signed_token_verifies_as_its_customer_until_it_expires():
    assert verify(GOOD, secret=SECRET, now=NOW + 60) == "c-1001"
    with pytest.raises(CustomerTokenError) as raised:
        verify(GOOD, secret=SECRET, now=NOW + 61)
    assert str(raised.value) == EXPIRED


@pytest.mark.parametrize(
    ("token", "secret", "message"),
    [
        (f"{encoded(json.dumps({'sub': 'c-2002', 'exp': NOW + 60}).encode())}.{SIGNATURE}", SECRET, BAD_SIGNATURE),
        (f"{PAYLOAD}.{SIGNATURE[:-1]}{'1' if SIGNATURE.endswith('0') else '0'}", SECRET, BAD_SIGNATURE),
        (GOOD, "t" * 40, BAD_SIGNATURE),
        ("not a token", SECRET, MALFORMED),
        ("a.b.c", SECRET, MALFORMED),
        (f"{PAYLOAD}.{'0' * 1000}", SECRET, MALFORMED),
        (signed(b"not json"), SECRET, MALFORMED),
        (signed(b'{"sub": 1042, "exp": 1900000000}'), SECRET, MALFORMED),
        (signed(b'{"sub": "c-1001"}'), SECRET, MALFORMED),
        (GOOD, "", "This help desk does not accept signed-in customers (no token secret is set)."),
    ],
    ids=[
        "tampered payload",
        "tampered signature",
        "wrong secret",
        "garbage",
        "too many parts",
        "too long",
        "signed garbage",
        "numeric customer id",
        "no expiry",
        "no secret here",
    ],
)
def test_it_refuses_tokens_it_cannot_trust_saying_why(token, secret, message):
    with pytest.raises(CustomerTokenError) as raised:
        verify(token, secret=secret, now=NOW)
    assert str(raised.value) == message


def test_no_token_is_signed_without_a_secret():
    with pytest.raises(CustomerTokenError) as raised:
        sign("c-1001", secret="")
    assert str(raised.value) == "No CUSTOMER_TOKEN_SECRET is configured, so no customer token can be made."
