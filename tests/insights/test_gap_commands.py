"""manage.py content_gaps: a run printed, and bad input refused with a message naming what is wrong."""

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from insights.models import ContentGapRun
from tests.insights.gap_helpers import GIFT_WRAP, JOBS, SWITZERLAND, asked, gap_helpcentre

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection(tmp_path, embedder):
    return gap_helpcentre(tmp_path / "articles", embedder)


def test_it_prints_the_clusters_of_a_new_run(collection):
    for question in [*SWITZERLAND, *GIFT_WRAP, JOBS]:
        asked(collection, question)
    out = StringIO()

    call_command("content_gaps", "--collection", collection.name, "--since", "3", stdout=out)

    run = ContentGapRun.objects.get()
    lines = out.getvalue().splitlines()
    assert lines[0] == (
        f"run {run.pk}: 6 unanswered questions of the last 3 days on {collection.name} → 3 clusters (threshold 0.4)"
    )
    assert re.fullmatch(
        r"1\. 3 question\(s\), newest \d{4}-\d\d-\d\d \d\d:\d\d · nearest delivery › Delivery › Where we deliver "
        r"\(0\.\d{3}\)",
        lines[1],
    )
    assert {line.strip("- ").strip() for line in lines[2:5]} == set(SWITZERLAND)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--collection", "nowhere"], "No collection 'nowhere' (collections: gaps-helpcentre)."),
        (["--threshold", "1.2"], "The threshold is a cosine similarity between 0 and 1 (exclusive), not 1.2."),
        (["--threshold", "nan"], "between 0 and 1"),
        (["--since", "0"], "--since is a number of days, 1 or more, not 0."),
    ],
)
def test_it_refuses_bad_input(collection, arguments, message):
    arguments = ["--collection", collection.name, *arguments] if arguments[0] != "--collection" else arguments

    with pytest.raises(CommandError) as refused:
        call_command("content_gaps", *arguments, stdout=StringIO())

    assert message in str(refused.value)
    assert not ContentGapRun.objects.exists()
