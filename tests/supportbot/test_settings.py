"""Settings from the environment: valid values read, bad ones refused with the variable named."""

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


def _llm_settings(env: dict[str, str]) -> tuple[int, str]:
    """(exit status, stdout or stderr) of reading the language-model settings with only `env` set."""
    import subprocess
    import sys

    code = "import supportbot.settings as s; print(s.LLM_PROVIDER, s.LLM_MODEL, s.LLM_BASE_URL, s.LLM_TIMEOUT_S)"
    result = subprocess.run(
        [sys.executable, "-c", code], env={**env, "PATH": "/usr/bin"}, capture_output=True, text=True
    )
    return result.returncode, (result.stdout if result.returncode == 0 else result.stderr).strip()


def test_without_a_provider_the_offline_reader_answers():
    assert _llm_settings({}) == (0, "none   60.0")  # no model, no base URL


def test_an_anthropic_key_alone_selects_claude_with_its_old_settings():
    assert _llm_settings({"ANTHROPIC_API_KEY": "sk-ant", "ANTHROPIC_TIMEOUT_S": "12"}) == (
        0,
        "anthropic claude-sonnet-5-5  12.0",
    )
    assert _llm_settings({"ANTHROPIC_API_KEY": "sk-ant", "LLM_MODEL": "claude-haiku-4-5"})[1].startswith(
        "anthropic claude-haiku-4-5"
    )


def test_an_openai_compatible_server_is_named_by_its_base_url_and_model():
    env = {"LLM_PROVIDER": "openai", "LLM_BASE_URL": "http://127.0.0.1:11434/v1", "LLM_MODEL": "llama3.2"}
    assert _llm_settings(env) == (0, "openai llama3.2 http://127.0.0.1:11434/v1 60.0")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LLM_PROVIDER": "anthropic"}, "LLM_PROVIDER=anthropic needs an API key"),
        ({"LLM_PROVIDER": "openai"}, "LLM_PROVIDER=openai needs LLM_MODEL"),
        ({"LLM_PROVIDER": "ollama"}, "LLM_PROVIDER='ollama' is not one of: none, anthropic, openai"),
        (
            {"LLM_PROVIDER": "openai", "LLM_MODEL": "m", "LLM_BASE_URL": "127.0.0.1:11434"},
            "must be an http:// or https:// URL",
        ),
        ({"LLM_PROVIDER": "openai", "LLM_MODEL": "m", "LLM_TIMEOUT_S": "0"}, "LLM_TIMEOUT_S=0.0 is below"),
    ],
)
def test_a_misconfigured_provider_stops_start_up_with_the_setting_named(env, message):
    status, output = _llm_settings(env)
    assert status != 0 and message in output


def test_a_name_tagger_folder_without_its_model_stops_start_up_with_the_setting_named(tmp_path):
    status, output = _llm_settings({"NAME_TAGGER": str(tmp_path)})
    assert status != 0 and f"NAME_TAGGER={str(tmp_path)!r} must be a folder with model.onnx" in output
    assert _llm_settings({"NAME_TAGGER": "off"})[0] == 0
