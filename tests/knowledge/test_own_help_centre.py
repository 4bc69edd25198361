"""Your own help centre, end to end, as the tutorial says: after `make run` has loaded the demo (the sample help
centre with its policy, decision and fusion, in the collection helpcentre), a folder of plain Markdown and HTML
files without front matter is ingested into a collection of its own, and the chat, told to serve that collection
(CHAT_COLLECTION, as `make run CHAT_COLLECTION=mine` sets it), answers a customer from it through the real
websocket, with the real models and Postgres. The demo is left exactly as it was; the new collection answers
with the shipped default decision and policy, not the demo's."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.core.management import call_command

from answering.decide.abstention import default_model
from answering.question import DEFAULT_POLICY
from conversations.models import AbstentionThreshold, Conversation, SystemPolicy
from conversations.records.turns import answer_model, current_policy
from knowledge import sync
from knowledge.models import Article, ArticleVersion, Chunk, Collection
from supportbot.asgi import application

ORIGIN = (b"origin", b"http://127.0.0.1")
WAIT_S = 120  # the first turn of a run loads the models
# A made-up product the sample shop knows nothing of; no file carries front matter.
KETTLE = {
    "descaling.md": """# Descaling your Brightkettle

Limescale builds up on the heating plate in a hard-water area. Descaling keeps the kettle quiet and fast.

## How often to descale

Descale the Brightkettle every 6 weeks in a hard-water area, and every 3 months in a soft-water area. The descale
light on the base turns orange when it is time.

## How to descale

1. Fill the kettle to the MAX line with equal parts white vinegar and water.
2. Hold the Keep Warm button for 5 seconds: the kettle heats to 80 °C and holds it for 20 minutes.
3. Empty it, then boil fresh water twice and pour it away.
""",
    "wifi-setup.md": """# Connecting the kettle to Wi-Fi

The Brightkettle works with the Brightkettle Home app on iOS 15 and Android 10 or later.

## Pairing

Open the app, tap Add device and hold the power button on the base for 8 seconds until the ring blinks blue. The
kettle joins 2.4 GHz networks only; it cannot see a 5 GHz network.
""",
    "temperature_presets.md": """## Temperature presets

The Brightkettle has four presets on the base: 70 °C for green tea, 80 °C for white tea, 90 °C for coffee and
100 °C for black tea. Press the thermometer button to move from one preset to the next.
""",
    "support/warranty.html": """<!doctype html>
