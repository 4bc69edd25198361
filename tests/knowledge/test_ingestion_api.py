"""The ingestion API over HTTP: a collection's token, an article posted and indexed, a web source posted and
fetched, a run's status read back; every refusal a 4xx naming what is wrong."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from knowledge import sync, tasks
from knowledge.api import issue_token
from knowledge.models import Article, ArticleVersion, IngestionToken, Source, SyncRun, SyncTrigger
from tests.knowledge.test_web import site  # noqa: F401  (a fixture: help-centre pages on loopback)

pytestmark = pytest.mark.django_db

ARTICLE: dict[str, Any] = {
    "id": "delivery-times",
    "title": "Delivery times",
    "version": "1",
    "effective_date": "2026-11-01",
    "audience": "public",
    "body": "# Delivery times\n\nSofas arrive within three weeks of the order, by a two-person team.\n",
}


def token_for(collection: str = "helpcentre") -> str:
    token = IngestionToken(collection=sync.collection_named(collection), name="CMS hook")
    key = issue_token(token)
    token.save()
    return key


def post(path: str, body: object, key: str | None, content_type: str = "application/json") -> Any:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return Client().post(path, data, content_type=content_type, headers=headers)


def test_an_article_posted_with_the_collection_s_token_is_indexed_and_its_run_read_back(embedder):
    key = token_for()
    response = post("/api/v1/articles", ARTICLE, key)
    assert response.status_code == 202, response.json()
    run = response.json()
    assert response["Location"] == f"/api/v1/runs/{run['id']}"
    assert (run["status"], run["documents"]["new"], run["trigger"]) == ("finished", 1, "api")
    version = ArticleVersion.objects.get(article__slug="delivery-times")
    assert version.status == "published" and version.chunks.exists()

    status = Client().get(run["url"], HTTP_AUTHORIZATION=f"Bearer {key}")
    assert status.status_code == 200 and status.json()["chunks_written"] == run["chunks_written"] > 0
    # The same article again: unchanged, nothing embedded. An edit: a new version when its label is new.
    again = post("/api/v1/articles", ARTICLE, key).json()
    assert (again["documents"]["unchanged"], again["embedding_calls"]) == (1, 0)
    edited = post("/api/v1/articles", {**ARTICLE, "version": "2", "body": ARTICLE["body"] + "\nFree.\n"}, key)
    assert edited.json()["documents"]["new"] == 1
    assert Article.objects.get(slug="delivery-times").versions.get(status="published").version_label == "2"
    assert IngestionToken.objects.get().last_used_at is not None


@pytest.mark.parametrize(
    ("body", "status", "field", "message"),
    [
        ({k: v for k, v in ARTICLE.items() if k != "title"}, 400, "title", "required field is missing"),
        ({**ARTICLE, "audience": "everyone"}, 400, "audience", "unknown audience 'everyone'"),
        ({**ARTICLE, "effective_date": "1 Nov"}, 400, "effective_date", "is not a date"),
        ({**ARTICLE, "id": "no spaces please"}, 400, "id", "is not a valid id"),
        ({**ARTICLE, "version": 2}, 400, "version", "must be a string, not int"),
        ({**ARTICLE, "colour": "red"}, 400, "colour", "unknown field"),
        ({**ARTICLE, "body": "  "}, 400, "body", "no body"),
        ({**ARTICLE, "supersedes": "0"}, 400, "supersedes", "which does not exist"),
        ("[1, 2]", 400, None, "must be a JSON object"),
        ("{nope", 400, None, "not valid JSON"),
    ],
)
def test_a_bad_article_is_refused_naming_the_field_and_writes_nothing(embedder, body, status, field, message):
    response = post("/api/v1/articles", body, token_for())
    assert response.status_code == status
    assert response.json().get("field") == field and message in response.json()["error"]
    assert not ArticleVersion.objects.exists()


def test_a_big_article_or_one_not_sent_as_json_is_refused(embedder, settings):
    key = token_for()
    settings.INGEST_MAX_FILE_BYTES = 1_000
    big = post("/api/v1/articles", {**ARTICLE, "body": "word " * 500}, key)
    assert big.status_code == 413 and big.json()["field"] == "body"
    form = post("/api/v1/articles", "id=x", key, content_type="application/x-www-form-urlencoded")
    assert form.status_code == 415 and "send JSON" in form.json()["error"]


def test_no_token_an_unknown_one_or_a_revoked_one_is_refused(embedder):
    key = token_for()
    missing = post("/api/v1/articles", ARTICLE, None)
    assert missing.status_code == 401 and "Authorization: Bearer" in missing.json()["error"]
    assert missing["WWW-Authenticate"].startswith("Bearer")
    assert post("/api/v1/articles", ARTICLE, key + "x").json()["error"] == "unknown token"
    IngestionToken.objects.update(revoked_at=timezone.now())
    revoked = post("/api/v1/articles", ARTICLE, key)
    assert revoked.status_code == 401 and "revoked on" in revoked.json()["error"]
    assert not ArticleVersion.objects.exists()
    # A signed-in staff member's session is no key: the API reads only its token.
    client = Client()
    client.force_login(User.objects.create_superuser("admin"))
    assert client.post("/api/v1/articles", json.dumps(ARTICLE), content_type="application/json").status_code == 401


def test_a_token_sees_only_its_own_collection_s_runs(embedder):
    mine, theirs = token_for("helpcentre"), token_for("other")
    run = post("/api/v1/articles", ARTICLE, theirs).json()
    other = Client().get(run["url"], HTTP_AUTHORIZATION=f"Bearer {mine}")
    assert other.status_code == 404 and "no sync run" in other.json()["error"]
    assert Client().post(run["url"], HTTP_AUTHORIZATION=f"Bearer {theirs}").status_code == 405


def test_a_web_source_posted_is_stored_and_fetched(site, embedder, settings):  # noqa: F811
    key = token_for()
    url = f"{site.base}/sitemap.xml"
    refused = post("/api/v1/sources", {"url": url}, key)
    assert (
        refused.status_code == 400
        and refused.json()["field"] == "url"
        and "private or local" in refused.json()["error"]
    )
    settings.INGEST_API_PRIVATE_HOSTS = ["127.0.0.1"]
    response = post("/api/v1/sources", {"url": url, "audience": "member", "resync_minutes": 60}, key)
    assert response.status_code == 202, response.json()
    run = response.json()
    assert (run["status"], run["documents"]["new"], run["documents"]["failed"]) == ("finished", 3, 0)
    source = Source.objects.get()
    assert (source.location, source.audience, source.resync_minutes, source.kind) == (url, "member", 60, "web")
    assert set(ArticleVersion.objects.values_list("audience", flat=True)) == {"member"}
    assert SyncRun.objects.get().source == source and source.public_only

    # Checked again at each sync: an address accepted once that now leads inside is not fetched.
    settings.INGEST_API_PRIVATE_HOSTS = []
    later = tasks.start_source_run(source, trigger=SyncTrigger.SCHEDULE)
    assert later.status == "failed" and "private or local" in later.errors[0]["message"]


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({}, "url", "required"),
        ({"url": "ftp://example.com/kb"}, "url", "not an http(s) address"),
        ({"url": "http://127.0.0.1:9/x", "audience": "all"}, "audience", "unknown audience"),
        ({"url": "http://127.0.0.1:9/x", "resync_minutes": 0}, "resync_minutes", "at least 1"),
        ({"url": "http://127.0.0.1:9/x", "depth": 2}, "depth", "unknown field"),
        ({"url": "http://10.1.2.3/kb"}, "url", "private or local"),
    ],
)
def test_a_bad_source_is_refused_naming_the_field(embedder, settings, body, field, message):
    settings.INGEST_API_PRIVATE_HOSTS = ["127.0.0.1"]
    response = post("/api/v1/sources", body, token_for())
    assert response.status_code == 400 and response.json()["field"] == field and message in response.json()["error"]
    assert not Source.objects.exists()


def test_an_unreachable_source_is_a_failed_run_with_the_reason(embedder, settings):
    settings.INGEST_API_PRIVATE_HOSTS = ["127.0.0.1"]
    settings.WEB_FETCH_TIMEOUT_S = 2
    run = post("/api/v1/sources", {"url": "http://127.0.0.1:9/sitemap.xml"}, token_for()).json()
    assert run["documents"]["failed"] == 1 and run["errors"][0]["path"] == "http://127.0.0.1:9/sitemap.xml"
    assert "refused" in run["errors"][0]["message"].lower() or "connect" in run["errors"][0]["message"].lower()
    assert not ArticleVersion.objects.exists()


def test_the_admin_gives_a_token_once_and_revokes_it(embedder):
    sync.collection_named("helpcentre")
    client = Client()
    client.force_login(User.objects.create_superuser("admin"))
    add = reverse("admin:knowledge_ingestiontoken_add")
    collection_id = sync.collection_named("helpcentre").pk
    response = client.post(add, {"collection": collection_id, "name": "CMS"}, follow=True)
    shown = next(str(m) for m in response.context["messages"] if "shown this once" in str(m))
    key = shown.rsplit(" ", 1)[-1]
    token = IngestionToken.objects.get()
    assert key.startswith(token.prefix) and token.created_by is not None
    assert token.key_sha256 == hashlib.sha256(key.encode()).hexdigest()  # the hash is kept, never the key
    assert post("/api/v1/articles", ARTICLE, key).status_code == 202
    changelist = reverse("admin:knowledge_ingestiontoken_changelist")
    client.post(changelist, {"action": "revoke", "_selected_action": [token.pk]})
    assert post("/api/v1/articles", ARTICLE, key).status_code == 401


def test_an_article_posted_is_retired_by_its_delete_not_by_another_source_s_sync(embedder, tmp_path, settings):
    key = token_for()
    post("/api/v1/articles", ARTICLE, key)
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "returns.md").write_text(
        "---\nid: returns\ntitle: Returns\nversion: '1'\neffective_date: 2026-01-01\naudience: public\n---\n\n"
        "# Returns\n\nReturn any item within 30 days of delivery for a full refund.\n"
    )
    # A folder that is the whole of its source, synced into the same collection: the API's article is not its.
    run = tasks.start_source_run(
        Source.objects.create(collection=sync.collection_named("helpcentre"), kind="markdown", location=str(folder)),
        trigger=SyncTrigger.ADMIN,
    )
    assert (run.new, run.retired) == (1, 0)
    assert Article.objects.get(slug="delivery-times").retired_at is None

    url = "/api/v1/articles/delivery-times"
    headers = {"Authorization": f"Bearer {key}"}
    gone = Client().delete(url, headers=headers)
    assert gone.status_code == 200 and gone.json()["id"] == "delivery-times"
    article = Article.objects.get(slug="delivery-times")
    assert article.retired_at is not None and not ArticleVersion.objects.filter(article=article, chunks__isnull=False)
    again = Client().delete(url, headers=headers)
    assert again.status_code == 404 and "no article 'delivery-times' in service" in again.json()["error"]
    assert Client().get(url, headers=headers).status_code == 405
    assert Client().delete(url, headers={"Authorization": f"Bearer {token_for('other')}"}).status_code == 404
    # Posted again, it serves again.
    back = post("/api/v1/articles", ARTICLE, key).json()
    assert back["status"] == "finished" and back["chunks_written"] > 0
    assert Article.objects.get(slug="delivery-times").retired_at is None
