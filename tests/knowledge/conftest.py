import pytest

from knowledge.models import Collection
from tests.knowledge.helpers import sync_folder


@pytest.fixture
def helpcentre(sample_dir, embedder, db) -> Collection:
    """The sample help centre, indexed into a fresh test database."""
    sync_folder(sample_dir, embedder)
    return Collection.objects.get(name="helpcentre")
