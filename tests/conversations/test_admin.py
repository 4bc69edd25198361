"""The staff admin console: what each conversation page shows, and personal data masked for staff
without conversations.view_personal_data (Presidio runs for real)."""

import html
import re
from dataclasses import dataclass
from html.parser import HTMLParser

import pytest
from django.contrib.auth.models import Permission, User
from django.db.models import Model
from django.test import Client
from django.urls import reverse

from conversations.handoff.staff import render_card
from conversations.models import (
    Claim,
    Conversation,
    Message,
    Referral,
    Role,
    StaffAction,
    StaffActionKind,
    Turn,
)
from knowledge.models import Collection, EmbeddingSpace

pytestmark = pytest.mark.django_db

EMAIL = "jane.doe@example.com"
CUSTOMER_TEXT = f"my email is {EMAIL} and my name is Jane Doe, where is my refund?"
STAFF_TEXT = f"Hello, I have written to {EMAIL} with the refund details."
MASKED_EMAIL = "&lt;EMAIL_ADDRESS_1&gt;"
MASKED_NOTE = "Personal data is masked"

CANDIDATES = [
    {
        "chunk": 11,
        "article": "refunds",
        "version": "2024-03",
        "heading_path": "Refunds › When the money arrives",
        "rank": 1,
        "score": 0.0325,
        "stages": {"bm25": {"rank": 1, "score": 7.1234}, "dense": {"rank": 2, "score": 0.8123}},
    },
    {
        "chunk": 40,
        "article": "shipping-times",
        "version": "2023-11",
        "heading_path": "Shipping › Delays",
        "rank": 2,
        "score": 0.0161,
        "stages": {"dense": {"rank": 1, "score": 0.8571}},
    },
]
CONTEXT = [
    {"number": 0, "trust": "system", "source": "policy", "text": "Refunds over $500 need a manager.", "tokens": 8},
    {
        "number": 1,
        "trust": "retrieved",
        "source": "article",
        "text": "Refunds reach your card in 5 to 10 business days.",
        "tokens": 12,
        "article": "refunds",
        "title": "Refunds",
        "version": "2024-03",
        "effective_date": "2024-03-01",
        "heading_path": "Refunds › When the money arrives",
        "chunk_id": 11,
    },
    {"number": 0, "trust": "user", "source": "conversation", "text": "hello there", "tokens": 2},
]


@dataclass
class Records:
    conversation: Conversation
    turn: Turn
    referral: Referral
    action: StaffAction


def admin_url(obj: Model, view: str = "change") -> str:
    return reverse(f"admin:conversations_{obj._meta.model_name}_{view}", args=[obj.pk])


@pytest.fixture
def records() -> Records:
    space = EmbeddingSpace.objects.create(model_name="test-model", dimension=4, weights_sha256="0" * 64)
    collection = Collection.objects.create(name="helpcentre", embedding_space=space)
    conversation = Conversation.objects.create(collection=collection)
    asked = Message.objects.create(conversation=conversation, role=Role.CUSTOMER, text=CUSTOMER_TEXT)
    replied = Message.objects.create(
        conversation=conversation, role=Role.ASSISTANT, text="A person from our team will reply here shortly."
    )
    agent = User.objects.create_user("agent")
    staff_reply = Message.objects.create(conversation=conversation, role=Role.STAFF, text=STAFF_TEXT, author=agent)
    turn = Turn.objects.create(
        conversation=conversation,
        customer_message=asked,
        reply_message=replied,
        rewritten_query="where is my refund",
        candidates=CANDIDATES,
        context=CONTEXT,
        generator="extractive",
        draft="Refunds reach your card in 5 to 10 business days [1].",
        reply=replied.text,
        decision="referred",
        citations=[
            {
                "number": 1,
                "article": "refunds",
                "title": "Refunds",
                "heading_path": "Refunds › When the money arrives",
                "version": "2024-03",
            }
        ],
        evidence_score=4.25,
        latency_ms={"retrieve": 41.5, "ground": 120.0, "total": 190.2},
        notes=["claim 0 unsupported: no passage states it"],
    )
    Claim.objects.create(
        turn=turn,
        ordinal=0,
        text="Refunds reach your card in 5 to 10 business days.",
        citations=[1],
        verdict="unsupported",
        tier="similarity",
        score=0.31,
        reason="no passage states it",
    )
    referral = Referral.objects.create(turn=turn, conversation=conversation, reason="a claim was unsupported")
    action = StaffAction.objects.create(
        conversation=conversation,
        referral=referral,
        user=agent,
        username="agent",
        kind=StaffActionKind.REPLY,
        message=staff_reply,
    )
    return Records(conversation, turn, referral, action)


def staff_client(*codenames: str) -> Client:
    user = User.objects.create_user(f"staff-{User.objects.count()}", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="conversations", codename__in=codenames)
    )
    client = Client()
    client.force_login(user)
    return client


VIEW_ALL = tuple(f"view_{m}" for m in ("conversation", "message", "turn", "claim", "referral", "staffaction"))
PAGES = ["conversation", "turn", "referral", "action"]


@pytest.mark.parametrize("page", PAGES)
def test_it_masks_personal_data_for_staff_without_the_permission(records, page):
    response = staff_client(*VIEW_ALL).get(admin_url(getattr(records, page)))

    assert response.status_code == 200
    content = response.content.decode()
    assert EMAIL not in content
    assert "Jane Doe" not in content
    assert MASKED_EMAIL in content
    assert MASKED_NOTE in content


