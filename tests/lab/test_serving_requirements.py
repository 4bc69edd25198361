"""Every management command loads with only the serving requirements: the packages requirements-dev.txt adds
(test tools, Faker) are made unimportable in a fresh process, which then loads every command module and runs
`manage.py evaluate --help`, as an operator would right after `make run`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from django.conf import settings


def _distributions(path: Path) -> set[str]:
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            names.add(re.split(r"[=<>!~\[; ]", line)[0].lower())
    return names


def development_only_modules() -> list[str]:
    """Top-level module names of the distributions only requirements-dev.txt installs."""
    base = Path(settings.BASE_DIR)
    extra = _distributions(base / "requirements-dev.txt") - _distributions(base / "requirements.txt")
    return sorted(name.replace("-", "_") for name in extra)


# The child's first lines: the modules named in its first argument are absent, as in a serving-only virtualenv
# (None in sys.modules: importing one raises ModuleNotFoundError, and importlib.util.find_spec, which libraries
# use to ask whether an optional package is there, answers None).
BLOCKER = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None
"""
# Then: load every command of the project's own apps.
LOADER = """
import importlib, pkgutil
import django
django.setup()
from django.apps import apps
loaded = []
for config in apps.get_app_configs():
    if not config.path.startswith(sys.argv[2]):
        continue
    try:
        commands = importlib.import_module(f"{config.name}.management.commands")
    except ModuleNotFoundError as error:
        if error.name == f"{config.name}.management":
            continue
        raise
    for module in pkgutil.iter_modules(commands.__path__):
        importlib.import_module(f"{commands.__name__}.{module.name}")
        loaded.append(module.name)
print(" ".join(sorted(loaded)))
"""


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HF_HUB_OFFLINE": "1",
        "DJANGO_SETTINGS_MODULE": "supportbot.settings",
        "CHAT_WARM_MODELS": "0",
        "DATABASE_URL": os.environ.get("DATABASE_URL", settings.DEFAULT_DATABASE_URL),
    }
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=180
    )


def test_development_only_packages_are_known():
    blocked = development_only_modules()
    assert "faker" in blocked and "pytest" in blocked
    assert "django" not in blocked and "numpy" not in blocked


def test_every_command_loads_without_the_development_packages():
    result = _run(["-c", BLOCKER + LOADER, ",".join(development_only_modules()), str(settings.BASE_DIR)])
    assert result.returncode == 0, result.stderr
    loaded = result.stdout.split()
    assert {"evaluate", "calibrate", "experiment", "ingest", "ask", "bench_turn"} <= set(loaded)


def test_evaluate_help_runs_without_the_development_packages():
    evaluate_help = "import runpy\nsys.argv = ['manage.py', 'evaluate', '--help']\nrunpy.run_path('manage.py', run_name='__main__')\n"
    result = _run(["-c", BLOCKER + evaluate_help, ",".join(development_only_modules())])
    assert result.returncode == 0, result.stderr
    assert "usage: manage.py evaluate" in result.stdout
