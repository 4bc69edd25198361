"""Staff sign-in (the queue's and the admin's) after repeated failures: refused with a clear message, per
username and per address, until the lockout window ends."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-test-password"
LOCKED = "Too many failed sign-ins for this account or from this address. Try again in "


@pytest.fixture(autouse=True)
def fast_hashes(settings):
    # Each failure hashes a password: the default hasher's cost would make a burst of them slow.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def sam():
    return get_user_model().objects.create_user("sam", password=PASSWORD, is_staff=True)


def sign_in(client, username: str, password: str, *, address: str = "203.0.113.30", path: str = "/staff/login/"):
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=address)


def test_after_five_failures_even_the_right_password_waits(client, sam, settings):
    for _ in range(settings.LOGIN_FAILURES_PER_USERNAME):
        response = sign_in(client, "sam", "wrong")
        assert response.status_code == 200
        assert "didn't match" in response.content.decode()

    refused = sign_in(client, "sam", PASSWORD, address="198.51.100.31")  # another address: the account is locked
    assert refused.status_code == 200
    assert "_auth_user_id" not in client.session
    text = refused.content.decode()
    assert LOCKED + "15 minutes." in text
    assert "didn" not in text  # not the wrong-password message: the password was not even checked

    # Letter case does not make a new username.
    assert LOCKED in sign_in(client, "SAM", PASSWORD).content.decode()


def test_other_accounts_sign_in_while_one_is_locked(client, sam, settings):
    get_user_model().objects.create_user("kim", password=PASSWORD, is_staff=True)
    for _ in range(settings.LOGIN_FAILURES_PER_USERNAME):
        sign_in(client, "sam", "wrong")
    response = sign_in(client, "kim", PASSWORD, address="198.51.100.32")
    assert response.status_code == 302 and response["Location"] == "/staff/queue"


def test_many_usernames_from_one_address_lock_the_address(client, sam, settings):
    settings.LOGIN_FAILURES_PER_IP = 4
    for number in range(4):
        sign_in(client, f"guess{number}", "wrong")
    assert LOCKED in sign_in(client, "sam", PASSWORD).content.decode()
    assert sign_in(client, "sam", PASSWORD, address="198.51.100.33").status_code == 302


def test_a_success_forgets_the_earlier_failures(client, sam, settings):
    for _ in range(settings.LOGIN_FAILURES_PER_USERNAME - 1):
        sign_in(client, "sam", "wrong")
    assert sign_in(client, "sam", PASSWORD).status_code == 302
    client.logout()
    for _ in range(settings.LOGIN_FAILURES_PER_USERNAME - 1):
        sign_in(client, "sam", "wrong", address="198.51.100.34")
    assert sign_in(client, "sam", PASSWORD, address="198.51.100.34").status_code == 302


def test_the_lock_ends_with_its_window(client, sam, settings):
    settings.LOGIN_LOCKOUT_S = 1
    for _ in range(settings.LOGIN_FAILURES_PER_USERNAME):
        sign_in(client, "sam", "wrong")
    assert LOCKED + "1 s." in sign_in(client, "sam", PASSWORD).content.decode()
    time.sleep(1.2)
    assert sign_in(client, "sam", PASSWORD).status_code == 302


def test_the_admin_sign_in_is_throttled_too(client, settings):
    get_user_model().objects.create_superuser("root", password=PASSWORD)
    for _ in range(settings.LOGIN_FAILURES_PER_USERNAME):
        assert sign_in(client, "root", "wrong", path="/admin/login/").status_code == 200
    refused = sign_in(client, "root", PASSWORD, path="/admin/login/")
    assert refused.status_code == 200 and LOCKED in refused.content.decode()
    assert "_auth_user_id" not in client.session
