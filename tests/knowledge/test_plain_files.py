"""Plain Markdown and HTML files without front matter: read with stated defaults (title from the first heading or
the file name, id from the path, version from the content, in force from the day of ingest, audience public),
said in one warning per sync; a source whose files carry front matter is read exactly as before; bad files
are named and lose nothing."""

from __future__ import annotations

import hashlib
import io
import zipfile
from datetime import date
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from knowledge import publishing
from knowledge.errors import IngestFileError
from knowledge.front_matter import FrontMatterRules
from knowledge.models import Article, ArticleVersion
from knowledge.sources import SourceDocument, SourceRead, plain_id, read_folder, read_zip

TODAY = date(2026, 3, 14)
FRONT_MATTER = (
    "---\nid: returns\ntitle: Returns\nversion: '1'\neffective_date: 2026-01-01\naudience: member\n---\n\n"
    "# Returns\n\nMembers have 60 days to return an item.\n"
)
PAGE = """<!doctype html>
<html lang="en-GB">
<head><title>Warranty | Brightkettle Help</title><style>p {color: red}</style></head>
<body>
<nav><a href="/">Home</a> › <a href="/support">Support</a></nav>
<header>Brightkettle Help Centre</header>
<main>
<h1>Warranty and repairs</h1>
<p>Every Brightkettle comes with a 3-year warranty.</p>
<h2>How to claim</h2>
<ul><li>Email repairs@brightkettle.example</li><li>Attach a photo</li></ul>
</main>
<footer>© Brightkettle</footer>
</body>
</html>
"""


def write(folder: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return folder


def docs(read: SourceRead) -> dict[str, SourceDocument]:
    return {item.slug: item for item in read.items if isinstance(item, SourceDocument)}


def errors(read: SourceRead) -> dict[str, str]:
    return {Path(item.path).name: item.message for item in read.items if isinstance(item, IngestFileError)}


def test_plain_markdown_gets_the_stated_defaults(tmp_path):
    raw = "Intro line.\n\n# Descaling *your* [kettle](https://x.example)\n\n## How often\n\nEvery 6 weeks.\n"
    write(tmp_path, {"Care/Descaling guide.md": raw, "wifi_setup.md": "Hold the button for 8 seconds.\n"})
    read = read_folder(tmp_path, max_bytes=10_000, today=TODAY)

    found = docs(read)
    assert sorted(found) == ["care-descaling-guide", "wifi_setup"]  # from the path in the folder
    guide = found["care-descaling-guide"]
    assert guide.title == "Descaling your kettle"  # the first heading, its marks and link dropped
    assert guide.body == raw  # the file as it is
    assert guide.version_label == hashlib.sha256(raw.encode()).hexdigest()[:12] == guide.content_hash[:12]
    assert (guide.effective_date, guide.audience, guide.language, guide.product, guide.supersedes) == (
        TODAY,
        "public",
        "en",
        "",
        None,
    )
    # No heading: titled after the file name, and the article opens with that title.
    wifi = found["wifi_setup"]
    assert wifi.title == "Wifi setup"
    assert wifi.body == "# Wifi setup\n\nHold the button for 8 seconds.\n"
    assert read.lists_every_page and not errors(read)
    assert read.warnings == (
        "2 file(s) without front matter were read with defaults: title from the first heading (else the file name), "
        "id from the path in the folder, version from the content (its hash), in force from the day of ingest, "
        "audience public (2026-03-14). To set these yourself, give every file front matter.",
    )


def test_a_new_text_is_a_new_version_and_the_same_text_the_same_one(tmp_path):
    write(tmp_path, {"a.md": "# A\n\nOne.\n"})
    first = docs(read_folder(tmp_path, max_bytes=10_000, today=TODAY))["a"]
    again = docs(read_folder(tmp_path, max_bytes=10_000, today=date(2026, 4, 1)))["a"]
    assert (again.version_label, again.content_hash) == (first.version_label, first.content_hash)
    write(tmp_path, {"a.md": "# A\n\nTwo.\n"})
    edited = docs(read_folder(tmp_path, max_bytes=10_000, today=TODAY))["a"]
    assert edited.version_label != first.version_label


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("refunds.md", "refunds"),
        ("Billing/Refund policy.md", "billing-refund-policy"),
        ("help/v2.1 notes.HTML", "help-v2.1-notes"),
        ("_drafts/--x--.htm", "drafts-x"),
        ("Größe.md", "gr-e"),
        ("???.md", ""),
    ],
)
def test_the_id_is_made_from_the_path(relative, expected):
    assert plain_id(relative) == expected


