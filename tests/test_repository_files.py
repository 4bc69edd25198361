"""The repository's licence and notice files: the project files exist, LICENSE is the Apache License 2.0
unaltered, every third-party dataset folder has its LICENSE.md naming each of its data files, and NOTICE
names every repository those datasets were read from and every model file the repository carries.

Data written by others is only ours to share under its licence, so a dataset or weights file added without
these notes must fail here rather than be found after it is published."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATASETS = ROOT / "lab" / "datasets"
PROJECT_FILES = ("LICENSE", "NOTICE", "SECURITY.md", "CONTRIBUTING.md", "CHANGELOG.md")

# SHA-256 of the Apache License 2.0 (https://www.apache.org/licenses/LICENSE-2.0.txt) with every run of
# whitespace made one space: a re-wrapped copy still passes, a changed word (or a copyright line added to
# the licence instead of to NOTICE) does not.
APACHE_2_0_NORMALISED_SHA256 = "0ffddef9e48f8a09aed5caf2d44f7ba1c1be2d9b8e0a6f693b1635b2d5566645"

# Column headings under which a SOURCES.md table names the repository a row of data came from.
REPOSITORY_HEADINGS = {"repo", "repository"}
OWNER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")
# Files that hold model weights or tokenizers, whoever trained them.
MODEL_SUFFIXES = (".onnx", ".safetensors", ".gguf", ".npz", ".npy", ".pt", ".pth", ".bin", ".ckpt", ".pkl", ".joblib")
MODEL_NAMES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt")
# Folders that are never part of what the repository carries.
NOT_CARRIED = {".git", ".venv", "var", "__pycache__", "node_modules", ".mypy_cache", ".ruff_cache", ".pytest_cache"}


def normalised_sha256(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()


def dataset_folders(root: Path = DATASETS) -> list[Path]:
    return sorted(path for path in root.iterdir() if path.is_dir() and not path.name.startswith((".", "_")))


def table_repositories(markdown: str) -> set[str]:
    """Every owner/name in a column headed "repo" or "repository" of the Markdown tables in a text."""
    found: set[str] = set()
    column: int | None = None
    for line in markdown.splitlines():
        stripped = line.strip()
        if not stripped.startswith("|"):
            column = None  # a table ends at the first line that is not a row
            continue
        cells = [cell.strip().strip("`*").strip() for cell in stripped.strip("|").split("|")]
        if set("".join(cells)) <= set("-: "):
            continue  # the line under the headings
        if column is None:
            headings = [cell.lower() for cell in cells]
            column = next((i for i, heading in enumerate(headings) if heading in REPOSITORY_HEADINGS), -1)
            continue
        if 0 <= column < len(cells) and OWNER_NAME.match(cells[column]):
            found.add(cells[column])
    return found


def row_repositories(folder: Path) -> set[str]:
    """The repositories the rows of a dataset folder's JSON-lines files name in their `source` field."""
    found: set[str] = set()
    for path in sorted(folder.rglob("*.jsonl")):
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                source = json.loads(line).get("source") if line.strip() else None
                if isinstance(source, str) and OWNER_NAME.match(source.split(":", 1)[0]):
                    found.add(source.split(":", 1)[0])
    return found


def data_files(folder: Path) -> list[Path]:
    """The files directly in a dataset folder other than its notes (subfolders are named as folders)."""
    return sorted(path for path in folder.iterdir() if path.name not in ("LICENSE.md", "SOURCES.md"))


