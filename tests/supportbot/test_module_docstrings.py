"""Every module of the product, the lab and the suite opens with a docstring saying what it is for, so a
newcomer reading the tree learns what a file does before reading its code (migrations are generated history)."""

from __future__ import annotations

import ast
from pathlib import Path

from django.conf import settings

from tests.supportbot.test_layers import LAYERS, PROJECT


def modules_without_docstring(root: Path, packages: tuple[str, ...]) -> list[str]:
    return [
        str(path.relative_to(root))
        for package in packages
        for path in sorted((root / package).rglob("*.py"))
        if "migrations" not in path.parts and not ast.get_docstring(ast.parse(path.read_text()))
    ]


def test_every_module_says_what_it_is_for() -> None:
    assert modules_without_docstring(Path(settings.BASE_DIR), (*LAYERS, PROJECT, "tests")) == []


def test_a_module_without_one_is_named(tmp_path: Path) -> None:
    (tmp_path / "app" / "migrations").mkdir(parents=True)
    (tmp_path / "app" / "said.py").write_text('"""Says what it is for."""\nX = 1\n')
    (tmp_path / "app" / "silent.py").write_text("# a comment is not a docstring\nX = 1\n")
    (tmp_path / "app" / "migrations" / "0001_initial.py").write_text("X = 1\n")
    assert modules_without_docstring(tmp_path, ("app",)) == ["app/silent.py"]
