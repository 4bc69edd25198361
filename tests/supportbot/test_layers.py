"""The layers stay one-way: no module of an app imports a later app, nor a project module that does. Found
by walking every import statement, those inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

from django.apps import apps
from django.conf import settings

# Each app may import those before it, never one after it.
LAYERS = ("knowledge", "customers", "answering", "conversations", "insights", "lab")
PROJECT = "supportbot"


def imported_modules(path: Path) -> set[str]:
    """The absolute module names a file imports, wherever the statement sits."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_violations(root: Path, layers: tuple[str, ...] = LAYERS, project: str = PROJECT) -> list[str]:
    """Every import that points the wrong way, as "importer → imported"."""
    imports: dict[str, set[str]] = {}
    for package in (*layers, project):
        for path in sorted((root / package).rglob("*.py")):
            imports[module_name(root, path)] = imported_modules(path)
    wrong = set()
    for importer, modules in imports.items():
        top = importer.split(".")[0]
        if top not in layers:
            continue
        for module in modules:
            target = module.split(".")[0]
            if target in layers and layers.index(target) > layers.index(top):
                wrong.add(f"{importer} → {module}")
            # A project module an app imports (the stopwatch, the login helpers) sits below that app.
            if target == project:
                wrong |= {
                    f"{module} → {m}"
                    for m in imports.get(module, ())
                    if m.split(".")[0] in layers and layers.index(m.split(".")[0]) > layers.index(top)
                }
    return sorted(wrong)


def test_it_finds_no_import_pointing_to_a_later_layer() -> None:
    assert layer_violations(Path(settings.BASE_DIR)) == []


def test_every_app_of_the_project_sits_in_a_layer() -> None:
    root = Path(settings.BASE_DIR)
    ours = {config.name for config in apps.get_app_configs() if Path(config.path).parent == root}
    # answering is a package without models, so not an installed app.
    assert ours == {*LAYERS} - {"answering"}


def _write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_it_reports_an_earlier_layer_importing_a_later_one(tmp_path: Path) -> None:
    _write(tmp_path, "low/__init__.py", "")
    _write(tmp_path, "low/reader.py", "def f():\n    from high.models import Row\n    return Row\n")
    _write(tmp_path, "high/models.py", "import low.reader\n")
    _write(tmp_path, "proj/__init__.py", "")
    assert layer_violations(tmp_path, ("low", "high"), "proj") == ["low.reader → high.models"]


def test_it_reports_a_project_module_that_imports_a_later_app_than_its_importer(tmp_path: Path) -> None:
    _write(tmp_path, "low/reader.py", "from proj.clock import now\n")
    _write(tmp_path, "proj/clock.py", "from high import views\n")
    _write(tmp_path, "high/bench.py", "from proj.asgi import application\n")
    _write(tmp_path, "proj/asgi.py", "import high.views\n")  # the project's top may import any app
    assert layer_violations(tmp_path, ("low", "high"), "proj") == ["proj.clock → high"]
