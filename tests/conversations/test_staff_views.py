"""The hand-off queue's pages and actions over HTTP: who may use them, CSRF, and clear refusals."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from conversations.models import Conversation, ConversationStatus, Message, Referral, StaffAction, Turn
from knowledge.models import Collection

pytestmark = pytest.mark.django_db


@pytest.fixture
def waiting(helpcentre: Collection) -> Conversation:
    conversation = Conversation.objects.create(collection=helpcentre, status=ConversationStatus.REFERRED)
    question = Message.objects.create(
        conversation=conversation, role="customer", text="Refund to jane.doe@example.com please?"
    )
    turn = Turn.objects.create(conversation=conversation, customer_message=question, draft="Refunds take 2 hours [1].")
    Referral.objects.create(turn=turn, conversation=conversation, reason="unsupported claim")
    return conversation


def staff_client(**flags) -> Client:
    user = get_user_model().objects.create_user("sam", password="x" * 12, is_staff=True, **flags)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def test_the_queue_is_for_staff_only(waiting, client):
    assert client.get("/staff/queue").url.startswith("/staff/login/")
    customer = get_user_model().objects.create_user("pat", password="x" * 12)
    client.force_login(customer)
    assert client.get("/staff/queue").url.startswith("/staff/login/")


def test_the_queue_shows_the_waiting_conversation_with_personal_data_masked(waiting):
    page = staff_client().get("/staff/queue").content.decode()
    assert "Refunds take 2 hours [1]." in page and "unsupported claim" in page
    assert "jane.doe@example.com" not in page and "&lt;EMAIL_ADDRESS_1&gt;" in page
    assert 'name="csrfmiddlewaretoken"' in page


def test_actions_need_a_csrf_token(waiting):
    response = staff_client().post(f"/staff/conversations/{waiting.public_id}/resolve")
    assert response.status_code == 403
    assert not StaffAction.objects.exists()


def test_a_reply_is_refused_with_a_reason_when_it_cannot_be_sent(waiting, helpcentre):
    client = staff_client()
    token = client.get("/staff/queue").cookies["csrftoken"].value
    headers = {"accept": "application/json", "x-csrftoken": token}
    empty = client.post(f"/staff/conversations/{waiting.public_id}/reply", {"text": "  "}, headers=headers)
    assert empty.status_code == 400 and empty.json() == {"error": "empty", "message": "The reply is empty."}
    idle = Conversation.objects.create(collection=helpcentre)
    not_waiting = client.post(f"/staff/conversations/{idle.public_id}/reply", {"text": "Hi"}, headers=headers)
    assert not_waiting.status_code == 400 and "not waiting for a person" in not_waiting.json()["message"]
    assert not Message.objects.filter(role="staff").exists()  # the refused reply left nothing behind

    sent = client.post(f"/staff/conversations/{waiting.public_id}/reply", {"text": "5 to 10 days."}, headers=headers)
    assert sent.status_code == 200 and sent.json()["waiting"] and "5 to 10 days." in sent.json()["html"]
    assert StaffAction.objects.get().kind == "reply"
