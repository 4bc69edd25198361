"""A zip of Markdown files as a source: read safely (limits, corrupt and encrypted members, macOS metadata),
ingested by `manage.py ingest ARCHIVE.zip`, and uploaded in the admin (Articles › Upload Markdown)."""

from __future__ import annotations

import base64
import io
import os
import zipfile
from datetime import date

import pytest
from django.contrib.auth.models import Permission, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.urls import resolve, reverse

from knowledge.errors import IngestFileError
from knowledge.models import Article, ArticleVersion, SyncRun
from knowledge.sources import SourceDocument, SourceRead, read_zip

UPLOAD = reverse("admin:knowledge_article_upload")


def read_markdown_zip(name: str, raw: bytes, *, max_bytes: int) -> list[object]:
    """The archive's documents and errors, as the sync reads them (its warnings aside)."""
    read: SourceRead = read_zip(name, raw, max_bytes=max_bytes, today=date(2026, 1, 1))
    return list(read.items)


def article(slug: str, text: str = "Sofas arrive within three weeks of the order, by a two-person team.") -> bytes:
    return (
        f"---\nid: {slug}\ntitle: {slug.capitalize()}\nversion: '1'\neffective_date: 2026-01-01\naudience: public\n"
        f"---\n\n# {slug.capitalize()}\n\n## Details\n\n{text}\n"
    ).encode()


