"""`manage.py ask | policy` as an operator runs them."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from conversations.models import Conversation, SystemPolicy

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.usefixtures("answers_when_relevant")
def test_ask_prints_the_turn_as_json(helpcentre):
    printed = json.loads(run("ask", "how long until my money back shows on my card?", "--json"))
    assert printed["decision"] == "answered"
    assert printed["citations"][0]["article"] == "refunds"
    assert {"article", "heading_path", "version"} <= set(printed["citations"][0])
    assert printed["claims"] and {"text", "verdict", "tier"} <= set(printed["claims"][0])
    assert printed["latency_ms"]["total"] > 0

    # The conversation goes on under its id; the follow-up is rewritten with the earlier question.
    follow_up = json.loads(run("ask", "and for PayPal?", "--conversation", printed["conversation"], "--json"))
    assert follow_up["turn"] != printed["turn"]
    assert Conversation.objects.get(public_id=printed["conversation"]).turns.count() == 2


def test_ask_as_of_a_past_date_answers_from_the_version_then_in_force(helpcentre):
    printed = json.loads(run("ask", "How much does express delivery cost?", "--as-of", "2026-03-10", "--json"))
    assert "$15" in printed["reply"] and {c["version"] for c in printed["citations"]} == {"1"}


def test_ask_refuses_bad_input_with_a_reason(helpcentre):
    with pytest.raises(CommandError, match=r"--as-of: '2026-13-01' is not a date \(use YYYY-MM-DD\)"):
        run("ask", "hello", "--as-of", "2026-13-01")
    with pytest.raises(CommandError, match="empty"):
        run("ask", "   ")
    with pytest.raises(CommandError, match="No conversation"):
        run("ask", "hello", "--conversation", "not-a-uuid")
    with pytest.raises(CommandError, match="No collection 'nope'"):
        run("ask", "hello", "--collection", "nope")


def test_policy_versions_only_change_when_the_text_does(helpcentre, tmp_path: Path):
    policy = tmp_path / "policy.md"
    policy.write_text("Never promise refunds.")
    assert "v1 now in force" in run("policy", str(policy))
    assert "v1 already in force" in run("policy", str(policy))
    policy.write_text("Never promise refunds or discounts.")
    assert "v2 now in force" in run("policy", str(policy))
    assert list(SystemPolicy.objects.values_list("version", flat=True)) == [2, 1]
    policy.write_text("")
    with pytest.raises(CommandError, match="1 to 20000 characters"):
        run("policy", str(policy))