def test_an_html_page_is_read_from_its_main_content(tmp_path):
    write(tmp_path, {"support/warranty.html": PAGE, "fragment.htm": "<p>Ships in 2 days from our warehouse.</p>"})
    read = read_folder(tmp_path, max_bytes=10_000, today=TODAY)
    page = docs(read)["support-warranty"]
    assert page.title == "Warranty and repairs" and page.language == "en-gb" and page.audience == "public"
    assert page.body.startswith("# Warranty and repairs\n\nEvery Brightkettle comes with a 3-year warranty.")
    assert "## How to claim" in page.body and "- Email repairs@brightkettle.example" in page.body
    for chrome in ("Home", "Help Centre", "©", "color"):
        assert chrome not in page.body
    assert page.content_hash == hashlib.sha256(PAGE.encode()).hexdigest()
    # No heading in the page: titled by its <title>, else the file name.
    assert docs(read)["fragment"].title == "Fragment"
    assert read.warnings and read.warnings[0].startswith("2 file(s) without front matter")


def test_files_with_and_without_front_matter_are_read_side_by_side(tmp_path):
    # A help centre as it comes: some pages carry front matter (ours here), some none, some are HTML. Each is
    # read for what it says; only the strict format (FRONT_MATTER=strict) refuses a page without its fields.
    write(tmp_path, {"returns.md": FRONT_MATTER, "notes.md": "# Notes\n\nInternal.\n", "page.html": PAGE})
    read = read_folder(tmp_path, max_bytes=10_000, today=TODAY)
    found = docs(read)
    assert sorted(found) == ["notes", "page", "returns"] and not errors(read)
    returns = found["returns"]
    assert (returns.slug, returns.version_label, returns.effective_date, returns.audience) == (
        "returns",
        "1",
        date(2026, 1, 1),
        "member",
    )
    assert found["notes"].audience == "public" and found["notes"].effective_date == TODAY
    assert read.warnings[-1].startswith("2 file(s) without front matter were read with defaults")
    strict = read_folder(tmp_path, max_bytes=10_000, today=TODAY, rules=FrontMatterRules(strict=True))
    assert list(docs(strict)) == ["returns"]
    assert errors(strict) == {"notes.md": "no YAML front matter: the file must start with a line '---'"}
    # One file with front matter: exactly as before.
    (single,) = read_folder(tmp_path / "returns.md", max_bytes=10_000, today=TODAY).items
    assert isinstance(single, SourceDocument) and single.version_label == "1"


def test_bad_plain_files_are_named_and_the_others_still_come(tmp_path):
    write(
        tmp_path,
        {
            "empty.md": "",
            "blank.md": "  \n\n",
            "logo.md": b"\x89PNG\r\n\x1a\n\x00\x00",
            "nul.md": b"# A\n\nText\x00more\n",
            "latin1.md": "# Caf\xe9\n".encode("latin-1"),
            "big.md": "# Big\n\n" + "word " * 3000,
            "scripts.html": "<script>alert(1)</script><nav>Home</nav>",
            "ok.md": "# OK\n\nFine.\n",
            ".github/bug.md": "---\nname: Bug report\n---\nA template, hidden: not read.\n",
        },
    )
    read = read_folder(tmp_path, max_bytes=10_000, today=TODAY)
    assert list(docs(read)) == ["ok"]
    assert errors(read) == {
        "big.md": "file is 15,007 bytes, over the limit of 10,000 bytes",
        "blank.md": "the file is empty",
        "empty.md": "the file is empty",
        "latin1.md": "not valid UTF-8 (byte 0xe9 at offset 5)",
        "logo.md": "not valid UTF-8 (byte 0x89 at offset 0)",
        "nul.md": "holds NUL bytes: not a text file",
        "scripts.html": "the page holds no text once its HTML is read",
    }
    assert read.warnings[0].startswith("1 file(s) without front matter")


def test_two_files_making_one_id_are_both_refused(tmp_path):
    write(tmp_path, {"faq.md": "# FAQ\n\nOne.\n", "FAQ.html": "<h1>FAQ</h1><p>Two.</p>", "other.md": "# O\n\nx\n"})
    read = read_folder(tmp_path, max_bytes=10_000, today=TODAY)
    assert list(docs(read)) == ["other"]
    found = errors(read)
    assert found["faq.md"] == f"its path makes the id 'faq', as {tmp_path / 'FAQ.html'} does: rename one of them"
    assert found["FAQ.html"] == f"its path makes the id 'faq', as {tmp_path / 'faq.md'} does: rename one of them"


def test_a_single_file_needs_front_matter_unless_it_is_markdown_or_html(tmp_path):
    write(tmp_path, {"notes.txt": "# Notes\n\nText.\n", "one.md": "# One\n\nText.\n"})
    (error,) = read_folder(tmp_path / "notes.txt", max_bytes=10_000, today=TODAY).items
    assert isinstance(error, IngestFileError) and "no front matter says it is an article" in error.message
    single = read_folder(tmp_path / "one.md", max_bytes=10_000, today=TODAY)
    assert [d.slug for d in docs(single).values()] == ["one"] and not single.lists_every_page


