"""Staff presence and the assignment of hand-offs: the staff socket counting a person's open queue pages,
round-robin within each person's limit, reassignment when someone goes away, concurrent referrals never
past a limit, and the reason every hand-off records. Real Postgres, the real ASGI application and channel
layer (in memory, and Redis when REDIS_URL is set)."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import AsyncClient, Client
from django.utils import timezone

from answering.outcome import Decision, HandoffReason, Outcome
from conversations.chat import consumers
from conversations.errors import ChatError
from conversations.handoff import actions, presence
from conversations.handoff.assignment import assign
from conversations.handoff.staff import render_card
from conversations.models import (
    PRESENCE_LAPSES_AFTER_S,
    Conversation,
    ConversationStatus,
    Message,
    Referral,
    Role,
    StaffAction,
    StaffPresence,
    Turn,
)
from conversations.records.recording import record_turn
from knowledge.models import Collection, EmbeddingSpace
from supportbot.asgi import application
from supportbot.stopwatch import Stopwatch
from tests.conversations.test_chat_socket import ORIGIN, channel_layer, next_frame

__all__ = ["channel_layer"]  # the fixture, imported for the socket tests below

User = get_user_model()


@pytest.fixture
def collection(db) -> Collection:
    """A collection without articles: assignment never reads them."""
    space = EmbeddingSpace.objects.create(model_name="none", dimension=4, weights_sha256="0" * 64)
    return Collection.objects.create(name="queue-test", embedding_space=space)


def staff_member(name: str, *, limit: int = 5, online: bool = True) -> Any:
    """A staff member with the queue open (one socket counted), online unless told otherwise."""
    user = User.objects.create_user(name, password="x" * 12, is_staff=True)
    presence.socket_opened(user)
    StaffPresence.objects.filter(user=user).update(max_conversations=limit)
    if online:
        presence.set_status(user, "online")
    return user


def referred(
    collection: Collection, code: str = HandoffReason.NO_KNOWLEDGE, assigned: bool = True, from_lab: bool = False
) -> Conversation:
    """A conversation whose latest turn was referred to a person, assigned as a referral would be."""
    conversation = Conversation.objects.create(
        collection=collection, status=ConversationStatus.REFERRED, from_lab=from_lab
    )
    question = Message.objects.create(conversation=conversation, role=Role.CUSTOMER, text="Where is my sofa?")
    turn = Turn.objects.create(conversation=conversation, customer_message=question, decision=Decision.REFERRED)
    Referral.objects.create(turn=turn, conversation=conversation, reason_code=code, reason="test")
    if assigned:
        assign(conversation)
    conversation.refresh_from_db()
    return conversation


def assignees(conversations: list[Conversation]) -> list[str | None]:
    names = []
    for c in conversations:
        c.refresh_from_db()
        names.append(c.assignee.get_username() if c.assignee else None)
    return names


# --- Assignment ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_it_assigns_round_robin_within_each_persons_limit(collection):
    ana = staff_member("ana", limit=2)
    staff_member("ben", limit=2)
    staff_member("cem", limit=1)
    staff_member("dee", online=False)  # away: never assigned
    User.objects.create_user("eve", password="x" * 12)  # not staff: has no presence, never assigned
    conversations = [referred(collection) for _ in range(6)]
    # Never-assigned people first (by name), then whoever was assigned longest ago; cem's one place is taken.
    assert assignees(conversations) == ["ana", "ben", "cem", "ana", "ben", None]
    assert list(StaffAction.objects.filter(kind="assigned").values_list("username", flat=True).order_by("pk")) == [
        "ana",
        "ben",
        "cem",
        "ana",
        "ben",
    ]
    # Resolving one of ana's frees a place: the waiting one is hers now.
    actions.resolve(conversations[0], ana)
    assert assignees(conversations[5:]) == ["ana"]
    # A conversation already with someone online stays theirs (the customer asks for a person again).
    actions.request_handoff(conversations[1])
    assert assignees(conversations[1:2]) == ["ben"]


@pytest.mark.django_db
def test_a_person_going_away_hands_their_conversations_on_or_leaves_them_unassigned(collection):
    ana, ben = staff_member("ana", limit=3), staff_member("ben", limit=1)
    first, second, third = (referred(collection) for _ in range(3))
    assert assignees([first, second, third]) == ["ana", "ben", "ana"]

    presence.set_status(ana, "away")
    # ben has room for none of them (his one place is taken): both of ana's wait for anyone.
    assert assignees([first, second, third]) == [None, "ben", None]
    actions.resolve(second, ben)
    # ben's freed place takes the longest-waiting of the unassigned.
    assert assignees([first, third]) == ["ben", None]

    presence.set_status(ana, "online")  # coming online picks up what waits
    assert assignees([first, third]) == ["ben", "ana"]
    presence.socket_closed(ben)  # his last queue page closed: away, his conversation goes to ana
    assert StaffPresence.objects.get(user=ben).status == "away"
    assert assignees([first, third]) == ["ana", "ana"]


@pytest.mark.django_db
def test_a_person_whose_sockets_all_fell_silent_is_away_and_their_hand_offs_move_on(collection):
    ana, ben = staff_member("ana"), staff_member("ben")
    first, second = referred(collection), referred(collection)
    assert assignees([first, second]) == ["ana", "ben"]
    # The server process holding ana's two queue pages was killed: they never closed, and stopped beating.
    presence.socket_opened(ana)
    silent_since = timezone.now() - timedelta(seconds=PRESENCE_LAPSES_AFTER_S + 5)
    StaffPresence.objects.filter(user=ana).update(seen_at=silent_since)
    assert assignees([referred(collection)]) == ["ben"]  # nobody has heard from her: not given to her

    presence.heartbeat(ben)  # any live page's beat makes the silent ones away
    row = StaffPresence.objects.get(user=ana)
    assert (row.status, row.open_sockets) == ("away", 0)
    assert assignees([first, second]) == ["ben", "ben"]

    # Her page reconnects to a live process while the dead one's count is still stored: counted from one.
    StaffPresence.objects.filter(user=ana).update(open_sockets=2, seen_at=silent_since)
    assert presence.socket_opened(ana).open_sockets == 1
    presence.socket_closed(ana)
    assert StaffPresence.objects.get(user=ana).open_sockets == 0


@pytest.mark.django_db
def test_the_evaluation_labs_referrals_never_reach_staff(collection):
    staff_member("ana")
    lab = referred(collection, from_lab=True)
    assert assignees([lab]) == [None]
    assert lab not in actions.waiting_conversations()
    customer = referred(collection)
    assert assignees([customer]) == ["ana"] and customer in actions.waiting_conversations()


@pytest.mark.django_db
def test_only_someone_with_the_queue_open_can_be_online(collection):
    ana = staff_member("ana", online=False)
    presence.socket_closed(ana)
    with pytest.raises(ChatError) as refused:
        presence.set_status(ana, "online")
    assert refused.value.code == "queue_not_open"
    presence.socket_closed(ana)  # one close too many (a crash-restart) never counts below zero
    assert StaffPresence.objects.get(user=ana).open_sockets == 0


@pytest.mark.django_db(transaction=True)
def test_concurrent_referrals_never_take_a_person_past_their_limit(collection):
    staff_member("ana", limit=2)
    staff_member("ben", limit=1)
    conversations = [referred(collection, assigned=False) for _ in range(8)]
    start = threading.Barrier(len(conversations))
    errors: list[BaseException] = []

    def refer(conversation: Conversation) -> None:
        try:
            start.wait()
            assign(conversation)
        except BaseException as exc:  # reported by the test, not lost in the thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=refer, args=(c,)) for c in conversations]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    names = assignees(conversations)
    assert sorted(n for n in names if n) == ["ana", "ana", "ben"] and names.count(None) == 5


# --- Reasons --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_turn_that_refers_records_its_reason_code_and_is_assigned(collection):
    staff_member("ana")
    conversation = Conversation.objects.create(collection=collection)
    question = Message.objects.create(conversation=conversation, role=Role.CUSTOMER, text="Refund order 1051")
    outcome = Outcome(decision=Decision.REFERRED, referral_reason="refund refused", referral_code="policy")
    record_turn(conversation, question, outcome, Stopwatch())
    referral = Referral.objects.get(conversation=conversation)
    assert referral.reason_code == HandoffReason.POLICY and referral.get_reason_code_display() == "Policy"
    assert assignees([conversation]) == ["ana"]


@pytest.mark.django_db
def test_taking_over_a_conversation_nobody_referred_records_staff_took_over_and_makes_it_theirs(collection):
    ana, ben = staff_member("ana"), staff_member("ben")
    quiet = Conversation.objects.create(collection=collection)
    with pytest.raises(ChatError) as refused:
        actions.take_over(quiet, ana)
    assert refused.value.code == "nothing_to_take_over"
    question = Message.objects.create(conversation=quiet, role=Role.CUSTOMER, text="Hello?")
    Turn.objects.create(conversation=quiet, customer_message=question, decision=Decision.ANSWERED)
    actions.take_over(quiet, ben)
    assert Referral.objects.get(conversation=quiet).reason_code == HandoffReason.STAFF_TOOK_OVER
    assert assignees([quiet]) == ["ben"]

    # A referred conversation keeps the reason it was referred for; the one who takes it over has it.
    cut = referred(collection, code=HandoffReason.UNSUPPORTED_CLAIM)
    assert assignees([cut]) == ["ana"]
    actions.take_over(cut, ben)
    assert assignees([cut]) == ["ben"]
    assert Referral.objects.get(conversation=cut).reason_code == HandoffReason.UNSUPPORTED_CLAIM


# --- What staff see -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_card_shows_the_reason_and_whom_it_is_assigned_to(collection):
    ana, ben = staff_member("ana"), staff_member("ben")
    conversation = referred(collection, code=HandoffReason.UNSUPPORTED_CLAIM)
    for_ana, for_ben = render_card(conversation, ana), render_card(conversation, ben)
    assert "Unsupported claim cut" in for_ana and 'data-assigned="you"' in for_ana and "Assigned to you" in for_ana
    assert 'data-assigned="other"' in for_ben and "Assigned to ana" in for_ben and "Assigned to you" not in for_ben
    presence.set_status(ana, "away")
    presence.set_status(ben, "away")
    conversation.refresh_from_db()
    assert 'data-assigned="none"' in render_card(conversation, ana)


@pytest.mark.django_db
def test_the_queue_page_shows_the_persons_presence_and_the_admin_sets_the_limit(collection):
    ana = staff_member("ana")
    client = Client()
    client.force_login(ana)
    page = client.get("/staff/queue").content.decode()
    assert 'value="online" data-role="presence-online" disabled checked' in page

    boss = User.objects.create_superuser("boss", password="x" * 12)
    client.force_login(boss)
    row = StaffPresence.objects.get(user=ana)
    response = client.post(f"/admin/conversations/staffpresence/{row.pk}/change/", {"max_conversations": "9"})
    assert response.status_code == 302, response.content.decode()[:2000]
    row.refresh_from_db()
    assert (row.max_conversations, row.status, row.open_sockets) == (9, "online", 1)


# --- Over the staff socket ------------------------------------------------------------------------


async def queue_socket(user: Any, status: str = "away") -> WebsocketCommunicator:
    """A queue page of the user's, once it has said what their presence is (``status``)."""
    client = AsyncClient()
    await client.aforce_login(user)
    cookie = f"{django_settings.SESSION_COOKIE_NAME}={client.cookies[django_settings.SESSION_COOKIE_NAME].value}"
    socket = WebsocketCommunicator(application, "/ws/staff/", headers=[ORIGIN, (b"cookie", cookie.encode())])
    assert (await socket.connect(timeout=30))[0]  # the machine may be busy; a refusal comes at once
    assert await socket.receive_json_from(timeout=30) == {"type": "presence", "status": status}
    return socket


