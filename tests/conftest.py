import shutil
from pathlib import Path

import pytest
from django.conf import settings

from knowledge.embeddings import Embedder, default_embedder


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real packaged embedding model, loaded once for the whole run."""
    return default_embedder()


@pytest.fixture
def sample_dir(tmp_path: Path) -> Path:
    """A private copy of the sample help centre that a test may edit."""
    target = tmp_path / "helpcentre"
    shutil.copytree(settings.SAMPLE_HELP_CENTRE, target)
    return target
