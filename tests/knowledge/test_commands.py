"""The knowledge commands: ingest refuses bad arguments; search ranks the right chunk and hides staff articles."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/nonexistent/folder", "--collection", "helpcentre"], "does not exist"),
        (["{sample}", "--collection", "help centre!"], "is not a valid name"),
        (["{sample}", "--collection", "helpcentre", "--min-tokens", "150", "--max-tokens", "200"], "2 × min_tokens"),
        (["{sample}", "--collection", "helpcentre", "--limit", "0"], "--limit must be a positive number"),
        (["{empty}", "--collection", "helpcentre"], "holds no Markdown files"),
    ],
)
def test_ingest_refuses_bad_arguments(sample_dir, tmp_path, args, message):
    (tmp_path / "empty").mkdir()
    args = [a.format(sample=sample_dir, empty=tmp_path / "empty") for a in args]
    with pytest.raises(CommandError, match=message):
        call_command("ingest", *args)


def test_search_finds_the_refund_timing_and_hides_staff_articles(sample_dir, capsys):
    call_command("ingest", str(sample_dir), "--collection", "helpcentre")
    capsys.readouterr()
    call_command("search", "how long until the refund shows on my card", "-k", "3")
    out = capsys.readouterr().out
    ranked = [line for line in out.splitlines() if line[:3].strip().rstrip(".").isdigit()]
    assert "refunds v1 [public, published" in ranked[0] and "Refunds › When the money arrives" in ranked[0], out

    call_command("search", "goodwill credit limit per customer in Ledger", "-k", "20")
    assert "refund-escalation-procedure" not in capsys.readouterr().out
    call_command("search", "goodwill credit limit per customer in Ledger", "-k", "1", "--audience", "staff")
    assert "refund-escalation-procedure v1 [staff, published" in capsys.readouterr().out


def test_search_names_the_existing_collections(sample_dir):
    call_command("ingest", str(sample_dir), "--collection", "helpcentre")
    with pytest.raises(CommandError, match=r"No collection 'nope' \(existing: helpcentre\)"):
        call_command("search", "refund", "--collection", "nope")


def test_ensure_staff_creates_one_account_once(capsys, settings, tmp_path):
    settings.BASE_DIR = tmp_path
    call_command("ensure_staff")
    first = capsys.readouterr().out
    assert "Created staff account" in first
    saved = (tmp_path / "var" / "admin-credentials.txt").read_text()
    password = saved.split("password: ")[1].strip()
    assert password in first
    call_command("ensure_staff", "--base-url", "http://127.0.0.1:9000/")
    again = capsys.readouterr().out
    assert "Created" not in again and "http://127.0.0.1:9000/staff/queue" in again

    from django.contrib.auth import authenticate

    assert authenticate(username="admin", password=password).is_staff
