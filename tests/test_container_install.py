"""The container deployment, checked without a container engine (none runs in CI): deploy/Dockerfile installs with
scripts/setup.sh, the script `make run` uses, and that install step resolves on PyPI for the image's Python with
the script's own pip flags (a dry run in a fresh virtualenv); compose publishes no port beyond loopback unless
told to, runs the one-shot setup before the rest and checks the web processes' health; the build context leaves
out the virtualenv, local state and secrets; daphne believes forwarded client addresses only when told that a
proxy is in front; the setup script loads the demo as `make run` does."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest
import yaml
from django.db import connection
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.loopback import free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
COMPOSE = ROOT / "deploy" / "docker-compose.yml"
SHARED_SCRIPT = "scripts/setup.sh"
# What the image's install step installs: the serving set and the packages taken without their dependencies.
IMAGE_REQUIREMENTS = ("requirements.txt", "requirements-nodeps.txt")
PYPI = "https://pypi.org/simple/"


# --- deploy/Dockerfile ----------------------------------------------------------------------------------------


@dataclass
class Instruction:
    keyword: str
    args: str


def instructions(path: Path = DOCKERFILE) -> list[Instruction]:
    """The Dockerfile's instructions, continuation lines joined and comments dropped."""
    found: list[Instruction] = []
    pending = ""
    for line in path.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if pending and line.lstrip().startswith("#"):
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        keyword, _, args = pending.strip().partition(" ")
        found.append(Instruction(keyword.upper(), args.strip()))
        pending = ""
    return found


def image_python(steps: list[Instruction]) -> str:
    """The base image's Python version: "3.11" for python:3.11-slim-bookworm."""
    base = next(step.args for step in steps if step.keyword == "FROM")
    match = re.match(r"(?:docker\.io/)?(?:library/)?python:(\d+\.\d+)", base)
    assert match, f"deploy/Dockerfile is not built FROM an official python image: {base}"
    return match.group(1)


def install_step(steps: list[Instruction]) -> int:
    """The index of the one RUN that calls the shared install script."""
    calls = [i for i, step in enumerate(steps) if step.keyword == "RUN" and SHARED_SCRIPT in step.args]
    assert len(calls) == 1, f"deploy/Dockerfile must install with {SHARED_SCRIPT} exactly once, as `make run` does"
    return calls[0]


def test_the_image_installs_with_the_script_make_run_uses():
    steps = instructions()
    run_commands = [step.args for step in steps if step.keyword == "RUN"]
    installing_itself = [c for c in run_commands if re.search(r"(^|[\s;&|/])(pip3?|python3?\s+-m\s+pip)\s", c)]
    assert installing_itself == [], f"deploy/Dockerfile installs Python packages itself: {installing_itself}"
    words = shlex.split(steps[install_step(steps)].args)
    mode = words[words.index(SHARED_SCRIPT) + 1 :][:1]
    assert mode == ["python"], f"{SHARED_SCRIPT} must run in its `python` mode (no system packages), got {mode}"
    # The same Python as the script (and `make run`) insists on.
    required = re.search(r"sys\.version_info\[:2\] != \((\d+), (\d+)\)", (ROOT / SHARED_SCRIPT).read_text())
    assert required, f"{SHARED_SCRIPT} no longer checks the Python version"
    assert image_python(steps) == ".".join(required.groups())


def reachable(url: str) -> str | None:
    """None when the URL answers, else why not."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            response.read(1)
        return None
    except (OSError, urllib.error.URLError) as exc:
        return str(exc)


def copy_context(steps: list[Instruction], until: int, workdir: Path) -> None:
    """What the COPY instructions before step `until` put in the image, from the repository into `workdir`."""
    for step in steps[:until]:
        if step.keyword != "COPY":
            continue
        *sources, dest = [w for w in shlex.split(step.args) if not w.startswith("--")]
        assert not PurePosixPath(dest).is_absolute(), f"COPY {step.args}: expected a destination under WORKDIR"
        for pattern in sources:
            matches = sorted(ROOT.glob(pattern))
            assert matches, f"COPY {step.args}: {pattern} is not in the repository"
            for source in matches:
                target = workdir / dest / source.name if dest.endswith("/") or len(sources) > 1 else workdir / dest
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)


def build_environment(steps: list[Instruction], until: int, workdir_here: Path) -> dict[str, str]:
    """The ARG defaults and ENV values in force at step `until`, the image's WORKDIR moved to `workdir_here`."""
    env: dict[str, str] = {}
    workdir = "/"
    for step in steps[:until]:
        if step.keyword == "WORKDIR":
            workdir = step.args
        elif step.keyword in ("ARG", "ENV"):
            for pair in shlex.split(step.args):
                name, sep, value = pair.partition("=")
                if sep:
                    env[name] = value
    if workdir != "/":
        env = {name: value.replace(workdir, str(workdir_here)) for name, value in env.items()}
    return {name: value.replace("$PATH", os.environ["PATH"]) for name, value in env.items()}


