import pytest
from django.core.exceptions import ImproperlyConfigured

from supportbot.env import env_bool, env_choice, env_int


def test_it_reads_valid_values(monkeypatch):
    monkeypatch.setenv("X_BOOL", "yes")
    monkeypatch.setenv("X_INT", "42")
    monkeypatch.setenv("X_CHOICE", "b")
    assert env_bool("X_BOOL", False) is True
    assert env_int("X_INT", 1, minimum=1, maximum=100) == 42
    assert env_choice("X_CHOICE", "a", ("a", "b")) == "b"
    assert env_int("X_UNSET", 7) == 7


@pytest.mark.parametrize(
    ("name", "value", "read", "message"),
    [
        ("X_BOOL", "maybe", lambda: env_bool("X_BOOL", False), "X_BOOL='maybe' is not a boolean"),
        ("X_INT", "ten", lambda: env_int("X_INT", 1), "X_INT='ten' is not an integer"),
        ("X_INT", "0", lambda: env_int("X_INT", 1, minimum=1), "X_INT=0 is below the minimum of 1"),
        ("X_CHOICE", "c", lambda: env_choice("X_CHOICE", "a", ("a", "b")), "X_CHOICE='c' is not one of: a, b"),
    ],
)
def test_it_refuses_bad_values_with_the_variable_named(monkeypatch, name, value, read, message):
    monkeypatch.setenv(name, value)
    with pytest.raises(ImproperlyConfigured, match=message.replace("(", r"\(")):
        read()


def test_the_settings_module_refuses_a_non_postgres_database(monkeypatch):
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", "import supportbot.settings"],
        env={"DATABASE_URL": "sqlite:///db.sqlite3", "PATH": "/usr/bin"},
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "DATABASE_URL must be a postgres:// URL" in result.stderr


def test_the_local_cluster_port_reaches_the_default_database_url():
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", "import supportbot.settings as s; print(s.DATABASES['default']['PORT'])"],
        env={"SUPPORTBOT_PGPORT": "54400", "PATH": "/usr/bin"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "54400"
