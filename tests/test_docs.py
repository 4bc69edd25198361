"""The documentation site: its generated pages are current, what its pages (and the README) name exists, and it
builds in strict mode, where a broken link or anchor is an error. Each check also runs once on a deliberate
defect in a copy, so that a check that cannot fail is noticed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from lab import docs_pages
from lab.docs_pages import (
    ROOT,
    configuration_problems,
    markdown_files,
    reference_problems,
    render_all,
    stale_pages,
    static_reads,
)

CONFIG = "properdocs.yml"


@pytest.fixture(scope="module")
def sources() -> docs_pages.Sources:
    return docs_pages.collect(ROOT)


@pytest.fixture(scope="module")
def pages(sources) -> dict[str, str]:
    return render_all(ROOT, sources=sources)


@pytest.fixture(scope="module")
def commands(sources) -> list[dict[str, Any]]:
    return sources.commands


def nav_pages(config: Path) -> list[str]:
    def walk(items: list[Any]) -> list[str]:
        found: list[str] = []
        for item in items:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            found += walk(value) if isinstance(value, list) else [value]
        return found

    return walk(yaml.safe_load(config.read_text())["nav"])


def site_copy(tmp_path: Path) -> Path:
    """The docs and the site's configuration in a folder of their own. Pages the navigation lists that are not
    written yet get a one-line stand-in there, so a build of the copy fails only for what a test planted."""
    copy = tmp_path / "site-source"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / CONFIG, copy / CONFIG)
    for page in nav_pages(copy / CONFIG):
        if not (copy / "docs" / page).exists():
            (copy / "docs" / page).write_text(f"# {page}\n")
    return copy


def build(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "properdocs", "build", "--strict", "-f", str(source / CONFIG), "-d", str(out)],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=120,
    )


# --- Generated pages ----------------------------------------------------------------------------------------


def test_the_generated_pages_are_current(pages):
    assert stale_pages(pages, ROOT / "docs") == [], f"run {docs_pages.COMMAND}"


def test_a_page_edited_by_hand_or_missing_is_stale(pages, tmp_path):
    docs = site_copy(tmp_path) / "docs"
    for path, text in pages.items():
        (docs / path).write_text(text)
    assert stale_pages(pages, docs) == []
    page = docs / docs_pages.CONFIGURATION
    page.write_text(page.read_text().replace("| `50.0` |", "| `60.0` |", 1))
    (docs / docs_pages.FIGURES).unlink()
    assert stale_pages(pages, docs) == [docs_pages.CONFIGURATION, docs_pages.FIGURES]


def test_the_figures_page_is_drawn_from_the_results_files(pages, tmp_path):
    docs = site_copy(tmp_path) / "docs"
    result = next((docs / docs_pages.RESULTS).glob("golden-makerun-*.json"))
    data = json.loads(result.read_text())
    data["figures"]["reached"] = 0.123
    result.write_text(json.dumps(data))
    assert "| reached (of answerable) |" in pages[docs_pages.FIGURES]
    assert "0.123" in docs_pages.figures_page(docs) and "0.123" not in pages[docs_pages.FIGURES]


def test_every_setting_is_documented_with_each_default_it_can_have(pages):
    page = pages[docs_pages.CONFIGURATION]
    assert "| `1` in development; `0` in production | boolean |" in page  # DJANGO_DEBUG
    assert '<a id="CHAT_TURN_RUNNER"></a>`CHAT_TURN_RUNNER` | `threads`; `celery` with REDIS_URL set |' in page
    assert "`ABSTAIN_THRESHOLD` | unset |" in page
    assert "*Read only with ANTHROPIC_API_KEY set or with LLM_PROVIDER=anthropic.*" in page
    assert str(ROOT) not in page and str(ROOT) not in pages[docs_pages.COMMANDS]


def test_a_read_without_help_or_outside_the_readers_is_named():
    source = (
        "import os\n"
        "from supportbot.env import env_int, env_str\n"
        'A = env_str("A", "", help="Said.")\n'
        'B = env_int("B", 1)\n'
        'if os.environ.get("C"):\n'
        '    D = env_str("D", "x", help="Only with C.")\n'
        'E = os.environ["E"]\n'
    )
    registry = {"development": [{"name": "A", "help": "Said.", "line": 3}, {"name": "B", "help": "", "line": 4}]}
    problems = configuration_problems(static_reads(source), registry)
    assert [p.split(": ", 1)[1].split(" ")[0] for p in problems] == ["B", "no", "C", "E"]
    assert "reaches the read of D" in problems[1]


# --- What the pages name --------------------------------------------------------------------------------------


def test_every_path_command_and_flag_the_pages_name_exists(commands):
    assert reference_problems(markdown_files(ROOT), ROOT, commands) == []


def test_a_missing_path_command_or_flag_is_named(commands, tmp_path):
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    page.write_text(
        "Real: `lab/docs_pages.py`, `docs/screenshots/analytics.png`, `manage.py ingest --collection x`,\n"
        "`manage.py migrate --noinput`, `ingest --format web`, `settings.py`.\n"
        "Not paths: `PATH`, `DIR/model.onnx`, `~/x/y.py`, `/path/to/x.py`, `https://example.com/a.py`,\n"
        "`text/html`, `var/eval/out.json`, `true/false`, `--flag` with no command.\n"
        "Wrong: `lab/no_such_module.py`, `docs/screenshots/nothing.png`.\n"
        "```bash\n"
        ".venv/bin/python manage.py no_such_command --x\n"
        ".venv/bin/python manage.py ingest knowledge/sample/helpcentre --no-such-flag | head -3\n"
        "```\n"
        "`calibrate --no-such-option`\n"
    )
    problems = reference_problems([page], ROOT, commands)
    assert [p.split(": ", 2)[2] for p in problems] == [
        "no command `manage.py no_such_command`",
        "`ingest` has no option --no-such-flag",
        "no such path lab/no_such_module.py",
        "no such path docs/screenshots/nothing.png",
        "`calibrate` has no option --no-such-option",
    ]


# --- The site -------------------------------------------------------------------------------------------------


def test_the_site_builds_in_strict_mode(tmp_path):
    result = build(ROOT, tmp_path / "site")
    assert result.returncode == 0, result.stderr[-3000:]


def test_a_broken_link_or_anchor_fails_the_build(tmp_path):
    source = site_copy(tmp_path)
    assert build(source, tmp_path / "before").returncode == 0
    page = source / "docs" / docs_pages.COMMANDS
    page.write_text(page.read_text() + "\nSee [it](configuration.md#NO_SUCH_SETTING) and [that](gone.md).\n")
    result = build(source, tmp_path / "site")
    assert result.returncode != 0
    assert "does not contain an anchor '#NO_SUCH_SETTING'" in result.stderr
    assert "contains a link 'gone.md'" in result.stderr


def test_the_readme_reads_in_five_minutes_and_its_links_lead_somewhere():
    """The README is the page a newcomer reads first: at most 15 KB, and every relative link in it (documents,
    the screenshot) names a file of the repository; its figures and history live in docs/."""
    readme = ROOT / "README.md"
    assert readme.stat().st_size <= 15 * 1024, f"README.md is {readme.stat().st_size} bytes; the limit is 15 KB"
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme.read_text())
    relative = [link for link in links if "://" not in link]
    assert relative, "the README links to no page of its own documentation"
    assert [link for link in relative if not (ROOT / link).exists()] == []
