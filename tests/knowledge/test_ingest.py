"""Ingestion: the sample indexed, unchanged articles skipped by their hash, edits re-embedded alone."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from knowledge import ingest as ingest_module
from knowledge.models import Article, ArticleVersion, Chunk, Posting, VersionStatus
from tests.knowledge.helpers import sync_folder

pytestmark = pytest.mark.django_db
FOOTER = "Still stuck? Contact us at help@lumenoak.example or chat with us from any page."


def chunk_ids(slug: str) -> set[int]:
    return set(Chunk.objects.filter(version__article__slug=slug).values_list("id", flat=True))


def test_it_indexes_the_sample_help_centre(sample_dir, embedder):
    report = sync_folder(sample_dir, embedder)
    assert (report.new, report.failed, report.unchanged) == (15, 0, 0)
    assert report.chunks == Chunk.objects.count() > 15
    # One call for every chunk vector of the 15 articles (the default heading strategy embeds no sentences).
    assert report.embedding_calls == 1
    shipping = {v.version_label: v.status for v in ArticleVersion.objects.filter(article__slug="shipping")}
    assert shipping == {"1": VersionStatus.SUPERSEDED, "2": VersionStatus.PUBLISHED}
    assert ArticleVersion.objects.get(article__slug="shipping", version_label="2").supersedes.version_label == "1"
    assert ArticleVersion.objects.get(article__slug="refund-escalation-procedure").audience == "staff"
    assert ArticleVersion.objects.get(article__slug="loyalty-programme").audience == "member"
    assert not Chunk.objects.filter(text__contains=FOOTER).exists()
    arrival = Chunk.objects.filter(heading_path="Refunds › When the money arrives")
    assert any("5 to 10 business days" in c.text for c in arrival)


def test_a_second_sync_embeds_nothing(sample_dir, embedder):
    sync_folder(sample_dir, embedder)
    before = set(Chunk.objects.values_list("id", flat=True))
    calls = embedder.calls
    report = sync_folder(sample_dir, embedder)
    assert embedder.calls == calls
    assert (report.unchanged, report.new, report.changed, report.embedding_calls) == (15, 0, 0, 0)
    assert set(Chunk.objects.values_list("id", flat=True)) == before


def test_editing_one_article_re_embeds_only_that_article(sample_dir, embedder):
    sync_folder(sample_dir, embedder)
    untouched = {slug: chunk_ids(slug) for slug in ("returns", "shipping", "payment-errors")}
    old_warranty = chunk_ids("warranty")
    path = sample_dir / "warranty.md"
    path.write_text(path.read_text().replace("2 years", "3 years"))

    report = sync_folder(sample_dir, embedder)
    assert (report.changed, report.unchanged, report.new) == (1, 14, 0)
    new_warranty = chunk_ids("warranty")
    assert report.chunks == len(new_warranty)
    assert new_warranty.isdisjoint(old_warranty)
    assert {slug: chunk_ids(slug) for slug in untouched} == untouched
    assert Chunk.objects.filter(version__article__slug="warranty", text__contains="3 years").exists()


def test_a_removed_file_retires_its_article_and_a_restored_one_returns(sample_dir, embedder):
    sync_folder(sample_dir, embedder)
    gift_cards = (sample_dir / "gift-cards.md").read_bytes()
    (sample_dir / "gift-cards.md").unlink()

    report = sync_folder(sample_dir, embedder)
    assert report.retired == 1
    article = Article.objects.get(slug="gift-cards")
    assert article.retired_at is not None
    assert not chunk_ids("gift-cards")
    assert ArticleVersion.objects.filter(article=article).exists()  # history is kept

    (sample_dir / "gift-cards.md").write_bytes(gift_cards)
    report = sync_folder(sample_dir, embedder)
    assert (report.changed, report.retired) == (1, 0)
    article.refresh_from_db()
    assert article.retired_at is None and chunk_ids("gift-cards")


BAD_FILES = {
    "unclosed.md": "---\nid: unclosed\ntitle: Never closed\n\n# Hello\n",
    "vip.md": "---\nid: vip\ntitle: VIP\nversion: 1\neffective_date: 2026-01-01\naudience: vip\n---\n# VIP\n\nText.\n",
    "bad-date.md": "---\nid: bd\ntitle: BD\nversion: 1\neffective_date: 2026-02-30\naudience: public\n---\n# BD\n\nText.\n",
    "dup.md": '---\nid: refunds\ntitle: Refunds again\nversion: "1"\neffective_date: 2026-01-01\naudience: public\n'
    "---\n# Refunds\n\nA duplicate.\n",
    "latin1.md": "---\nid: latin\ntitle: L\nversion: 1\neffective_date: 2026-01-01\naudience: public\n---\n# Caf\xe9\n",
    "huge.md": "---\nid: huge\ntitle: H\nversion: 1\neffective_date: 2026-01-01\naudience: public\n---\n# H\n\n"
    + "word " * 300_000,
}


def test_bad_files_are_reported_and_change_nothing(sample_dir, embedder):
    sync_folder(sample_dir, embedder)
    snapshot = sorted(Chunk.objects.values_list("id", "text"))
    versions = sorted(ArticleVersion.objects.values_list("id", "status", "content_hash"))
    for name, text in BAD_FILES.items():
        (sample_dir / name).write_bytes(text.encode("latin-1") if name == "latin1.md" else text.encode())

    with pytest.raises(CommandError, match="7 document\\(s\\) failed"):
        call_command("ingest", str(sample_dir), "--collection", "helpcentre")

    assert sorted(Chunk.objects.values_list("id", "text")) == snapshot
    assert sorted(ArticleVersion.objects.values_list("id", "status", "content_hash")) == versions
    assert not Article.objects.filter(slug__in=["vip", "bd", "latin", "huge"]).exists()
    assert Article.objects.filter(retired_at__isnull=False).count() == 0  # unknown ids: nothing retired


def test_the_command_names_file_line_and_field(sample_dir, capsys):
    (sample_dir / "vip.md").write_text(BAD_FILES["vip.md"])
    (sample_dir / "dup.md").write_text(BAD_FILES["dup.md"])
    with pytest.raises(CommandError):
        call_command("ingest", str(sample_dir), "--collection", "helpcentre")
    err = capsys.readouterr().err
    assert f"{sample_dir / 'vip.md'}:6: audience: unknown audience 'vip'" in err
    # Neither of two files claiming the same id and version is applied.
    assert f"{sample_dir / 'dup.md'}: id: duplicate id 'refunds' version '1': also defined by " in err
    assert f"{sample_dir / 'refunds.md'}: id: duplicate id 'refunds' version '1': also defined by " in err
    assert not Article.objects.filter(slug="refunds").exists()
    # The other files still ingested.
    assert Article.objects.filter(slug="warranty").exists()


def test_a_crash_mid_article_leaves_the_previous_version_serving(sample_dir, embedder, monkeypatch):
    sync_folder(sample_dir, embedder)
    before = sorted(Chunk.objects.filter(version__article__slug="returns").values_list("id", "text"))
    path = sample_dir / "returns.md"
    path.write_text(path.read_text().replace("30 days", "45 days"))
    real_write_chunks = ingest_module.write_chunks

    def write_then_crash(written, collection):
        real_write_chunks(written, collection)
        raise RuntimeError("disk full")

    monkeypatch.setattr(ingest_module, "write_chunks", write_then_crash)
    with pytest.raises(RuntimeError):
        sync_folder(sample_dir, embedder)
    assert sorted(Chunk.objects.filter(version__article__slug="returns").values_list("id", "text")) == before
    assert "45 days" not in ArticleVersion.objects.get(article__slug="returns").body

    monkeypatch.undo()
    report = sync_folder(sample_dir, embedder)
    assert report.changed == 1  # the interrupted article is picked up again


def test_a_version_that_supersedes_a_missing_one_is_refused(sample_dir, embedder):
    path = sample_dir / "warranty.md"
    path.write_text(path.read_text().replace("language: en", 'language: en\nsupersedes: "7"'))
    report = sync_folder(sample_dir, embedder)
    assert report.failed == 1
    assert "supersedes version '7'" in str(report.errors[0])
    assert not Article.objects.filter(slug="warranty").exists()


def test_changing_the_chunking_strategy_re_chunks(sample_dir, embedder):
    sync_folder(sample_dir, embedder, strategy="heading")
    report = sync_folder(sample_dir, embedder, strategy="heading-semantic")
    assert report.changed == 15
    assert report.embedding_calls == 2  # all sentence vectors in one call, then all chunk vectors
    assert set(ArticleVersion.objects.values_list("chunking", flat=True)) == {"heading-semantic:40-200"}


def test_beir_corpora_ingest_into_their_own_collection(tmp_path, embedder):
    (tmp_path / "corpus.jsonl").write_text(
        '{"_id": "1", "title": "Aspirin", "text": "Aspirin lowers the risk of a second heart attack."}\n'
        '{"_id": "2", "title": "Vitamin D", "text": "Vitamin D supplements did not prevent fractures."}\n'
    )
    call_command("ingest", str(tmp_path), "--collection", "beir-mini", "--format", "beir")
    assert Chunk.objects.filter(version__article__collection__name="beir-mini").count() == 2
    assert Chunk.objects.get(version__article__slug="1").heading_path == "Aspirin"


def test_text_above_the_first_heading_is_filed_under_the_title(tmp_path, embedder):
    (tmp_path / "note.md").write_text(
        "---\nid: note\ntitle: Store note\nversion: 1\neffective_date: 2026-01-01\naudience: public\n---\n"
        "Our stores close early on 24 December.\n"
    )
    sync_folder(tmp_path, embedder)
    assert Chunk.objects.get(version__article__slug="note").heading_path == "Store note"


def test_re_syncing_an_older_version_keeps_the_newer_one_published(sample_dir, embedder):
    sync_folder(sample_dir, embedder)
    old = sample_dir / "shipping-v1.md"
    old.write_text(old.read_text().replace("title: Shipping and delivery", "title: Shipping (old)"))
    report = sync_folder(sample_dir, embedder)
    assert (report.changed, report.new) == (1, 0)
    shipping = {v.version_label: v.status for v in ArticleVersion.objects.filter(article__slug="shipping")}
    assert shipping == {"1": VersionStatus.SUPERSEDED, "2": VersionStatus.PUBLISHED}
    assert Article.objects.get(slug="shipping").title == "Shipping and delivery"


def test_a_later_version_without_supersedes_replaces_the_published_one(sample_dir, embedder):
    sync_folder(sample_dir, embedder)
    text = (sample_dir / "warranty.md").read_text()
    (sample_dir / "warranty-v2.md").write_text(
        text.replace('version: "1"', 'version: "2"')
        .replace("2026-02-01", "2026-09-01")
        .replace("title: ", "title: New ", 1)
    )
    report = sync_folder(sample_dir, embedder)
    assert report.new == 1
    statuses = dict(ArticleVersion.objects.filter(article__slug="warranty").values_list("version_label", "status"))
    assert statuses == {"1": VersionStatus.SUPERSEDED, "2": VersionStatus.PUBLISHED}
    assert Article.objects.get(slug="warranty").title.startswith("New ")


def test_every_chunk_of_a_batch_gets_its_postings(sample_dir, embedder):
    sync_folder(sample_dir, embedder)
    chunks = Chunk.objects.filter(version__article__collection__name="helpcentre")
    with_postings = chunks.filter(posting__isnull=False).distinct().count()
    assert with_postings == chunks.count() > 100
    assert Posting.objects.filter(chunk__text__contains="5 to 10 business days", lexeme="busi").exists()