@pytest.mark.parametrize("page", PAGES)
def test_it_shows_personal_data_to_staff_with_the_permission(records, page):
    response = staff_client(*VIEW_ALL, "view_personal_data").get(admin_url(getattr(records, page)))

    assert response.status_code == 200
    content = response.content.decode()
    assert EMAIL in content
    assert MASKED_EMAIL not in content
    assert MASKED_NOTE not in content


def test_it_shows_the_whole_conversation_in_order_with_links(records):
    content = staff_client(*VIEW_ALL).get(admin_url(records.conversation)).content.decode()

    # Assistant replies are built from masked input and shown as stored.
    assistant = content.index("A person from our team will reply here shortly.")
    assert content.index("my email is") < assistant < content.index("Hello, I have written to")
    assert f'href="{admin_url(records.turn)}"' in content
    assert f'href="{admin_url(records.referral)}"' in content
    assert "Sent a reply" in content


def test_it_lays_out_the_turn_pipeline(records):
    content = staff_client(*VIEW_ALL).get(admin_url(records.turn)).content.decode()

    assert "<th>bm25</th><th>dense</th>" in content
    assert "<td>refunds</td><td>2024-03</td><td>Refunds › When the money arrives</td><td>0.0325</td>" in content
    assert "<td>#1 (7.1234)</td><td>#2 (0.8123)</td>" in content
    # shipping-times was found by the dense stage only.
    assert "<td>–</td><td>#1 (0.8571)</td>" in content
    assert "<strong>system</strong> policy<br>Refunds over $500 need a manager." in content
    assert "<strong>retrieved</strong> [1] refunds version 2024-03 › Refunds › When the money arrives" in content
    assert "<strong>user</strong> conversation<br>hello there" in content
    assert "<td>ground</td><td>120.0</td>" in content
    assert "[1] Refunds (refunds, version 2024-03) › Refunds › When the money arrives" in content
    assert "claim 0 unsupported: no passage states it" in content
    assert f'href="{admin_url(records.referral)}"' in content
    assert f'href="{admin_url(records.conversation)}"' in content


def test_it_summarises_the_referral_for_whoever_picks_it_up(records):
    content = staff_client(*VIEW_ALL).get(admin_url(records.referral)).content.decode()

    assert "Refunds reach your card in 5 to 10 business days [1]." in content
    assert "1 of 1 claims unsupported" in content
    assert "<strong>Unsupported</strong> (similarity)" in content
    assert f'href="{admin_url(records.turn)}"' in content


class FormFields(HTMLParser):
    """The values a browser would submit from a page's inputs and selects."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, str] = {}
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        name = a.get("name")
        if tag == "input" and name and a.get("type") != "submit":
            self.values[name] = a.get("value") or ""
        elif tag == "select":
            self._select = name
        elif tag == "option" and self._select and "selected" in a:
            self.values[self._select] = a.get("value") or ""


def test_it_keeps_the_referral_status_editable_beside_the_actions_trail(records):
    client = staff_client(*VIEW_ALL, "change_referral")
    page = FormFields()
    page.feed(client.get(admin_url(records.referral)).content.decode())
    assert page.values["actions-INITIAL_FORMS"] == "1"

    response = client.post(admin_url(records.referral), {**page.values, "status": "resolved"})

    assert response.status_code == 302, response.content.decode()[:2000]
    records.referral.refresh_from_db()
    assert records.referral.status == "resolved"
    assert StaffAction.objects.filter(pk=records.action.pk, referral=records.referral).exists()


def test_it_lets_no_one_write_the_staff_action_trail(records):
    admin = User.objects.create_superuser("root")
    client = Client()
    client.force_login(admin)

    changelist = client.get(reverse("admin:conversations_staffaction_changelist")).content.decode()
    assert admin_url(records.action) in changelist
    assert reverse("admin:conversations_staffaction_add") not in changelist
    assert "delete_selected" not in changelist
    assert client.get(reverse("admin:conversations_staffaction_add")).status_code == 403
    assert client.post(admin_url(records.action), {"username": "someone-else", "kind": "resolve"}).status_code == 403
    assert client.post(admin_url(records.action, "delete"), {"post": "yes"}).status_code == 403
    records.action.refresh_from_db()
    assert (records.action.username, records.action.kind) == ("agent", "reply")


def test_it_refuses_deleting_a_conversation_to_staff_who_cannot_read_it(records):
    # The deletion summary would list every message by its raw text.
    url = admin_url(records.conversation, "delete")

    assert staff_client(*VIEW_ALL, "delete_conversation").get(url).status_code == 403
    assert Conversation.objects.filter(pk=records.conversation.pk).exists()


def test_the_conversation_list_and_the_queue_card_say_the_collection_and_the_first_question(records):
    listing = staff_client(*VIEW_ALL).get(reverse("admin:conversations_conversation_changelist")).content.decode()
    assert "helpcentre" in listing and MASKED_EMAIL in listing and EMAIL not in listing
    unmasked = staff_client(*VIEW_ALL, "view_personal_data").get(reverse("admin:conversations_conversation_changelist"))
    assert EMAIL in unmasked.content.decode()
    card = render_card(records.conversation, User.objects.create_user("lee", is_staff=True))
    first = re.search(r'<q data-role="first-question">(.*?)</q>', card)
    assert first is not None and html.unescape(MASKED_EMAIL) in html.unescape(first.group(1)) and EMAIL not in card
    assert '<span data-role="collection">helpcentre</span>' in card
