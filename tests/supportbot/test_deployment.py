"""Production settings, read in a fresh process with only the environment a deployment would set: `check
--deploy` is clean, a missing or weak setting stops the server with the variable named, and the responses
carry the headers and cookie flags the settings promise."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings

SECRET = "k3Yq8w-Zr0aTx7LmV2nB9cD4eF6gH1jK5pQ8sU0vW3xY7zA2bC4dE6fG8hJ0kL2mN4"
PRODUCTION = {
    "SUPPORTBOT_ENV": "production",
    "DJANGO_SECRET_KEY": SECRET,
    "DJANGO_ALLOWED_HOSTS": "support.example.com",
    "CHAT_WARM_MODELS": "0",
}


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": os.environ["PATH"],
        "HF_HUB_OFFLINE": "1",
        "DATABASE_URL": os.environ.get("DATABASE_URL", settings.DEFAULT_DATABASE_URL),
    }
    return subprocess.run(
        [sys.executable, *args], env={**base, **env}, cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_is_clean_with_production_settings():
    result = _run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], PRODUCTION)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_check_deploy_finds_the_development_defaults_unsafe():
    result = _run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], {"CHAT_WARM_MODELS": "0"})
    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016", "security.W018"):
        assert warning in result.stderr, warning


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"DJANGO_DEBUG": "1"}, "DJANGO_DEBUG is refused with SUPPORTBOT_ENV=production"),
        ({"DJANGO_SECRET_KEY": ""}, "DJANGO_SECRET_KEY must be set"),
        ({"DJANGO_SECRET_KEY": "short-but-not-empty"}, "DJANGO_SECRET_KEY must be at least 50 random characters"),
        ({"DJANGO_ALLOWED_HOSTS": ""}, "DJANGO_ALLOWED_HOSTS must name this server's host names"),
        ({"DJANGO_ALLOWED_HOSTS": "*"}, "DJANGO_ALLOWED_HOSTS must name this server's host names"),
        ({"SUPPORTBOT_ENV": "staging"}, "SUPPORTBOT_ENV='staging' is not one of: development, production"),
    ],
)
def test_a_production_server_refuses_to_start_without_safe_settings(change, message):
    result = _run(["-c", "import supportbot.settings"], {**PRODUCTION, **change})
    assert result.returncode != 0
    assert message in result.stderr


# Run in the production process: what a browser gets from the sign-in page over HTTPS and over HTTP,
# directly and behind a TLS-terminating proxy.
PROBE = """
import json, django
django.setup()
from django.test import Client
client = Client()
host = {"HTTP_HOST": "support.example.com"}
secure = client.get("/staff/login/", secure=True, **host)
plain = client.get("/staff/login/", **host)
proxied = client.get("/staff/login/", HTTP_X_FORWARDED_PROTO="https", **host)
cookie = secure.cookies["csrftoken"]
print(json.dumps({
    "secure": [secure.status_code, dict(secure.headers)],
    "plain": [plain.status_code, plain.headers.get("Location")],
    "proxied": proxied.status_code,
    "cookie": {"secure": bool(cookie["secure"]), "httponly": bool(cookie["httponly"]), "samesite": cookie["samesite"]},
}))
"""


def _probe(env: dict[str, str]) -> dict:
    result = _run(["-c", PROBE], {**env, "DJANGO_SETTINGS_MODULE": "supportbot.settings"})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_production_pages_are_https_only_with_secure_cookies_and_headers():
    seen = _probe(PRODUCTION)

    status, headers = seen["secure"]
    assert status == 200
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert "connect-src 'self' wss://support.example.com" in headers["Content-Security-Policy"]
    assert seen["cookie"] == {"secure": True, "httponly": True, "samesite": "Lax"}
    # Plain HTTP is sent to HTTPS; a proxy's X-Forwarded-Proto is not believed unless asked to be.
    assert seen["plain"] == [301, "https://support.example.com/staff/login/"]
    assert seen["proxied"] == 301


def test_behind_a_tls_proxy_its_forwarded_protocol_is_trusted():
    seen = _probe({**PRODUCTION, "DJANGO_BEHIND_TLS_PROXY": "1"})
    assert seen["proxied"] == 200
    assert seen["plain"][0] == 301
