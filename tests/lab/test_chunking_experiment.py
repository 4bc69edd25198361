"""The chunking experiment on a two-article help centre: one row per variant, sizes that show the cost of
overlap, recall that credits an answer kept inside its section, and a second run that re-embeds nothing."""

import json
from pathlib import Path

import pytest

from knowledge.chunking import ChunkBounds
from knowledge.models import Chunk
from lab.answer_evaluation import GoldChunk, GoldenQuestion
from lab.chunking_experiment import ChunkingVariant, run_chunking_experiment

pytestmark = pytest.mark.django_db

FRONT_MATTER = '---\nid: {id}\ntitle: {title}\nversion: "1"\neffective_date: 2026-02-01\naudience: public\n---\n'
REFUNDS = """# Refunds

This article explains who can get a refund and when the money reaches you.

## Eligibility

You can ask for a refund within 30 days of the delivery date shown in your order history. The item must be
unused and in its original packaging, unless it arrived faulty. Made-to-order furniture is not eligible,
except when it is faulty. Orders cancelled before they are packed are refunded in full automatically.

## When the money arrives

After we approve your refund, card refunds reach you in 5 to 10 business days. PayPal refunds arrive within
2 business days. Gift card refunds are added back to the gift card at once. Your bank may take a little
longer to show the money on your statement.
"""
DELIVERY = """# Delivery

How long delivery takes and how to follow your parcel on its way to you.

## Delivery times

Standard delivery takes 3 to 5 working days within the mainland. Express delivery arrives the next working
day when you order before 2 pm. Large furniture is delivered by our own two-person team on a day you book.

## Tracking your parcel

Open Orders in your account and choose Track parcel to see where your parcel is. We also email a tracking
link as soon as the parcel leaves our warehouse. The link shows the courier's latest scan and the expected
delivery window.
"""
QUESTIONS = [
    GoldenQuestion(
        "card-refund-time",
        "plain",
        "public",
        "How long does a refund to my card take to arrive?",
        True,
        (GoldChunk("refunds", "Refunds › When the money arrives"),),
        ("5 to 10 business days",),
    ),
    GoldenQuestion(
        "refund-window",
        "plain",
        "public",
        "How many days after delivery can I still ask for a refund?",
        True,
        (GoldChunk("refunds", "Refunds › Eligibility"),),
        ("30 days",),
    ),
    GoldenQuestion(
        "track-parcel",
        "plain",
        "public",
        "Where can I see where my parcel is right now?",
        True,
        (GoldChunk("delivery", "Delivery › Tracking your parcel"),),
        ("Track parcel",),
    ),
]
# Windows of 60 tokens overlapping by half: nearly every word is stored twice.
OVERLAPPING = ChunkingVariant(
    "fixed-60-overlap-30", "fixed", ChunkBounds(min_tokens=20, max_tokens=60, overlap_tokens=30)
)
HEADING = ChunkingVariant("heading", "heading", ChunkBounds())


@pytest.fixture
def helpcentre_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "helpcentre"
    folder.mkdir()
    (folder / "refunds.md").write_text(FRONT_MATTER.format(id="refunds", title="Refunds") + REFUNDS)
    (folder / "delivery.md").write_text(FRONT_MATTER.format(id="delivery", title="Delivery") + DELIVERY)
    return folder


def run(helpcentre_dir, embedder, questions=QUESTIONS, stackfaq_dir=None):
    return run_chunking_experiment(
        (OVERLAPPING, HEADING),
        golden_questions=questions,
        helpcentre_dir=helpcentre_dir,
        stackfaq_dir=stackfaq_dir,
        split="test",
        embedder=embedder,
        secondary=None,
    )


def chunk_ids(collection: str) -> set[int]:
    return set(Chunk.objects.filter(version__article__collection__name=collection).values_list("id", flat=True))


def test_it_measures_each_variant_in_its_own_collection(helpcentre_dir, embedder):
    overlapping, heading = run(helpcentre_dir, embedder)
    assert [(r.variant, r.corpus) for r in (overlapping, heading)] == [
        ("fixed-60-overlap-30", "golden"),
        ("heading", "golden"),
    ]
    assert overlapping.chunks == len(chunk_ids("exp-chunk-fixed-60-overlap-30")) > 2
    # Heading: the text under each title and each of the four sections, one chunk apiece.
    assert heading.chunks == len(chunk_ids("exp-chunk-heading")) == 6
    assert overlapping.source_chars == heading.source_chars == len(REFUNDS) + len(DELIVERY)
    assert overlapping.stored_chars >= overlapping.source_chars
    assert heading.stored_chars <= heading.source_chars
    for row in (overlapping, heading):
        assert 0 <= row.recall_at_3 <= 1 and 0 <= row.mrr <= 1
    # Every answer sits inside one section, which the heading strategy keeps whole.
    assert heading.recall_at_3 == 1.0
    assert heading.as_dict()["recall@3"] == 1.0


def test_a_second_run_re_embeds_nothing(helpcentre_dir, embedder):
    first = run(helpcentre_dir, embedder)
    before = {name: chunk_ids(name) for name in ("exp-chunk-fixed-60-overlap-30", "exp-chunk-heading")}
    second = run(helpcentre_dir, embedder)
    # Re-chunking would have deleted the chunks and written new ones with new ids.
    assert {name: chunk_ids(name) for name in before} == before
    assert second == first


def test_a_beir_corpus_is_measured_in_collections_of_its_own(helpcentre_dir, embedder, tmp_path):
    dataset = tmp_path / "mini-faq"
    (dataset / "qrels").mkdir(parents=True)
    passages = {
        "p1": "To reset your password, choose Forgot password on the sign-in page and follow the email.",
        "p2": "Invoices for every order can be downloaded as PDF from the Orders page.",
        "p3": "We deliver to the mainland and to the islands; island orders take two extra days.",
    }
    (dataset / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": pid, "title": "", "text": text}) + "\n" for pid, text in passages.items())
    )
    (dataset / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "I forgot my password"})
        + "\n"
        + json.dumps({"_id": "q2", "text": "where do I get an invoice as a PDF"})
        + "\n"
    )
    (dataset / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tp1\t1\nq2\tp2\t1\n")

    rows = run(helpcentre_dir, embedder, questions=[], stackfaq_dir=dataset)
    assert [(r.variant, r.corpus) for r in rows] == [
        ("fixed-60-overlap-30", "golden"),
        ("fixed-60-overlap-30", "mini-faq"),
        ("heading", "golden"),
        ("heading", "mini-faq"),
    ]
    beir = [r for r in rows if r.corpus == "mini-faq"]
    assert all(r.chunks == len(chunk_ids(f"exp-chunk-stackfaq-{r.variant}")) == 3 for r in beir)
    assert all((r.recall_at_3, r.mrr, r.ndcg_at_10) == (1.0, 1.0, 1.0) for r in beir)
    assert all(r.ndcg_at_10 is None for r in rows if r.corpus == "golden")


@pytest.mark.parametrize("name", ["Heading", "fixed_100", "fixed--100", "-heading", "x" * 82])
def test_a_variant_name_that_cannot_name_a_collection_is_refused(name):
    with pytest.raises(ValueError, match="variant name"):
        ChunkingVariant(name, "heading", ChunkBounds())