def test_a_zip_of_plain_files_is_read_as_a_folder_is():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        zipped.writestr("kb/delivery.md", "# Delivery\n\nThree days.\n")
        zipped.writestr("kb/warranty.html", PAGE)
        zipped.writestr("__MACOSX/kb/._delivery.md", b"\x00\x05")
    read = read_zip("kb.zip", buffer.getvalue(), max_bytes=10_000, today=TODAY)
    assert {slug: d.path for slug, d in docs(read).items()} == {
        "kb-delivery": "kb.zip!kb/delivery.md",
        "kb-warranty": "kb.zip!kb/warranty.html",
    }
    assert read.warnings[0].startswith("2 file(s) without front matter")


@pytest.mark.django_db
def test_the_command_ingests_plain_files_with_one_warning_and_loses_nothing_on_bad_ones(tmp_path, embedder, capsys):
    folder = write(
        tmp_path / "kb",
        {
            "delivery.md": "# Delivery\n\n## Times\n\nParcels arrive in three working days.\n",
            "returns.md": "# Returns\n\nSend items back within 30 days.\n",
            "warranty.html": PAGE,
        },
    )
    call_command("ingest", str(folder), "--collection", "plain")
    captured = capsys.readouterr()
    # One line for the sync, not one per file.
    warnings = [line for line in captured.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, captured.err
    assert warnings[0].startswith("warning: 3 file(s) without front matter were read with defaults: title from")
    assert "plain: documents: 3 new" in captured.out
    live = Article.objects.filter(collection__name="plain", retired_at__isnull=True)
    assert sorted(live.values_list("slug", "title")) == [
        ("delivery", "Delivery"),
        ("returns", "Returns"),
        ("warranty", "Warranty and repairs"),
    ]
    versions = sorted(ArticleVersion.objects.values_list("article__slug", "version_label", "audience", "status"))

    # A bad file (binary, empty) is named, the sync fails, and nothing is retired or changed.
    (folder / "returns.md").unlink()
    write(folder, {"logo.md": b"\x89PNG\x00", "empty.md": ""})
    with pytest.raises(CommandError, match=r"2 document\(s\) failed"):
        call_command("ingest", str(folder), "--collection", "plain")
    err = capsys.readouterr().err
    assert f"{folder / 'logo.md'}:1: not valid UTF-8" in err and f"{folder / 'empty.md'}: the file is empty" in err
    assert live.count() == 3
    assert sorted(ArticleVersion.objects.values_list("article__slug", "version_label", "audience", "status")) == (
        versions
    )


@pytest.mark.django_db
def test_a_file_put_back_to_an_earlier_text_is_in_force_again_but_an_edit_in_the_admin_stays(tmp_path, embedder):
    folder = write(tmp_path / "kb", {"descaling.md": "# Descaling\n\nDescale every 6 weeks.\n"})

    def sync() -> str:
        out = io.StringIO()
        call_command("ingest", str(folder), "--collection", "plain", stdout=out, stderr=io.StringIO())
        return out.getvalue()

    def in_force() -> ArticleVersion:
        return ArticleVersion.objects.get(article__slug="descaling", status="published")

    sync()
    first = in_force().version_label
    write(folder, {"descaling.md": "# Descaling\n\nDescale every 5 weeks.\n"})
    sync()
    assert in_force().version_label != first
    write(folder, {"descaling.md": "# Descaling\n\nDescale every 6 weeks.\n"})  # the edit undone
    assert "0 new, 1 changed, 0 unchanged" in sync()
    assert in_force().version_label == first and "6 weeks" in in_force().body
    assert "0 new, 0 changed, 1 unchanged" in sync()  # and only once

    # A version published in the admin is not a text of the file: the next sync leaves it in force, and
    # says that the folder and what customers see now differ.
    draft = publishing.new_draft_from(in_force(), body="# Descaling\n\nDescale every 4 weeks.\n")
    publishing.submit_for_review(draft)
    publishing.publish(draft, embedder=embedder)
    err = io.StringIO()
    out = io.StringIO()
    call_command("ingest", str(folder), "--collection", "plain", stdout=out, stderr=err)
    assert "0 new, 0 changed, 1 unchanged" in out.getvalue()
    assert "1 article(s) were edited in the admin since their source was last synced" in err.getvalue()
    assert "descaling" in err.getvalue() and "--overwrite" in err.getvalue()
    assert "4 weeks" in in_force().body
    # --overwrite puts the file's text back in force; the admin's version is kept, superseded.
    call_command("ingest", str(folder), "--collection", "plain", "--overwrite", stdout=out, stderr=io.StringIO())
    assert "6 weeks" in in_force().body and in_force().version_label == first
    assert ArticleVersion.objects.get(pk=draft.pk).status == "superseded"
    assert "edited in the admin" not in sync_err(folder)


def sync_err(folder: Path) -> str:
    err = io.StringIO()
    call_command("ingest", str(folder), "--collection", "plain", stdout=io.StringIO(), stderr=err)
    return err.getvalue()
