"""The content-gap admin: the latest run's gaps for authors, running the clustering, starting a draft from a
gap, and who may do which."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from insights.gaps import run_content_gaps
from insights.models import ContentGap, ContentGapRun
from knowledge.models import ArticleVersion, VersionStatus
from tests.insights.gap_helpers import GIFT_WRAP, JOBS, SWITZERLAND, asked, gap_helpcentre

pytestmark = pytest.mark.django_db

LIST = reverse("admin:insights_contentgap_changelist")
RUN = reverse("admin:insights_contentgap_run")


@pytest.fixture
def collection(tmp_path, embedder):
    return gap_helpcentre(tmp_path / "articles", embedder)


@pytest.fixture
def run(collection, embedder):
    for question in SWITZERLAND:
        asked(collection, question, at=timezone.now() - timedelta(hours=2))
    for question in GIFT_WRAP:
        asked(collection, question)
    asked(collection, JOBS, at=timezone.now() - timedelta(hours=1))
    return run_content_gaps(collection, embedder=embedder)


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def author() -> Client:
    return client_for(User.objects.create_superuser("author"))


def staff_with(*perms: str) -> Client:
    user = User.objects.create_user(f"staff-{User.objects.count()}", is_staff=True)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return client_for(user)


def test_it_lists_the_latest_runs_gaps_newest_first(run, collection, embedder, author):
    older = ContentGapRun.objects.create(collection=collection, questions=1, created_at=timezone.now())
    ContentGap.objects.create(run=older, size=9, examples=["from an older run"], newest_at=timezone.now())
    ContentGapRun.objects.filter(pk=older.pk).update(created_at=timezone.now() - timedelta(days=1))

    page = author.get(LIST).content.decode()

    assert "from an older run" not in page
    positions = [page.index(q) for q in (GIFT_WRAP[0], JOBS, SWITZERLAND[0])]
    assert positions == sorted(positions)  # newest question first
    assert "delivery › Delivery › Where we deliver" in page
    assert page.count('data-role="start-draft"') == 3
    assert 'data-role="find-gaps"' in page


def test_it_starts_a_draft_of_the_nearest_article_from_a_gap(run, author):
    gap = run.gaps.get(size=3)
    url = reverse("admin:insights_contentgap_draft", args=[gap.pk])
    published = ArticleVersion.objects.get(article__slug="delivery", status=VersionStatus.PUBLISHED)

    confirm = author.get(url)
    response = author.post(url)

    assert confirm.status_code == 200 and SWITZERLAND[0] in confirm.content.decode()
    gap.refresh_from_db()
    draft = gap.draft
    assert draft is not None
    assert response.status_code == 302 and response["Location"] == reverse(
        "admin:knowledge_articleversion_change", args=[draft.pk]
    )
    assert (draft.status, draft.supersedes, draft.article) == (VersionStatus.DRAFT, published, published.article)
    assert draft.body.startswith(published.body.rstrip())
    assert all(f"- {q}" in draft.body for q in SWITZERLAND)
    assert f"## {gap.examples[0]}" in draft.body
    # The published version is untouched until the draft goes through review; a second draft is refused.
    assert ArticleVersion.objects.get(pk=published.pk).status == VersionStatus.PUBLISHED
    author.post(url)
    assert ArticleVersion.objects.filter(article=published.article).count() == 2
    assert 'data-role="gap-draft"' in author.get(LIST).content.decode()


def test_it_runs_the_clustering_from_the_admin(collection, author):
    for question in SWITZERLAND:
        asked(collection, question)

    refused = author.post(RUN, {"collection": collection.pk, "since_days": 30, "threshold": 1.5})
    done = author.post(RUN, {"collection": collection.pk, "since_days": 30, "threshold": 0.4})

    assert refused.status_code == 200
    assert "between 0 and 1" in refused.content.decode()
    assert done.status_code == 302
    (new_run,) = ContentGapRun.objects.all()
    assert (new_run.questions, new_run.gaps.get().size) == (3, 3)


def test_it_is_for_staff_only(run):
    gap = run.gaps.first()
    assert gap is not None
    draft_url = reverse("admin:insights_contentgap_draft", args=[gap.pk])
    customer = client_for(User.objects.create_user("customer"))
    viewer = staff_with("insights.view_contentgap")

    for url in (LIST, RUN, draft_url):
        assert Client().get(url).status_code == 302  # to the admin's login page
        assert customer.get(url).status_code == 302
    assert viewer.get(LIST).status_code == 200
    # Seeing gaps is not authoring articles, nor running the clustering.
    assert 'data-role="find-gaps"' not in viewer.get(LIST).content.decode()
    assert viewer.post(draft_url).status_code == 403
    assert viewer.post(RUN, {}).status_code == 403
    assert not ContentGap.objects.filter(draft__isnull=False).exists()
    author = staff_with("insights.view_contentgap", "knowledge.change_articleversion")
    assert author.post(draft_url).status_code == 302
    assert ContentGap.objects.filter(draft__isnull=False).count() == 1
