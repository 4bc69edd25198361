"""Golden-set candidates from real turns: the button on a down-voted or referred turn's admin page, the
prefilled form and what it refuses, and the export (admin action and command) read back by the golden-set
reader that `manage.py evaluate answers` uses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from conversations.models import Conversation, Message, Role, Turn, TurnFeedback
from knowledge.models import Collection
from lab.answer_evaluation import GoldChunk, read_golden_set
from lab.golden_candidates import create_candidate, published_sections, suggested_question
from lab.models import GoldenCandidate
from tests.knowledge.helpers import sync_folder

pytestmark = pytest.mark.django_db

WHEN = "Refunds › When the money arrives"
CREDIT = "Refunds › Store credit"
MONEY_TEXT = "Refunds reach your card 5 to 10 business days after we approve them."


@pytest.fixture
def articles(tmp_path: Path, embedder) -> Collection:
    folder = tmp_path / "articles"
    folder.mkdir()
    (folder / "refunds.md").write_text(
        "---\nid: refunds\ntitle: Refunds\nversion: '1'\neffective_date: 2026-01-01\naudience: public\n---\n\n"
        f"# Refunds\n\n## When the money arrives\n\n{MONEY_TEXT}\n\n"
        "## Store credit\n\nStore credit never expires and can be spent on anything in the shop.\n"
    )
    (folder / "loyalty.md").write_text(
        "---\nid: loyalty\ntitle: Loyalty\nversion: '1'\neffective_date: 2026-01-01\naudience: member\n---\n\n"
        "# Loyalty\n\n## Points\n\nMembers earn one point for every pound they spend.\n"
    )
    sync_folder(folder, embedder, collection="golden-test")
    return Collection.objects.get(name="golden-test")


def make_turn(collection: Collection, *, decision: str, rating: str | None, rewritten: str = "") -> Turn:
    conversation = Conversation.objects.create(collection=collection)
    asked = Message.objects.create(
        conversation=conversation, role=Role.CUSTOMER, text="I'm Jane Doe, jane.doe@example.com: where is my refund?"
    )
    replied = Message.objects.create(conversation=conversation, role=Role.ASSISTANT, text="It takes a while [1].")
    place = {"article": "refunds", "heading_path": WHEN}
    turn = Turn.objects.create(
        conversation=conversation,
        customer_message=asked,
        reply_message=replied,
        rewritten_query=rewritten,
        candidates=[{**place, "rank": 1}, {"article": "refunds", "heading_path": CREDIT, "rank": 2}],
        citations=[{**place, "number": 1, "title": "Refunds"}],
        reply=replied.text,
        decision=decision,
    )
    if rating:
        TurnFeedback.objects.create(turn=turn, rating=rating, reason="too vague" if rating == "down" else "")
    return turn


def staff(*perms: str) -> Client:
    user = User.objects.create_user(f"staff-{User.objects.count()}", first_name="Sam", is_staff=True)
    for perm in perms:
        app, codename = perm.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app, codename=codename))
    client = Client()
    client.force_login(user)
    return client


MAKER = ("lab.add_goldencandidate", "conversations.view_turn", "lab.view_goldencandidate")


def from_turn_url(turn: Turn) -> str:
    return reverse("admin:lab_goldencandidate_from_turn", args=[turn.pk])


def test_a_down_voted_turn_shows_its_rating_and_becomes_a_candidate_in_one_form(articles):
    turn = make_turn(articles, decision="answered", rating="down", rewritten="how long do card refunds take")
    client = staff(*MAKER)

    page = client.get(reverse("admin:conversations_turn_change", args=[turn.pk])).content.decode()
    assert "Not helpful" in page and "too vague" in page
    assert f'href="{from_turn_url(turn)}"' in page

    form = client.get(from_turn_url(turn)).content.decode()
    assert "how long do card refunds take</textarea>" in form  # the masked rewrite, prefilled
    assert re.search(r'<option value="refunds#Refunds › When the money arrives" selected>', form)
    assert MONEY_TEXT in form  # the section's text, to copy the fact from
    assert "loyalty#" not in form  # a member-only section is not offered for a public conversation

    response = client.post(
        from_turn_url(turn),
        {
            "question": "how long do card refunds take",
            "answerable": "yes",
            "section": f"refunds#{WHEN}",
            "fact": "5 to 10  business days",
        },
    )
    candidate = GoldenCandidate.objects.get()
    assert response.status_code == 302 and response["Location"].endswith(f"/{candidate.pk}/change/")
    assert (candidate.turn, candidate.question, candidate.answerable) == (turn, "how long do card refunds take", True)
    assert (candidate.article_slug, candidate.heading_path, candidate.fact) == (
        "refunds",
        WHEN,
        "5 to 10 business days",
    )
    assert candidate.audience == "public" and candidate.created_by.get_username().startswith("staff-")
    again = client.get(reverse("admin:conversations_turn_change", args=[turn.pk])).content.decode()
    assert "1 made from this turn already" in again


def test_the_form_refuses_what_would_not_be_a_valid_golden_row(articles):
    turn = make_turn(articles, decision="referred", rating=None)
    client = staff(*MAKER)
    base = {"question": "where is my refund", "answerable": "yes", "section": f"refunds#{WHEN}", "fact": "5 to 10"}
    cases = [
        ({"fact": "within two hours"}, "The fact is not in “Refunds › When the money arrives”"),
        ({"fact": ""}, "Give the fact"),
        ({"section": ""}, "Choose the section that answers the question."),
        ({"section": "loyalty#Loyalty › Points", "fact": "one point"}, "Select a valid choice."),
        ({"answerable": "no"}, "An unanswerable question has no section or fact"),
        ({"question": "  "}, "This field is required."),
        ({"fact": " ".join(["refunds"] * 13)}, "The fact has 13 words"),
    ]
    for change, message in cases:
        page = client.post(from_turn_url(turn), {**base, **change}).content.decode()
        assert message in page, (change, page[-3000:])
    assert not GoldenCandidate.objects.exists()

    response = client.post(from_turn_url(turn), {**base, "answerable": "no", "section": "", "fact": ""})
    assert response.status_code == 302
    assert GoldenCandidate.objects.get().answerable is False


def test_only_down_voted_or_referred_turns_offer_the_button_and_only_to_staff_who_may_add(articles):
    answered = make_turn(articles, decision="answered", rating="up")
    page = staff(*MAKER).get(reverse("admin:conversations_turn_change", args=[answered.pk])).content.decode()
    assert "Helpful" in page and "make-golden-candidate" not in page
    referred = make_turn(articles, decision="referred", rating=None)
    assert staff("conversations.view_turn").get(from_turn_url(referred)).status_code == 403
    assert staff(*MAKER).get(reverse("admin:lab_goldencandidate_from_turn", args=[10**6])).status_code == 404


def test_the_question_falls_back_to_the_masked_message_when_no_rewrite_was_stored(articles):
    turn = make_turn(articles, decision="referred", rating=None)
    question = suggested_question(turn)
    assert "jane.doe@example.com" not in question and "Jane Doe" not in question
    assert "where is my refund?" in question


def test_the_export_is_read_back_by_the_golden_set_reader(articles, tmp_path):
    sections = {s.key: s for s in published_sections(articles, "public")}
    down = make_turn(articles, decision="answered", rating="down")
    referred = make_turn(articles, decision="referred", rating=None)
    user = User.objects.create_user("lead", is_staff=True)
    answerable = create_candidate(
        turn=down,
        question="how long until my card refund arrives",
        answerable=True,
        section=sections[f"refunds#{WHEN}"],
        fact="5 to 10 business days",
        user=user,
    )
    unanswerable = create_candidate(
        turn=referred, question="do you sell walnut sofa legs", answerable=False, section=None, fact="", user=user
    )

    out = tmp_path / "candidates.jsonl"
    call_command("export_golden_candidates", "--out", str(out))
    questions = {q.id: q for q in read_golden_set(out)}
    first, second = questions[f"candidate-{answerable.pk}"], questions[f"candidate-{unanswerable.pk}"]
    assert (first.category, first.audience, first.question, first.answerable) == (
        "plain",
        "public",
        "how long until my card refund arrives",
        True,
    )
    assert first.gold == (GoldChunk("refunds", WHEN),) and first.facts == ("5 to 10 business days",)
    assert (second.category, second.answerable, second.gold, second.facts) == ("unanswerable", False, (), ())

    # The admin action downloads the same lines for the candidates selected.
    client = staff(*MAKER)
    response = client.post(
        reverse("admin:lab_goldencandidate_changelist"),
        {"action": "export_jsonl", "_selected_action": [answerable.pk, unanswerable.pk]},
    )
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    assert response.content.decode() == out.read_text(encoding="utf-8")

    with pytest.raises(CommandError, match="no such folder"):
        call_command("export_golden_candidates", "--out", str(tmp_path / "missing" / "x.jsonl"))