async def sockets_of(user: Any) -> tuple[str, int]:
    row = await StaffPresence.objects.aget(user=user)
    return row.status, row.open_sockets


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_staff_socket_counts_open_pages_and_the_last_one_closing_makes_the_person_away(channel_layer):
    ana = await User.objects.acreate(username="ana", is_staff=True)
    first, second = await queue_socket(ana), await queue_socket(ana)
    assert await sockets_of(ana) == ("away", 2)

    await first.send_json_to({"type": "presence", "status": "online"})
    # Every page of hers shows it, the one that asked included.
    assert await next_frame(first, "presence") == {"type": "presence", "status": "online"}
    assert await next_frame(second, "presence") == {"type": "presence", "status": "online"}
    await first.send_json_to({"type": "presence", "status": "busy"})
    assert (await next_frame(first, "error"))["code"] == "bad_status"

    third = await queue_socket(ana, "online")  # another tab opened while she is online
    await third.disconnect(timeout=30)
    await first.disconnect(timeout=30)
    assert await sockets_of(ana) == ("online", 1)
    await second.disconnect(timeout=30)
    assert await sockets_of(ana) == ("away", 0)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_an_open_staff_socket_keeps_saying_it_is_there(channel_layer, monkeypatch):
    monkeypatch.setattr(consumers, "PRESENCE_HEARTBEAT_S", 0.2)
    ana = await User.objects.acreate(username="ana", is_staff=True)
    page = await queue_socket(ana)
    opened = (await StaffPresence.objects.aget(user=ana)).seen_at
    assert opened is not None
    deadline = time.monotonic() + 20
    while (await StaffPresence.objects.aget(user=ana)).seen_at == opened and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    beat = (await StaffPresence.objects.aget(user=ana)).seen_at
    assert beat is not None and beat > opened
    await page.disconnect(timeout=30)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_when_someones_last_page_closes_their_hand_off_moves_to_someone_online(collection, channel_layer):
    ana = await User.objects.acreate(username="ana", is_staff=True)
    ben = await User.objects.acreate(username="ben", is_staff=True)
    ana_page, ben_page = await queue_socket(ana), await queue_socket(ben)
    for page in (ana_page, ben_page):
        await page.send_json_to({"type": "presence", "status": "online"})
        assert await next_frame(page, "presence") == {"type": "presence", "status": "online"}

    conversation = await sync_to_async(referred)(collection)
    assert conversation.assignee_id == ana.pk
    card = await next_frame(ben_page, "card")
    assert card["conversation"] == str(conversation.public_id) and "Assigned to ana" in card["html"]

    await ana_page.disconnect(timeout=30)
    card = await next_frame(ben_page, "card")
    assert card["waiting"] and "Assigned to you" in card["html"]
    await conversation.arefresh_from_db()
    assert conversation.assignee_id == ben.pk
    assert await sockets_of(ana) == ("away", 0)
    await ben_page.disconnect(timeout=30)
