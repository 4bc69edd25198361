"""Content gaps on real turns, the real embedding model and pgvector: what is collected, how it clusters,
which section is nearest, and what is stored."""

from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from answering.outcome import Decision
from answering.privacy.masking import mask_pii
from conversations.models import FeedbackRating, TurnFeedback
from insights.errors import GapError
from insights.gaps import DEFAULT_THRESHOLD, cluster, model_text, run_content_gaps, unanswered_questions
from tests.insights.gap_helpers import GIFT_WRAP, JOBS, SWITZERLAND, asked, gap_helpcentre

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection(tmp_path, embedder):
    return gap_helpcentre(tmp_path / "articles", embedder)


def test_it_groups_the_same_question_and_separates_different_ones(embedder):
    questions = [SWITZERLAND[0], GIFT_WRAP[0], JOBS, SWITZERLAND[1], GIFT_WRAP[1], SWITZERLAND[2]]

    groups = cluster(embedder.encode(questions), threshold=DEFAULT_THRESHOLD)

    as_text = [{questions[i] for i in g} for g in groups]
    assert as_text == [set(SWITZERLAND), set(GIFT_WRAP), {JOBS}]  # larger groups first


def test_it_puts_the_most_central_question_first():
    # Unit vectors: the second row sits between the other two, so it is nearest the group's mean.
    vectors = np.array([[1.0, 0.0], [np.sqrt(0.5), np.sqrt(0.5)], [0.0, 1.0]], dtype=np.float32)

    assert cluster(vectors, threshold=0.1) == [[1, 0, 2]]
    assert cluster(vectors[:1], threshold=0.5) == [[0]]
    assert cluster(vectors[:0], threshold=0.5) == []


def test_it_collects_only_abstained_and_referred_questions_of_the_period(collection):
    abstained = asked(collection, SWITZERLAND[0])
    referred = asked(collection, GIFT_WRAP[0], decision=Decision.REFERRED)
    asked(collection, "How long does delivery take?", decision=Decision.ANSWERED)
    asked(collection, JOBS, at=timezone.now() - timedelta(days=40))
    asked(collection, JOBS, from_lab=True)  # the evaluation lab's own unanswerable question: not a gap

    questions = unanswered_questions(collection, since=timezone.now() - timedelta(days=30))

    assert [q.turn_id for q in questions] == [referred.pk, abstained.pk]  # newest first


def test_it_collects_suggestions_the_customer_said_did_not_answer(collection):
    declined = asked(collection, SWITZERLAND[0], decision=Decision.SUGGESTED)
    TurnFeedback.objects.create(turn=declined, rating=FeedbackRating.DOWN)
    helped = asked(collection, "How do I return an item?", decision=Decision.SUGGESTED)
    TurnFeedback.objects.create(turn=helped, rating=FeedbackRating.UP)
    asked(collection, "Can I return a sofa?", decision=Decision.SUGGESTED)  # not answered either way: not a gap
    abstained = asked(collection, GIFT_WRAP[0])

    questions = unanswered_questions(collection, since=timezone.now() - timedelta(days=30))

    assert [(q.turn_id, q.text) for q in questions] == [(abstained.pk, GIFT_WRAP[0]), (declined.pk, SWITZERLAND[0])]


def test_it_uses_the_masked_question_never_the_raw_message(collection, embedder):
    asked(
        collection,
        "my email is jane.doe@example.com, do you deliver to Switzerland?",
        stored_query="my email is <EMAIL_ADDRESS_1>, do you deliver to Switzerland?",
    )
    # A turn stored without its question falls back to the message, masked for staff.
    asked(collection, "I'm Jane Doe, jane.doe@example.com: can you ship to Switzerland?", stored_query="")

    run = run_content_gaps(collection, embedder=embedder)

    examples = [e for gap in run.gaps.all() for e in gap.examples]
    assert len(examples) == 2
    assert all("jane.doe@example.com" not in e and "<EMAIL_ADDRESS" in e for e in examples)


def test_the_model_reads_names_and_places_but_never_contact_details():
    raw = "I'm at jane.doe@example.com: when do Oak Circle points expire?"
    masked = mask_pii(raw).text

    read = model_text(raw, masked)

    assert "jane.doe@example.com" not in read and "Oak Circle" in read
    # A follow-up reads as the turn rewrote it, placeholders left out.
    assert model_text("and for the UK?", "delivery Switzerland — and for the <LOCATION_1>?") == (
        "delivery Switzerland — and for the ?"
    )


def test_it_stores_each_cluster_with_its_nearest_section(collection, embedder):
    for question in SWITZERLAND:
        asked(collection, question)
    for question in GIFT_WRAP:
        asked(collection, question, decision=Decision.REFERRED)
    newest = asked(collection, JOBS)

    run = run_content_gaps(collection, embedder=embedder, since_days=7)

    assert run.questions == 6
    assert run.settings["threshold"] == DEFAULT_THRESHOLD
    gaps = {frozenset(g.examples): g for g in run.gaps.all()}
    assert set(gaps) == {frozenset(SWITZERLAND), frozenset(GIFT_WRAP), frozenset([JOBS])}
    switzerland = gaps[frozenset(SWITZERLAND)]
    assert switzerland.size == 3
    assert (switzerland.nearest_article_slug, switzerland.nearest_heading_path) == (
        "delivery",
        "Delivery › Where we deliver",
    )
    assert switzerland.nearest_score is not None
    assert 0.2 < switzerland.nearest_score < 1
    assert gaps[frozenset([JOBS])].newest_at == newest.created_at


def test_it_finds_the_nearest_section_the_askers_could_see(collection, embedder):
    question = "How fast do agents escalate a missing card refund to the payments team?"
    public_turn = asked(collection, question, audience="public")
    (public_gap,) = run_content_gaps(collection, embedder=embedder).gaps.all()
    public_turn.conversation.delete()
    asked(collection, question, audience="staff")
    (staff_gap,) = run_content_gaps(collection, embedder=embedder).gaps.all()

    # The staff-only article answers it, so for staff it is no gap; the public still have one.
    assert staff_gap.nearest_article_slug == "refund-escalation"
    assert public_gap.nearest_article_slug in {"delivery", "returns"}
    assert public_gap.nearest_score is not None and staff_gap.nearest_score is not None
    assert public_gap.nearest_score < staff_gap.nearest_score


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"threshold": 1.5}, "between 0 and 1"),
        ({"threshold": 0.0}, "between 0 and 1"),
        ({"since_days": 0}, "1 or more"),
    ],
)
def test_it_refuses_bad_settings(collection, embedder, options, message):
    with pytest.raises(GapError, match=message):
        run_content_gaps(collection, embedder=embedder, **options)
