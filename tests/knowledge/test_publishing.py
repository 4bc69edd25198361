"""Publishing: draft, review and publish supersede a version and re-index it; the admin is staff only."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth import get_user_model
from django.urls import reverse

from knowledge import publishing
from knowledge.models import Article, ArticleVersion, Chunk, EmbeddingSpace, VersionStatus
from tests.knowledge.helpers import sync_folder

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client):
    user = get_user_model().objects.create_superuser("editor", "", "a-long-password-123")
    client.force_login(user)
    return client


def current(slug: str) -> ArticleVersion:
    return ArticleVersion.objects.get(article__slug=slug, status=VersionStatus.PUBLISHED)


def test_draft_review_publish_supersedes_and_reindexes(helpcentre, embedder):
    old = current("warranty")
    draft = publishing.new_draft_from(old)
    assert (draft.status, draft.version_label, draft.supersedes) == (VersionStatus.DRAFT, "2", old)
    assert not draft.chunks.exists()

    draft.body = draft.body.replace("2 years", "5 years")
    draft.save()
    with pytest.raises(publishing.WorkflowError, match="Only versions in review can be published"):
        publishing.publish(draft, embedder=embedder)
    publishing.submit_for_review(draft)
    written = publishing.publish(draft, embedder=embedder)

    old.refresh_from_db()
    assert old.status == VersionStatus.SUPERSEDED
    assert current("warranty").pk == draft.pk and written == draft.chunks.count() > 0
    assert any("5 years" in c.text for c in draft.chunks.all())


def test_the_admin_pages_render_for_staff(helpcentre, staff_client):
    version = current("refunds")
    for url in (
        reverse("admin:knowledge_collection_changelist"),
        reverse("admin:knowledge_collection_change", args=[helpcentre.pk]),
        reverse("admin:knowledge_article_changelist"),
        reverse("admin:knowledge_article_change", args=[version.article.pk]),
        reverse("admin:knowledge_articleversion_changelist"),
        reverse("admin:knowledge_articleversion_change", args=[version.pk]),
        reverse("admin:knowledge_embeddingspace_changelist"),
    ):
        response = staff_client.get(url)
        assert response.status_code == 200, url
    page = staff_client.get(reverse("admin:knowledge_articleversion_change", args=[version.pk])).content.decode()
    assert "Refunds › When the money arrives" in page  # the chunks, with heading paths
    listing = staff_client.get(reverse("admin:knowledge_collection_changelist")).content.decode()
    assert str(Chunk.objects.count()) in listing and "all-MiniLM-L6-v2" in listing


def test_the_admin_is_staff_only(helpcentre, client):
    response = client.get(reverse("admin:knowledge_articleversion_changelist"))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_admin_actions_run_the_workflow(helpcentre, staff_client):
    url = reverse("admin:knowledge_articleversion_changelist")
    old = current("gift-cards")
    staff_client.post(url, {"action": "new_draft", ACTION_CHECKBOX_NAME: [old.pk]})
    draft = ArticleVersion.objects.get(article=old.article, status=VersionStatus.DRAFT)
    assert draft.author.username == "editor"

    response = staff_client.post(url, {"action": "publish", ACTION_CHECKBOX_NAME: [draft.pk]}, follow=True)
    assert "Only versions in review can be published" in response.content.decode()
    staff_client.post(url, {"action": "send_for_review", ACTION_CHECKBOX_NAME: [draft.pk]})
    staff_client.post(url, {"action": "publish", ACTION_CHECKBOX_NAME: [draft.pk]})
    assert current("gift-cards").pk == draft.pk
    assert draft.chunks.exists()


def test_published_text_is_read_only_in_the_admin(helpcentre, staff_client):
    version = current("refunds")
    response = staff_client.post(
        reverse("admin:knowledge_articleversion_change", args=[version.pk]),
        {
            "body": "Refunds are never possible.",
            "audience": "member",
            "effective_date": "2026-02-01",
            "chunks-TOTAL_FORMS": 0,
            "chunks-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 302
    version.refresh_from_db()
    assert version.audience == "member"  # audience is editable
    assert "Refunds are never possible" not in version.body  # the published text is not


def test_collections_cannot_be_added_by_hand(helpcentre, staff_client):
    assert staff_client.get(reverse("admin:knowledge_collection_add")).status_code == 403
    assert EmbeddingSpace.objects.count() == 2  # the collection's own model and its secondary one
    assert Article.objects.filter(collection=helpcentre).count() == 14


def test_an_unpublished_draft_does_not_retire_the_source_version(helpcentre, embedder, sample_dir):
    old = current("warranty")
    publishing.new_draft_from(old)
    path = sample_dir / "warranty.md"
    path.write_text(path.read_text().replace("2 years", "4 years"))
    sync_folder(sample_dir, embedder)
    assert current("warranty").pk == old.pk
    assert any("4 years" in c.text for c in old.chunks.all())