def resolution_reports(stdout: str) -> Iterator[dict]:
    """The JSON reports pip printed (`--report -`) among the script's own lines."""
    decoder = json.JSONDecoder()
    position = 0
    while (start := stdout.find("{\n", position)) != -1:
        report, position = decoder.raw_decode(stdout, start)
        yield report


def pins(requirements: Path) -> list[Requirement]:
    found = []
    for line in requirements.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            found.append(Requirement(line))
    return found


def test_the_image_install_resolves_for_its_python_with_its_pip_flags(tmp_path):
    """The image's install step as a pip dry run, everything else as in the image: the files it copies, its ARG and
    ENV values, the Python of its base image, a fresh virtualenv with the newest pip (the script's first step) and
    PyPI alone (no pip configuration of this machine). Today's failure was of this kind: a wheel that declares
    Python >= 3.12 installed without --ignore-requires-python has no match on python:3.11. torch comes from PyPI
    here (make run's index); the image's own torch index is the next test's."""
    steps = instructions()
    step = install_step(steps)
    version = image_python(steps)
    python = shutil.which(f"python{version}")
    assert python, f"python{version} (the image's Python) is not installed here"
    if (problem := reachable(f"{PYPI}pip/")) is not None:
        pytest.fail(f"PyPI ({PYPI}) cannot be reached, so the image's install was not checked: {problem}")

    workdir = tmp_path / "image"
    workdir.mkdir()
    copy_context(steps, step, workdir)
    shims = tmp_path / "bin"  # `python3` is the image's Python, as in the base image
    shims.mkdir()
    (shims / "python3").symlink_to(python)
    # Where this machine reaches the network from, and nothing of how it installs (indexes, wheels, constraints).
    passed = ("HOME", "LANG", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "PIP_CERT", "PIP_PROXY")
    env = {name: os.environ[name] for name in passed if name in os.environ}
    env |= {name: os.environ[name] for name in os.environ if name.lower() in ("http_proxy", "https_proxy", "no_proxy")}
    env |= build_environment(steps, step, workdir)
    env["PATH"] = f"{shims}:{env.get('PATH', os.environ['PATH'])}"
    env |= {"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_DEFAULT_TIMEOUT": "60"}
    subprocess.run([python, "-m", "venv", workdir / ".venv"], check=True, timeout=120)
    upgrade = subprocess.run(
        [workdir / ".venv/bin/pip", "install", "-q", "--upgrade", "pip"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert upgrade.returncode == 0, f"upgrading pip from PyPI failed:\n{upgrade.stderr[-3000:]}"
    # Every `pip install` of the script becomes a dry run that reports what it would install. fast-deps reads a
    # wheel's metadata with range requests where an index has no separate metadata files (PEP 658).
    env |= {"PIP_DRY_RUN": "1", "PIP_IGNORE_INSTALLED": "1", "PIP_REPORT": "-", "PIP_USE_FEATURE": "fast-deps"}
    env["SUPPORTBOT_TORCH_INDEX_URL"] = ""
    try:
        result = subprocess.run(
            ["/bin/sh", "-c", steps[step].args], cwd=workdir, env=env, capture_output=True, text=True, timeout=420
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the image's install step did not finish resolving within {exc.timeout:g} s")
    assert result.returncode == 0, f"RUN {steps[step].args} fails for Python {version}:\n{result.stderr[-4000:]}"

    resolved: dict[str, set[str]] = {}
    for report in resolution_reports(result.stdout):
        for item in report["install"]:
            resolved.setdefault(canonicalize_name(item["metadata"]["name"]), set()).add(item["metadata"]["version"])
    missing = [
        f"{requirement} (resolved: {sorted(resolved.get(canonicalize_name(requirement.name), [])) or 'nothing'})"
        for name in IMAGE_REQUIREMENTS
        for requirement in pins(ROOT / name)
        if not any(requirement.specifier.contains(v) for v in resolved.get(canonicalize_name(requirement.name), ()))
    ]
    assert missing == [], f"pins the image's install step does not install: {missing}"


# --- deploy/docker-compose.yml ---------------------------------------------------------------------------------


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:+alt} and ${VAR+alt}, with `env` as the shell."""

    def one(match: re.Match[str]) -> str:
        name, operator, word = match.group(1), match.group(2) or "", match.group(3) or ""
        is_set, value = name in env, env.get(name, "")
        if operator == ":-":
            return value or word
        if operator == "-":
            return value if is_set else word
        if operator == ":+":
            return word if value else ""
        if operator == "+":
            return word if is_set else ""
        return value

    return re.sub(r"\$\{(\w+)(?:(:?[-+])([^}]*))?\}", one, value)


def published_addresses(compose: dict, env: dict[str, str]) -> dict[str, list[str]]:
    """For each service, the host address of each port it publishes ("" for every interface)."""
    found: dict[str, list[str]] = {}
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            if isinstance(port, dict):
                address = interpolate(str(port.get("host_ip", "")), env)
            else:
                spec = interpolate(str(port), env).split("/")[0]
                if spec.startswith("["):  # [::1]:8000:8000
                    address = spec[1 : spec.index("]")]
                else:
                    parts = spec.split(":")
                    address = parts[0] if len(parts) == 3 else ""
            found.setdefault(name, []).append(address)
    return found


def compose_file() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_publishes_ports_on_loopback_unless_told_otherwise():
    compose = compose_file()
    published = published_addresses(compose, env={})
    assert published, "compose publishes no port at all"
    beyond = {name: a for name, addresses in published.items() for a in addresses if not _loopback(a)}
    assert beyond == {}, f'published beyond loopback by default ("" is every interface): {beyond}'
    # SUPPORTBOT_BIND moves the web ports, for those who put the proxy on another machine.
    assert set(published_addresses(compose, env={"SUPPORTBOT_BIND": "192.0.2.7"})["web"]) == {"192.0.2.7"}


def _loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def test_compose_sets_up_before_serving_and_checks_the_web_health():
    services = compose_file()["services"]
    setup = services["setup"]
    command = setup["command"]
    script = ROOT / (command[0] if isinstance(command, list) else shlex.split(command)[0])
    assert script.is_file() and os.access(script, os.X_OK), (
        f"the setup service runs {script}, missing or not executable"
    )
    workdir = next(s.args for s in instructions() if s.keyword == "WORKDIR")
    # ensure_staff saves the first password in var/: it must outlive the one-shot container.
    assert any(str(v).endswith(f":{workdir}/var") for v in setup.get("volumes", [])), "setup keeps no var/ volume"
    for name in ("web", "worker", "ingest"):
        assert services[name]["depends_on"]["setup"] == {"condition": "service_completed_successfully"}, name
    check = services["web"]["healthcheck"]["test"]
    assert check[0] == "CMD" and (ROOT / check[2]).is_file(), f"web's health check runs nothing of the image: {check}"


# --- .dockerignore --------------------------------------------------------------------------------------------


def dockerignore_patterns() -> list[tuple[bool, str]]:
    """(is an exception, pattern) for each line of .dockerignore, cleaned as Docker cleans them."""
    path = ROOT / ".dockerignore"
    assert path.is_file(), ".dockerignore is missing: the build context would carry .venv, var/ and .git"
    patterns = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        exception = line.startswith("!")
        pattern = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
        patterns.append((exception, pattern))
    return patterns


def _segment(part: str) -> str:
    """One path segment of a pattern as a regular expression (Go's filepath.Match: * and ? stop at a slash)."""
    regex, i = "", 0
    while i < len(part):
        char = part[i]
        if char == "*":
            regex += "[^/]*"
        elif char == "?":
            regex += "[^/]"
        elif char == "[" and "]" in part[i + 1 :]:
            end = part.index("]", i + 1)
            regex += "[" + part[i + 1 : end].replace("^", "\\^", 1).replace("!", "^", 1) + "]"
            i = end
        else:
            regex += re.escape(char)
        i += 1
    return regex


def _matches(pattern: str, path: str) -> bool:
    """Docker's rule: filepath.Match segment by segment, ** standing for any number of segments."""
    parts = pattern.split("/")
    regex = ""
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            regex += ".*" if last else "(?:[^/]+/)*"
        else:
            regex += _segment(part) + ("" if last else "/")
    return re.fullmatch(regex, path) is not None


def ignored(path: str, patterns: list[tuple[bool, str]]) -> bool:
    """Whether Docker leaves `path` out of the context: the last pattern matching it or a folder above it wins."""
    parts = path.split("/")
    verdict = False
    for exception, pattern in patterns:
        if any(_matches(pattern, "/".join(parts[:n])) for n in range(1, len(parts) + 1)):
            verdict = not exception
    return verdict


def test_dockerignore_leaves_out_local_state_secrets_and_caches():
    patterns = dockerignore_patterns()
    for path in (".venv", ".venv/bin/python", "var", "var/admin-credentials.txt", "var/test-artifacts/queue.png",
                 ".git", ".git/config", "deploy/supportbot.env", ".env", "dump.rdb", "knowledge/__pycache__/x.pyc",
                 ".pytest_cache/v/cache", ".mypy_cache/3.11/x.json"):  # fmt: skip
        assert ignored(path, patterns), f"{path} would be sent to the image build"
    # Everything the repository holds is needed or harmless: code, samples, the scripts the image runs.
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert "manage.py" in tracked
    assert [path for path in tracked if ignored(path, patterns)] == []


def test_the_dockerignore_matcher_follows_docker_rules():
    patterns = [(False, "var"), (False, "**/__pycache__"), (False, "deploy/*.env"), (True, "var/keep")]
    assert ignored("var/admin-credentials.txt", patterns)
    assert not ignored("var/keep", patterns)
    assert ignored("a/b/__pycache__/c.pyc", patterns) and ignored("__pycache__/c.pyc", patterns)
    assert ignored("deploy/supportbot.env", patterns) and not ignored("deploy/supportbot.env.example", patterns)
    assert not ignored("variables.py", patterns) and not ignored("deploy/x/y.env", patterns)


# --- the web process and the proxy ----------------------------------------------------------------------------


def _deployment_commands() -> dict[str, str]:
    """The commands the deployment files start, comments left out."""
    commands = {"Dockerfile CMD": next(s.args for s in instructions() if s.keyword == "CMD")}
    for name, service in compose_file()["services"].items():
        if "command" in service:
            commands[f"compose {name}"] = json.dumps(service["command"])
    for unit in sorted((ROOT / "deploy" / "systemd").glob("*.service")):
        for line in unit.read_text().splitlines():
            if line.startswith("ExecStart="):
                commands[unit.name] = line
    return commands


def test_no_deployment_file_trusts_forwarded_headers_itself():
    commands = _deployment_commands()
    assert {k: c for k, c in commands.items() if "--proxy-headers" in c} == {}
    assert "deploy/web.sh" in commands["Dockerfile CMD"]
    assert "deploy/web.sh" in commands["supportbot-web@.service"]


def _post(port: int, forwarded_for: str) -> int:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", "/", body=b"", headers={"X-Forwarded-For": forwarded_for})
        return connection.getresponse().status
    finally:
        connection.close()


@pytest.mark.parametrize("trusted", ["0", "1"])
def test_daphne_takes_the_forwarded_address_only_behind_a_trusted_proxy(tmp_path, trusted, db):
    """deploy/web.sh starts the real daphne. With one post allowed per address, a second post that claims another
    address in X-Forwarded-For is refused unless SUPPORTBOT_TRUSTED_PROXY=1 says a proxy sets that header. The
    server reads the test database (`db`: the home page lists the demo customers)."""
    port = free_port()
    settings_dict = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{settings_dict['USER']}@{settings_dict['HOST']}:{settings_dict['PORT']}/{settings_dict['NAME']}",
        "REDIS_URL": "",
        "CHAT_WARM_MODELS": "0",
        "RATE_LIMIT_WRITES_PER_IP": "1",
        "SUPPORTBOT_TRUSTED_PROXY": trusted,
        "HF_HUB_OFFLINE": "1",
    }
    with (tmp_path / "web.log").open("wb") as log:
        server = subprocess.Popen(
            [ROOT / "deploy" / "web.sh", "-b", "127.0.0.1", "-p", str(port)], env=env, stdout=log, stderr=log
        )
    try:
        wait_for_port(port, within_s=90, what="deploy/web.sh")
        health = subprocess.run(
            [sys.executable, ROOT / "deploy" / "healthcheck.py"],
            env={**env, "SUPPORTBOT_HEALTHCHECK_PORT": str(port)},
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert health.returncode == 0, health.stderr + (tmp_path / "web.log").read_text()[-3000:]
        assert _post(port, "198.51.100.1") != 429
        second = _post(port, "198.51.100.2")
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert (second == 429) is (trusted == "0"), (tmp_path / "web.log").read_text()[-3000:]


def test_web_refuses_a_trust_setting_it_does_not_understand():
    result = subprocess.run(
        [ROOT / "deploy" / "web.sh", "-p", "1"],
        env={**os.environ, "SUPPORTBOT_TRUSTED_PROXY": "yes"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and "SUPPORTBOT_TRUSTED_PROXY must be 0 or 1" in result.stderr


# --- deploy/prepare.sh: the one-shot setup -------------------------------------------------------------------


def make_run_loads() -> list[str]:
    """The manage.py commands of the Makefile's `run` target that load content (not the staff account, not the
    server)."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    commands = [line.strip().removeprefix("$(PY) manage.py ") for line in recipe.splitlines()[1:]]
    return [c for c in commands if c.split()[0] not in ("ensure_staff", "runserver")]


def run_prepare(tmp_path: Path, demo_loaded: bool, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """deploy/prepare.sh with a stand-in for the virtualenv's python that records each manage.py command."""
    tree = tmp_path / "tree"
    (tree / "deploy").mkdir(parents=True)
    (tree / ".venv" / "bin").mkdir(parents=True)
    shutil.copy2(ROOT / "deploy" / "prepare.sh", tree / "deploy" / "prepare.sh")
    record = tmp_path / "commands"
    stub = tree / ".venv" / "bin" / "python"
    loaded = 0 if demo_loaded else 3
    stub.write_text(
        f'#!/bin/sh\nshift\nif [ "$1" = shell ]; then exit {loaded}; fi\necho "$*" >> {shlex.quote(str(record))}\n'
    )
    stub.chmod(0o755)
    environment = {"PATH": os.environ["PATH"], **env}
    result = subprocess.run(
        [tree / "deploy" / "prepare.sh"], env=environment, capture_output=True, text=True, timeout=60
    )
    return result, record.read_text().splitlines() if record.exists() else []


def test_the_first_start_loads_the_demo_as_make_run_does(tmp_path):
    result, commands = run_prepare(tmp_path, demo_loaded=False)
    assert result.returncode == 0, result.stderr
    assert commands[0] == "migrate --noinput"
    assert sorted(make_run_loads()) == sorted(
        c for c in commands if c.split()[0] not in ("migrate", "collectstatic", "ensure_staff")
    )
    assert commands[-1] == "ensure_staff --base-url http://127.0.0.1:8000"


def test_a_later_start_leaves_the_demo_alone(tmp_path):
    result, commands = run_prepare(tmp_path, demo_loaded=True, SUPPORTBOT_PUBLIC_URL="https://support.example.com")
    assert result.returncode == 0, result.stderr
    assert [c.split()[0] for c in commands] == ["migrate", "collectstatic", "ensure_staff"]
    assert commands[-1] == "ensure_staff --base-url https://support.example.com"


def test_your_own_articles_replace_the_demo(tmp_path):
    articles = tmp_path / "articles"
    articles.mkdir()
    result, commands = run_prepare(
        tmp_path, demo_loaded=False, SUPPORTBOT_ARTICLES=str(articles), CHAT_COLLECTION="shop"
    )
    assert result.returncode == 0, result.stderr
    assert [c for c in commands if c.split()[0] not in ("migrate", "collectstatic", "ensure_staff")] == [
        f"ingest {articles} --collection shop"
    ]
    result, commands = run_prepare(
        tmp_path / "again", demo_loaded=False, SUPPORTBOT_ARTICLES=str(tmp_path / "nope"), CHAT_COLLECTION="shop"
    )
    assert result.returncode == 1 and "is not a folder" in result.stderr
    # Never into the demo's collection: the next demo load would retire them, and its policy would stay.
    result, commands = run_prepare(tmp_path / "demo", demo_loaded=False, SUPPORTBOT_ARTICLES=str(articles))
    assert result.returncode == 1 and "a collection of your own" in result.stderr
    assert not any(c.startswith("ingest") for c in commands)
