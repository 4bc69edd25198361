"""The assistant speaks for the business whose collection it serves: the widget's greeting, the help pages'
title, the page behind the widget and a model's prompt say its name; without one, never the demo shop's."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from answering.evidence.context import assemble_context
from answering.providers.generation import model_messages
from conversations.chat import session
from conversations.models import Conversation
from knowledge.models import Collection, EmbeddingSpace
from knowledge.voice import Voice

pytestmark = pytest.mark.django_db


@pytest.fixture
def mine() -> Collection:
    space = EmbeddingSpace.objects.create(model_name="test-model", dimension=4, weights_sha256="0" * 64)
    return Collection.objects.create(name="mine", embedding_space=space)


def test_the_voice_command_sets_what_the_greeting_title_and_prompt_say(mine, capsys, tmp_path):
    call_command(
        "voice",
        "mine",
        "--business-name",
        " Acme  Analytics ",
        "--helps-with",
        "sites, goals and billing.",
        "--tone",
        "Warm and brief.",
    )
    mine.refresh_from_db()
    voice = Voice.of(mine)
    assert voice.greeting.startswith("Ask us anything about sites, goals and billing. Answers come from the Acme")
    assert voice.help_title == "Acme Analytics help centre"
    assert "mine: Acme Analytics help centre" in capsys.readouterr().out
    context = assemble_context("Be kind.", [], [], budget_tokens=100, count_tokens=lambda t: len(t.split()))
    system, _ = model_messages("hi", context, voice)
    assert system.startswith(
        "You are the customer-support assistant of Acme Analytics, helping customers with sites, goals and billing."
    )
    # The tone comes after the rules, and the policy still governs it.
    assert system.index("Warm and brief.") > system.index("6. Reply in plain sentences") and "online shop" not in system
    # The demo's, as make run loads it.
    call_command("voice", "mine", "--load", "knowledge/sample/helpcentre_voice.json", stdout=io.StringIO())
    mine.refresh_from_db()
    assert (mine.business_name, mine.helps_with) == ("Lumen & Oak", "orders, delivery, returns or refunds")
    bad = tmp_path / "voice.json"
    bad.write_text('{"name": "Acme"}')
    with pytest.raises(CommandError, match="expected an object with text fields"):
        call_command("voice", "mine", "--load", str(bad))
    with pytest.raises(CommandError, match="No collection 'nope'"):
        call_command("voice", "nope")
    with pytest.raises(CommandError, match="at most 200"):
        call_command("voice", "mine", "--business-name", "x" * 201)


def test_without_a_voice_nothing_speaks_as_the_demo_shop(mine, client, settings):
    context = assemble_context("Be kind.", [], [], budget_tokens=100, count_tokens=lambda t: len(t.split()))
    system, _ = model_messages("hi", context, Voice.of(mine))
    assert system.startswith("You are a customer-support assistant. These rules") and "shop" not in system
    greeting = session.welcome_frame(Conversation(collection=mine), 0)["greeting"]
    assert greeting.startswith("Ask us anything. Answers come from our help centre") and "orders" not in greeting
    settings.CHAT_COLLECTION = "mine"
    page = client.get("/").content.decode()
    assert "Lumen" not in page and "Oak" not in page and '<h1 id="hero-title">Help centre</h1>' in page
    mine.business_name = "Acme"
    mine.save()
    page = client.get("/").content.decode()
    assert "<title>Acme · help</title>" in page and "Acme help centre" in page
    assert "<title>Acme help centre</title>" in client.get("/help/").content.decode()


def test_the_demo_page_stays_the_demo_shops(client, settings):
    settings.CHAT_COLLECTION = "helpcentre"
    assert "Lumen &amp; Oak" in client.get("/").content.decode()