def archive(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, content in files.items():
            zipped.writestr(name, content)
    return buffer.getvalue()


def test_it_reads_the_markdown_members_in_any_folder_and_skips_the_rest():
    raw = archive(
        {
            "help/delivery.md": article("delivery"),
            "help/returns/returns.md": article("returns"),
            "__MACOSX/help/._delivery.md": b"\x00\x05\x16\x07",
            "help/.hidden.md": b"junk",
            "help/logo.png": b"\x89PNG",
        }
    )
    items = read_markdown_zip("help.zip", raw, max_bytes=10_000)
    assert [(i.slug, i.path) for i in items if isinstance(i, SourceDocument)] == [
        ("delivery", "help.zip!help/delivery.md"),
        ("returns", "help.zip!help/returns/returns.md"),
    ]
    assert len(items) == 2


def test_a_bad_archive_is_one_clear_error():
    assert str(read_markdown_zip("a.zip", b"PK\x03\x04 not really", max_bytes=10_000)[0]) == "a.zip: not a zip archive"
    [empty] = read_markdown_zip("a.zip", archive({"notes.txt": b"hello"}), max_bytes=10_000)
    assert "holds no .md files" in str(empty)


def test_bad_members_are_named_and_the_others_still_come():
    raw = bytearray(archive({"big.md": article("big", "x" * 20_000), "ok.md": article("ok"), "bad.md": article("bad")}))
    # Corrupt bad.md's compressed bytes: its CRC no longer matches.
    start = raw.index(b"bad.md") + len(b"bad.md")
    raw[start + 10 : start + 20] = b"\xff" * 10
    items = read_markdown_zip("kb.zip", bytes(raw), max_bytes=10_000)
    messages = {i.path: str(i) for i in items if isinstance(i, IngestFileError)}
    assert "over the limit of 10,000 bytes" in messages["kb.zip!big.md"]
    assert "could not be read from the archive" in messages["kb.zip!bad.md"]
    assert [i.slug for i in items if isinstance(i, SourceDocument)] == ["ok"]


def test_an_encrypted_member_is_refused():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        zipped.writestr("secret.md", article("secret"))
        zipped.writestr("open.md", article("open"))
    raw = bytearray(buffer.getvalue())
    # zipfile cannot write an encrypted member: set the "encrypted" flag of the first central directory entry.
    entry = raw.index(b"PK\x01\x02")
    raw[entry + 8] |= 0x1
    items = read_markdown_zip("kb.zip", bytes(raw), max_bytes=10_000)
    assert str(items[1]) == "kb.zip!secret.md: the file is encrypted"


@pytest.mark.django_db
def test_the_command_ingests_a_zip_as_it_does_a_folder(sample_dir, embedder, tmp_path, capsys):
    files = {str(p.relative_to(sample_dir)): p.read_bytes() for p in sample_dir.rglob("*.md")}
    zipped = tmp_path / "helpcentre.zip"
    zipped.write_bytes(archive(files))
    call_command("ingest", str(zipped), "--collection", "zipped")
    assert f"{len(files)} new, 0 changed, 0 unchanged, 0 failed, 0 retired" in capsys.readouterr().out
    call_command("ingest", str(zipped), "--collection", "zipped")
    assert f"0 new, 0 changed, {len(files)} unchanged" in capsys.readouterr().out


def uploader(*, allowed: bool = True) -> Client:
    user = User.objects.create_user(f"author-{User.objects.count()}", is_staff=True)
    if allowed:
        for codename in ("add_article", "view_article", "change_article"):
            user.user_permissions.add(Permission.objects.get(content_type__app_label="knowledge", codename=codename))
    client = Client()
    client.force_login(user)
    return client


def upload(client: Client, files: dict[str, bytes] | bytes, **fields: object):
    raw = files if isinstance(files, bytes) else archive(files)
    data = {"collection": "kb", "archive": SimpleUploadedFile("kb.zip", raw, "application/zip"), **fields}
    return client.post(UPLOAD, data)


def run_of(response) -> SyncRun:
    """The sync run an upload redirected to (its admin page follows it)."""
    assert response.status_code == 302, response.content.decode()[:500]
    run_id = resolve(response["Location"]).kwargs["object_id"]
    return SyncRun.objects.get(pk=run_id)


@pytest.mark.django_db
def test_an_author_uploads_a_zip_in_the_admin(embedder):
    author = uploader()
    assert 'data-role="upload-markdown"' in author.get(reverse("admin:knowledge_article_changelist")).content.decode()

    first = run_of(upload(author, {"delivery.md": article("delivery"), "returns.md": article("returns")}))
    assert (first.status, first.trigger, first.new, first.failed, first.retired) == ("finished", "upload", 2, 0, 0)
    page = author.get(reverse("admin:knowledge_syncrun_change", args=[first.pk])).content.decode()
    assert "2 new, 0 changed, 0 unchanged, 0 failed, 0 retired" in page and "2 of 2" in page

    # Another zip with one article: by default it adds and updates, and retires nothing.
    second = run_of(upload(author, {"payments.md": article("payments"), "broken.md": b"---\ntitle: never closed\n"}))
    assert (second.new, second.failed, second.retired) == (1, 1, 0)
    assert [e["path"] for e in second.errors] == ["kb.zip!broken.md"]
    assert (
        "kb.zip!broken.md" in author.get(reverse("admin:knowledge_syncrun_change", args=[second.pk])).content.decode()
    )
    assert sorted(Article.objects.filter(retired_at__isnull=True).values_list("slug", flat=True)) == [
        "delivery",
        "payments",
        "returns",
    ]

    # Said to be the whole collection: what it does not hold is retired.
    whole = run_of(upload(author, {"returns.md": article("returns")}, whole_collection="on"))
    assert (whole.new, whole.changed, whole.unchanged, whole.retired, whole.embedding_calls) == (0, 0, 1, 2, 0)
    assert list(Article.objects.filter(retired_at__isnull=True).values_list("slug", flat=True)) == ["returns"]


@pytest.mark.django_db
def test_a_bad_upload_is_refused_with_the_reason_and_writes_nothing(embedder, settings):
    author = uploader()
    not_zip = run_of(upload(author, b"just text"))
    assert not_zip.failed == 1 and "not a zip archive" in not_zip.errors[0]["message"]
    settings.INGEST_MAX_UPLOAD_BYTES = 10_000
    big = upload(author, {"a.md": article("a", base64.b64encode(os.urandom(15_000)).decode())})  # incompressible
    assert big.status_code == 200 and "over the limit of 10,000 bytes" in big.content.decode()
    bad_name = upload(author, {"a.md": article("a")}, collection="help centre!")
    assert bad_name.status_code == 200 and "errorlist" in bad_name.content.decode()
    assert not ArticleVersion.objects.exists()


@pytest.mark.django_db
def test_only_staff_allowed_to_add_articles_may_upload():
    assert Client().get(UPLOAD).status_code == 302  # to the admin's sign-in
    assert uploader(allowed=False).get(UPLOAD).status_code == 403
    assert uploader().get(UPLOAD).status_code == 200
