"""`manage.py ingest` refuses a sync that would lose articles unless told the source replaces them (--replace):
other articles into the demo's collection (which `make run` re-syncs from the sample and prunes), or a sync
that would retire more than half of a collection's live articles. A refused sync writes nothing."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from knowledge.models import Article, ArticleVersion, Collection, SyncRun
from knowledge.sync import DEMO_COLLECTION

pytestmark = pytest.mark.django_db


def article(slug: str, text: str) -> str:
    return (
        f"---\nid: {slug}\ntitle: {slug.title()}\nversion: '1'\neffective_date: 2026-01-01\naudience: public\n---\n\n"
        f"# {slug.title()}\n\n{text}\n"
    )


def folder_of(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).write_text(text)
    return path


@pytest.fixture
def demo(tmp_path, settings, embedder) -> Path:
    """A small stand-in for the sample help centre (settings.SAMPLE_HELP_CENTRE), loaded into the demo's
    collection as `make run` loads the sample."""
    sample = folder_of(
        tmp_path / "sample",
        {
            "refunds.md": article("refunds", "Refunds reach your card in 5 to 10 business days."),
            "returns.md": article("returns", "You have 30 days to return an item."),
            "shipping.md": article("shipping", "Standard shipping takes 3 to 5 days."),
        },
    )
    settings.SAMPLE_HELP_CENTRE = sample
    call_command("ingest", str(sample), "--collection", DEMO_COLLECTION, stdout=io.StringIO())
    return sample


def state(collection: str) -> list[tuple[str, bool, str, str]]:
    """Each version of the collection: its article, whether that is live, its label and status."""
    versions = ArticleVersion.objects.filter(article__collection__name=collection).values_list(
        "article__slug", "article__retired_at", "version_label", "status"
    )
    return sorted((slug, retired is None, label, status) for slug, retired, label, status in versions)


def refused(*args: str) -> str:
    with pytest.raises(CommandError) as info:
        call_command("ingest", *args, stdout=io.StringIO(), stderr=io.StringIO())
    return str(info.value)


def test_your_own_folder_is_refused_in_the_demo_collection(demo, tmp_path):
    before, runs = state(DEMO_COLLECTION), SyncRun.objects.count()
    own = folder_of(tmp_path / "own", {"kettle.md": "# Kettle\n\nDescale every 6 weeks.\n"})

    message = refused(str(own), "--collection", DEMO_COLLECTION)
    assert message.startswith("'helpcentre' holds the demo help centre: `make run` syncs ")
    assert "the 1 article(s) of" in message and "(kettle) would be lost at the next start" in message
    assert "--collection mine" in message and "make run CHAT_COLLECTION=mine" in message and "--replace" in message
    # One file retires nothing now, but `make run` would retire it: refused too.
    assert "would be lost" in refused(str(own / "kettle.md"), "--collection", DEMO_COLLECTION)
    assert state(DEMO_COLLECTION) == before and SyncRun.objects.count() == runs  # nothing written

    # The demo's own folder still syncs (make run), edited or not.
    (demo / "returns.md").write_text(article("returns", "You have 45 days to return an item."))
    call_command("ingest", str(demo), "--collection", DEMO_COLLECTION, stdout=io.StringIO())
    assert Article.objects.filter(collection__name=DEMO_COLLECTION, retired_at__isnull=True).count() == 3

    # Said on purpose: the folder replaces the demo.
    out = io.StringIO()
    call_command("ingest", str(own), "--collection", DEMO_COLLECTION, "--replace", stdout=out)
    assert "1 new, 0 changed, 0 unchanged, 0 failed, 3 retired" in out.getvalue()


def test_a_sync_that_would_retire_most_of_a_collection_is_refused(tmp_path, embedder):
    files = {f"{slug}.md": article(slug, f"All about {slug}, in one sentence.") for slug in "abcd"}
    own = folder_of(tmp_path / "own", files)
    call_command("ingest", str(own), "--collection", "mine", stdout=io.StringIO())
    before = state("mine")

    wrong = folder_of(tmp_path / "wrong", {"a.md": files["a.md"], "z.md": article("z", "Something else.")})
    (tmp_path / "wrong" / "b.md").unlink(missing_ok=True)
    message = refused(str(wrong), "--collection", "mine")
    assert message.startswith("This sync would retire 3 of the 4 live articles of 'mine' (b, c, d): ")
    assert "Nothing was written" in message and "pass --replace" in message
    assert state("mine") == before

    # Half of them may go: a help centre that drops articles is normal.
    (own / "c.md").unlink()
    (own / "d.md").unlink()
    out = io.StringIO()
    call_command("ingest", str(own), "--collection", "mine", stdout=out)
    assert "0 new, 0 changed, 2 unchanged, 0 failed, 2 retired" in out.getvalue()

    # Another collection is no concern of this one: a new collection takes any folder.
    call_command("ingest", str(wrong), "--collection", "other", stdout=io.StringIO())
    assert Collection.objects.filter(name="other").exists()


def test_make_run_never_retires_your_articles_from_the_demo_collection(tmp_path, settings, embedder):
    """Before the demo was ever loaded, someone synced their own folder into helpcentre: `make run`'s demo sync
    then refuses instead of retiring their articles."""
    settings.SAMPLE_HELP_CENTRE = folder_of(tmp_path / "sample", {"refunds.md": article("refunds", "Five days.")})
    own = folder_of(tmp_path / "own", {"kettle.md": "# Kettle\n\nDescale every 6 weeks.\n"})
    call_command("ingest", str(own), "--collection", DEMO_COLLECTION, stdout=io.StringIO(), stderr=io.StringIO())
    before = state(DEMO_COLLECTION)

    message = refused(str(settings.SAMPLE_HELP_CENTRE), "--collection", DEMO_COLLECTION)
    assert "would retire 1 of the 1 live articles of 'helpcentre' (kettle)" in message
    assert "'helpcentre' is where `make run` loads the demo: keep your own articles out of it." in message
    assert state(DEMO_COLLECTION) == before
