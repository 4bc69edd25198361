"""Pointers followed one hop: a statement that names another section ("see Dispatch times") or links to a help
page leads the evidence to that section, read with the turn's audience and version rules, so the reader can
quote the answer there instead of the pointer."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.utils import timezone

from answering.evidence.context import assemble_context
from answering.evidence.gather import chunk_evidence, gather_evidence
from answering.evidence.pointers import follow_pointer, pointer_names, pointer_slugs
from answering.read.reader import choose_statements, score_sentences
from knowledge.models import Collection
from knowledge.rerank import default_reranker
from knowledge.retrieval import chunks_named
from knowledge.scope import Scope
from supportbot.stopwatch import Stopwatch
from tests.answering.fakes import services
from tests.knowledge.helpers import sync_folder

pytestmark = pytest.mark.django_db


def test_a_pointer_is_a_capitalised_name_inside_a_sentence_or_a_link_to_a_help_page():
    names = pointer_names("For when the parcel leaves us, see Dispatch times. Thanks.")
    assert "Dispatch" in names and "Dispatch times" in names
    assert not any(n.startswith(("For", "Thanks")) for n in names)  # a sentence's first word names nothing
    assert pointer_names("Return window: 30 days; Notes: Unused.") == []  # after a colon: a label, not a name
    assert pointer_slugs("Read [how dispatch works](/help/dispatch-times#replacements).") == ["dispatch-times"]


def article(folder: Path, slug: str, title: str, audience: str, body: str) -> None:
    (folder / f"{slug}.md").write_text(
        f"---\nid: {slug}\ntitle: {title}\nversion: '1'\neffective_date: 2026-01-01\naudience: {audience}\n---\n\n"
        f"# {title}\n\n{body}\n"
    )


@pytest.fixture
def pointing(tmp_path: Path, embedder) -> Collection:
    folder = tmp_path / "articles"
    folder.mkdir()
    article(
        folder,
        "exchanges",
        "Exchanges",
        "public",
        "## After we receive your exchange\n\nWe check every exchanged item within 2 business days of arrival. "
        "You get an email when the exchange is approved. For when the replacement leaves our warehouse, see "
        "Dispatch times. Staff can check courier terms in Courier contracts.",
    )
    article(
        folder,
        "dispatch-times",
        "Dispatch times",
        "public",
        "## Replacement items\n\nA replacement item leaves our warehouse within 3 business days of the exchange "
        "being approved.\n\n## New orders\n\nNew orders leave our warehouse the next business day.",
    )
    article(
        folder,
        "courier-contracts",
        "Courier contracts",
        "staff",
        "## Replacement dispatch\n\nReplacements go out on the priority contract, collected daily at 4pm.",
    )
    sync_folder(folder, embedder, collection="pointing")
    return Collection.objects.get(name="pointing")


def test_the_named_sections_are_found_within_the_customers_audience(pointing):
    public = Scope(pointing.pk, "public", "as_of", timezone.localdate())
    found = chunks_named(public, ["Dispatch times", "Courier contracts"], [], limit=6)
    assert {c.version.article.slug for c in found} == {"dispatch-times"}
    staff = Scope(pointing.pk, "staff", "as_of", timezone.localdate())
    assert "courier-contracts" in {
        c.version.article.slug for c in chunks_named(staff, ["courier contracts"], [], limit=6)
    }
    assert [c.heading_path for c in chunks_named(public, [], ["dispatch-times"], limit=1)] == [
        "Dispatch times › Replacement items"
    ]


def test_a_strong_pointer_leads_to_the_section_it_names_and_no_further(pointing, embedder):
    scope = Scope(pointing.pk, "public", "as_of", timezone.localdate())
    (exchanges,) = chunks_named(scope, ["After we receive your exchange"], [], limit=6)
    context = assemble_context("", [chunk_evidence(exchanges, 1.0)], [], budget_tokens=2000, count_tokens=words)
    question = "when does the replacement leave the warehouse once my exchange is approved"
    scored = score_sentences(question, context, default_reranker())
    followed = follow_pointer(question, scored, context, scope, default_reranker())
    assert followed is not None and followed.pointed_from == exchanges.pk
    assert followed.chunk.heading_path == "Dispatch times › Replacement items"
    assert any("within 3 business days" in r.statement.text for r in followed.readings)
    # A customer who may not see where a pointer leads is not led there.
    staff_only = "where are the courier terms kept"
    scored = score_sentences(staff_only, context, default_reranker())
    led = follow_pointer(staff_only, scored, context, scope, default_reranker())
    assert led is None or led.chunk.version.article.slug != "courier-contracts"


def test_the_section_a_pointer_names_is_read_after_the_passage_that_points_there(pointing, embedder, settings):
    settings.ANSWER_PASSAGES = 1  # retrieval gives one section: what it names is read only by following it
    found = gather_evidence(
        "I got the email that my exchange is approved, so when is the replacement leaving?",
        collection=pointing,
        audience="public",
        today=timezone.localdate(),
        policy="",
        history=[],
        services=services(embedder),
        watch=Stopwatch(),
    )
    articles = [p.article for p in found.context.evidence]
    assert articles == ["exchanges", "dispatch-times"], articles
    followed = found.context.evidence[1]
    assert followed.heading_path == "Dispatch times › Replacement items"
    said = choose_statements(found.scored, embed=embedder.encode)
    assert any("within 3 business days" in s.text and s.passage == followed.number for s in said), said
    assert not any("see Dispatch times" in s.text for s in found.scored)  # the pointer gives way to its answer


def words(text: str) -> int:
    return len(text.split())