def carried_files(root: Path = ROOT) -> list[str]:
    """The repository's files relative to its root: git's list where this is a checkout, else a walk."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True, timeout=60)
        return [name for name in listed.stdout.decode().split("\0") if name]
    except (OSError, subprocess.SubprocessError):
        return [
            str(path.relative_to(root))
            for path in root.rglob("*")
            if path.is_file() and not NOT_CARRIED & set(path.relative_to(root).parts)
        ]


def model_files(names: list[str]) -> list[str]:
    return sorted(name for name in names if name.endswith(MODEL_SUFFIXES) or Path(name).name in MODEL_NAMES)


def missing_from(text: str, names: set[str] | list[str]) -> list[str]:
    return sorted(name for name in names if name.lower() not in text.lower())


@pytest.mark.parametrize("name", PROJECT_FILES)
def test_project_file_is_there(name: str) -> None:
    path = ROOT / name
    assert path.is_file(), f"{name} is missing from the repository root"
    assert len(path.read_text(encoding="utf-8").strip()) > 200, f"{name} is (nearly) empty"


def test_licence_is_the_apache_license_unaltered() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert normalised_sha256(text) == APACHE_2_0_NORMALISED_SHA256, (
        "LICENSE is not the Apache License 2.0 word for word; copyright lines belong in NOTICE"
    )


def test_an_altered_licence_is_told_apart() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert normalised_sha256("\n\n" + text.replace("  ", "\t")) == APACHE_2_0_NORMALISED_SHA256
    altered = text.replace("Version 2.0, January 2004", "Version 2.0, January 2004\nCopyright 2026 Someone")
    assert normalised_sha256(altered) != APACHE_2_0_NORMALISED_SHA256


def test_every_dataset_folder_has_its_licence_naming_each_file() -> None:
    folders = dataset_folders()
    assert folders, "no dataset folders found under lab/datasets/"
    for folder in folders:
        licence = folder / "LICENSE.md"
        assert licence.is_file(), f"{folder.relative_to(ROOT)} has no LICENSE.md"
        unnamed = missing_from(licence.read_text(encoding="utf-8"), [path.name for path in data_files(folder)])
        assert unnamed == [], f"{licence.relative_to(ROOT)} does not name {unnamed}"


def test_notice_names_every_repository_the_datasets_came_from() -> None:
    notice = (ROOT / "NOTICE").read_text(encoding="utf-8")
    for folder in dataset_folders():
        sources = folder / "SOURCES.md"
        assert sources.is_file(), f"{folder.relative_to(ROOT)} has no SOURCES.md"
        repositories = table_repositories(sources.read_text(encoding="utf-8"))
        assert repositories, f"no repository found in the tables of {sources.relative_to(ROOT)}"
        assert missing_from(notice, repositories) == [], f"NOTICE does not name these sources of {folder.name}"


def test_every_repository_a_row_names_is_in_its_sources_and_notice() -> None:
    # A row from a repository left out of SOURCES.md (as one without a licence was) would otherwise go
    # unnoticed: the tables are written by hand, the rows by the build.
    notice = (ROOT / "NOTICE").read_text(encoding="utf-8")
    for folder in dataset_folders():
        rows = row_repositories(folder)
        listed = table_repositories((folder / "SOURCES.md").read_text(encoding="utf-8"))
        assert rows - listed == set(), f"rows of {folder.name} come from repositories not in its SOURCES.md"
        assert missing_from(notice, rows) == [], f"NOTICE does not name these sources of {folder.name}'s rows"


def test_notice_names_every_model_file_the_repository_carries() -> None:
    notice = (ROOT / "NOTICE").read_text(encoding="utf-8")
    assert missing_from(notice, model_files(carried_files())) == []


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    sources = (
        "| repo | commit | licence |\n|---|---|---|\n| someone/dataset | abc | MIT |\n| `other/set` | def | GPL-3.0 |\n\n"
        "| file | what |\n|---|---|\n| data/train.jsonl | not a repository column |\n\n"
        "| source (`template` prefix) | repo |\n|---|---|\n| `x` | third/one |\n"
    )
    assert table_repositories(sources) == {"someone/dataset", "other/set", "third/one"}
    assert missing_from("Sources: someone/dataset (MIT).", {"someone/dataset", "other/set"}) == ["other/set"]

    folder = tmp_path / "datasets" / "attacks"
    folder.mkdir(parents=True)
    (folder / "train.jsonl").write_text('{"text": "x", "source": "someone/dataset:a.txt"}\n\n{"text": "y"}\n')
    (folder / "SOURCES.md").write_text(sources)
    assert dataset_folders(tmp_path / "datasets") == [folder]
    assert row_repositories(folder) == {"someone/dataset"}
    assert [path.name for path in data_files(folder)] == ["train.jsonl"]

    names = ["knowledge/injection_model.npz", "lab/model/tokenizer.json", "lab/sample/golden.jsonl", "a/b.py"]
    assert model_files(names) == ["knowledge/injection_model.npz", "lab/model/tokenizer.json"]
