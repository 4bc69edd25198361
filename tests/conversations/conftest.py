from pathlib import Path

import pytest
from django.conf import settings as django_settings

from knowledge.models import Collection
from tests.knowledge.helpers import sync_folder


@pytest.fixture
def small_helpcentre(tmp_path: Path, embedder) -> Collection:
    """One short article: turns are quick, and a question about anything else is not covered."""
    folder = tmp_path / "articles"
    folder.mkdir()
    (folder / "opening-hours.md").write_text(
        "---\nid: opening-hours\ntitle: Opening hours\nversion: '1'\neffective_date: 2026-01-01\n"
        "audience: public\n---\n\n# Opening hours\n\n## Phone support\n\n"
        "Our phone line is open from 9am to 5pm, Monday to Friday. We are closed on public holidays.\n"
    )
    sync_folder(folder, embedder, collection=django_settings.CHAT_COLLECTION)
    return Collection.objects.get(name=django_settings.CHAT_COLLECTION)