<html lang="en"><head><title>Warranty | Brightkettle Help</title></head>
<body><nav><a href="/">Home</a> › <a href="/support">Support</a></nav>
<main><h1>Warranty and repairs</h1>
<p>Every Brightkettle comes with a 3-year warranty from the date of purchase.</p>
<h2>How to claim</h2>
<p>Email repairs@brightkettle.example with your order number. We send a prepaid label within 2 working days.</p>
</main><footer>© Brightkettle</footer></body></html>
""",
}


def demo_state() -> dict[str, Any]:
    """Everything of the demo's collection that `make run` put there and a user's help centre must not touch."""
    demo = Collection.objects.get(name="helpcentre")
    return {
        "articles": sorted(Article.objects.filter(collection=demo).values_list("slug", "title", "retired_at")),
        "versions": sorted(
            ArticleVersion.objects.filter(article__collection=demo).values_list(
                "article__slug", "version_label", "content_hash", "status", "indexed_at"
            )
        ),
        "chunks": sorted(Chunk.objects.filter(collection=demo).values_list("id", flat=True)),
        "policies": sorted(SystemPolicy.objects.filter(collection=demo).values_list("version", "text")),
        "decisions": sorted(AbstentionThreshold.objects.filter(collection=demo).values_list("pk", "threshold")),
        "fusion": demo.fusion,
    }


@pytest.fixture
def demo_loaded(helpcentre) -> dict[str, Any]:
    """The demo as `make run` leaves it: the sample, its policy, calibrated decision and fitted fusion."""
    base = django_settings.BASE_DIR
    quiet = {"stdout": io.StringIO(), "stderr": io.StringIO()}
    call_command("policy", str(base / "conversations/sample/policy.md"), "--collection", "helpcentre", **quiet)
    call_command(
        "calibrate",
        "--collection",
        "helpcentre",
        "--if-missing",
        "--signals",
        str(base / "conversations/sample/helpcentre_signals.json"),
        **quiet,
    )
    call_command(
        "fit_fusion",
        "--collection",
        "helpcentre",
        "--if-missing",
        "--load",
        str(base / "knowledge/sample/helpcentre_fusion.json"),
        **quiet,
    )
    state = demo_state()
    assert state["policies"] and state["decisions"] and state["fusion"]  # there is something to keep
    return state


@pytest.fixture
def own_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "kettle-help"
    for name, text in KETTLE.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


@pytest.fixture
def chat_serves(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

    def serve(collection: str) -> None:
        settings.CHAT_COLLECTION = collection

    return serve


async def next_frame(socket: WebsocketCommunicator, kind: str) -> dict[str, Any]:
    while True:
        frame = await socket.receive_json_from(timeout=WAIT_S)
        if frame["type"] == kind:
            return frame


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_your_own_folder_answers_in_the_chat_and_the_demo_is_untouched(demo_loaded, own_folder, chat_serves):
    # (a) manage.py ingest PATH --collection mine
    out, err = io.StringIO(), io.StringIO()
    await sync_to_async(call_command)("ingest", str(own_folder), "--collection", "mine", stdout=out, stderr=err)
    assert "mine: documents: 4 new, 0 changed, 0 unchanged, 0 failed, 0 retired" in out.getvalue()
    warnings = [line for line in err.getvalue().splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and warnings[0].startswith(
        "warning: 4 file(s) without front matter were read with defaults: title from the first heading"
    ), err.getvalue()

    @sync_to_async
    def what_mine_answers_with() -> tuple[Any, ...]:
        mine = Collection.objects.get(name="mine")
        slugs = sorted(Article.objects.filter(collection=mine).values_list("slug", "title"))
        stored = (
            SystemPolicy.objects.filter(collection=mine).exists()
            or AbstentionThreshold.objects.filter(collection=mine).exists()
        )
        return slugs, stored, mine.fusion, answer_model(mine) == default_model(), current_policy(mine)

    slugs, stored, fusion, default_decision, policy = await what_mine_answers_with()
    assert slugs == [
        ("descaling", "Descaling your Brightkettle"),
        ("support-warranty", "Warranty and repairs"),
        ("temperature_presets", "Temperature presets"),
        ("wifi-setup", "Connecting the kettle to Wi-Fi"),
    ]
    # A new collection starts from the shipped default decision and policy: none of the demo's.
    assert (stored, fusion, default_decision, policy) == (False, {}, True, DEFAULT_POLICY)

    # (b) make run CHAT_COLLECTION=mine: the chat serves the collection named.
    chat_serves("mine")
    socket = WebsocketCommunicator(application, "/ws/chat/", headers=[ORIGIN])
    connected, _ = await socket.connect()
    assert connected
    await socket.send_json_to({"type": "hello", "token": None, "after": 0})
    assert (await next_frame(socket, "welcome"))["status"] == "open"
    await socket.send_json_to({"type": "message", "id": "q1", "text": "How often should I descale my kettle?"})
    reply = await next_frame(socket, "reply")
    await socket.disconnect()

    # The shipped decision's answer cut is high (0.907): the customer may get the section as a suggestion
    # rather than an answer, but gets the fact and its source either way, never "I don't know".
    assert reply["decision"] in ("answered", "suggested"), reply
    assert "every 6 weeks in a hard-water area" in reply["text"], reply["text"]
    cited = {(c["title"], c["heading_path"], c["url"]) for c in reply["citations"]}
    assert (
        "Descaling your Brightkettle",
        "Descaling your Brightkettle › How often to descale",
        "/help/descaling#how-often-to-descale",
    ) in cited, cited
    asked_of = await Conversation.objects.select_related("collection").aget(messages__client_id="q1")
    assert asked_of.collection.name == "mine"

    # The demo is as `make run` left it: articles, versions, chunks, policy, decision and fusion.
    assert await sync_to_async(demo_state)() == demo_loaded


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_chat_refuses_a_collection_that_does_not_exist(chat_serves):
    chat_serves("mien")
    socket = WebsocketCommunicator(application, "/ws/chat/", headers=[ORIGIN])
    connected, _ = await socket.connect()
    assert connected
    await socket.send_json_to({"type": "hello", "token": None, "after": 0})
    error = await next_frame(socket, "error")
    assert error["code"] == "unavailable"
    assert error["message"] == "The help centre 'mien' has not been loaded yet; chat is unavailable."
    await socket.disconnect()


@pytest.mark.django_db
def test_make_run_says_which_collection_the_chat_serves(settings, tmp_path, capsys, embedder):
    settings.BASE_DIR = tmp_path  # ensure_staff saves the password it makes under var/
    settings.CHAT_COLLECTION = "mien"
    call_command("ensure_staff", "--base-url", "http://127.0.0.1:9000")
    said = capsys.readouterr()
    assert "warning: the chat serves CHAT_COLLECTION='mien', which does not exist (collections: none yet)" in said.err
    assert "manage.py ingest FOLDER --collection mien" in said.err and "Created staff account" in said.out

    sync.collection_named("mien")
    call_command("ensure_staff", "--base-url", "http://127.0.0.1:9000")
    said = capsys.readouterr()
    assert not said.err
    assert said.out.startswith(
        "The chat (http://127.0.0.1:9000/) and the help pages (http://127.0.0.1:9000/help/) serve the collection "
        "'mien': 0 live article(s)."
    )


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_run_passes_chat_collection_on_and_loads_the_demo_into_helpcentre_only(tmp_path):
    """Every command of `make run CHAT_COLLECTION=mine` (its database step left out), run by a stand-in for
    the virtualenv's python that records its arguments and the CHAT_COLLECTION it was given."""
    record = tmp_path / "commands"
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\necho "${{CHAT_COLLECTION-unset}} $*" >> {record}\n')
    python.chmod(0o755)
    root = django_settings.BASE_DIR
    subprocess.run(
        ["make", "-s", "-o", "db", "run", f"PY={python}", "CHAT_COLLECTION=mine", "PORT=8001"],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=60,
    )
    commands = record.read_text().splitlines()
    assert commands[-1] == "mine manage.py runserver 127.0.0.1:8001"  # beside the demo's 8000
    assert all(line.startswith("mine manage.py ") for line in commands)
    loads = [line.split()[2:] for line in commands if "--collection" in line]
    assert [args[0] for args in loads] == ["ingest", "glossary", "policy", "calibrate", "fit_fusion"]
    # Each step of the demo names the demo's collection, and no other.
    assert all(args[args.index("--collection") + 1] == "helpcentre" for args in loads)
    assert all(args.count("--collection") == 1 for args in loads)
    # The demo shop's name and greeting go to the demo's collection, and no other.
    (voice,) = [line.split()[2:] for line in commands if " voice " in line]
    assert voice == ["voice", "helpcentre", "--load", "knowledge/sample/helpcentre_voice.json"]
