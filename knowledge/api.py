"""The ingestion API: a CMS or a script sends articles or source addresses to one collection with that
collection's token; a sync run says how it went. Every refusal is JSON naming the field that is wrong.

    POST /api/v1/articles   {"id", "title", "version", "effective_date", "audience", "body", ...}
    POST /api/v1/sources    {"url", "audience"?, "resync_minutes"?}
    DELETE /api/v1/articles/<id>
    GET  /api/v1/runs/<id>
"""

from __future__ import annotations

import hashlib
import json
import secrets
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from knowledge import tasks
from knowledge.errors import IngestFileError, KnowledgeError
from knowledge.ingest import API_SOURCE_PREFIX, refresh_term_statistics, retire_articles
from knowledge.models import Article, IngestionToken, Source, SourceKind, SyncRun, SyncTrigger
from knowledge.sources import AUDIENCES, OPTIONAL_FIELDS, REQUIRED_FIELDS, SourceRead, document_from_fields
from knowledge.sync import require_public_host

KEY_PREFIX = "sbk_"


def issue_token(token: IngestionToken) -> str:
    """Give an unsaved token its key; returns the key, which is stored only as its hash."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    token.key_sha256 = hashlib.sha256(key.encode()).hexdigest()
    token.prefix = key[:12]
    return key


class ApiError(Exception):
    def __init__(self, status: int, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.field = status, message, field

    def response(self) -> JsonResponse:
        body: dict[str, Any] = {"error": self.message}
        if self.field is not None:
            body["field"] = self.field
        response = JsonResponse(body, status=self.status)
        if self.status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="supportbot ingestion"'
        return response


def _token(request: HttpRequest) -> IngestionToken:
    header = request.headers.get("Authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise ApiError(401, "send the collection's token as 'Authorization: Bearer <token>'")
    digest = hashlib.sha256(key.strip().encode()).hexdigest()
    token = IngestionToken.objects.select_related("collection").filter(key_sha256=digest).first()
    if token is None:
        raise ApiError(401, "unknown token")
    if token.revoked_at is not None:
        raise ApiError(401, f"this token was revoked on {token.revoked_at:%Y-%m-%d %H:%M} UTC; ask staff for a new one")
    IngestionToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token


def _json_object(request: HttpRequest) -> dict[str, Any]:
    if request.content_type != "application/json":
        raise ApiError(415, f"send JSON (Content-Type: application/json), not {request.content_type or 'nothing'}")
    try:
        raw = request.body
    except RequestDataTooBig:
        raise ApiError(413, f"the request is over {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes") from None
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"the body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ApiError(400, "the body must be a JSON object")
    return data


def run_json(run: SyncRun) -> dict[str, Any]:
    return {
        "id": run.pk,
        "url": f"/api/v1/runs/{run.pk}",
        "collection": run.collection.name,
        "trigger": run.trigger,
        "description": run.description,
        "status": run.status,
        "articles": run.articles,
        "articles_done": run.articles_done,
        "documents": {
            "new": run.new,
            "changed": run.changed,
            "unchanged": run.unchanged,
            "failed": run.failed,
            "retired": run.retired,
        },
        "chunks_written": run.chunks,
        "embedding_calls": run.embedding_calls,
        "errors": run.errors,
        "warnings": run.warnings,
        "created_at": run.created_at.isoformat(),
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }


def _accepted(run: SyncRun) -> JsonResponse:
    response = JsonResponse(run_json(run), status=202)
    response["Location"] = f"/api/v1/runs/{run.pk}"
    return response


def _api(view: Any) -> Any:
    def wrapped(request: HttpRequest, **kwargs: Any) -> JsonResponse:
        try:
            return view(request, _token(request), **kwargs)
        except ApiError as exc:
            return exc.response()

    wrapped.__name__ = view.__name__
    wrapped.__doc__ = view.__doc__
    return csrf_exempt(wrapped)


@require_POST
@_api
def post_article(request: HttpRequest, token: IngestionToken) -> JsonResponse:
    """One article version; it becomes the published one unless a newer version of the article is."""
    data = _json_object(request)
    allowed = (*REQUIRED_FIELDS, *OPTIONAL_FIELDS, "body")
    for name in data:
        if name not in allowed:
            raise ApiError(400, f"unknown field (allowed: {', '.join(allowed)})", field=name)
    for name in (*REQUIRED_FIELDS, "body"):
        if name not in data:
            raise ApiError(400, "required field is missing", field=name)
    for name, value in data.items():
        if not (isinstance(value, str) or (value is None and name == "supersedes")):
            raise ApiError(400, f"must be a string, not {type(value).__name__}", field=name)
    fields = {name: value for name, value in data.items() if name != "body"}
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False).encode()
    if len(canonical) > settings.INGEST_MAX_FILE_BYTES:
        raise ApiError(413, f"the article is over the limit of {settings.INGEST_MAX_FILE_BYTES:,} bytes", field="body")
    try:
        document = document_from_fields(
            f"{API_SOURCE_PREFIX}{data['id']}", fields, data["body"], content_hash=hashlib.sha256(canonical).hexdigest()
        )
    except IngestFileError as exc:
        raise ApiError(400, exc.message, field=exc.field) from None
    run = tasks.start_documents_run(
        token.collection.name,
        SourceRead([document], lists_every_page=False),
        trigger=SyncTrigger.API,
        description=f"article {document.slug} version {document.version_label} ({token.name})",
        retire_missing=False,
    )
    if run.errors:
        # Found while planning (a `supersedes` naming no version): nothing was written.
        error = run.errors[0]
        return JsonResponse({"error": error["message"], "field": error["field"], "run": run_json(run)}, status=400)
    return _accepted(run)


@require_POST
@_api
def post_source(request: HttpRequest, token: IngestionToken) -> JsonResponse:
    """A web page or sitemap to sync now, and again every `resync_minutes` if given."""
    data = _json_object(request)
    for name in data:
        if name not in ("url", "audience", "resync_minutes"):
            raise ApiError(400, "unknown field (allowed: url, audience, resync_minutes)", field=name)
    url = data.get("url")
    if not isinstance(url, str) or not url.strip():
        raise ApiError(400, "required: the page or sitemap address", field="url")
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ApiError(400, "not an http(s) address", field="url")
    if len(url) > 2000:
        raise ApiError(400, "over 2,000 characters", field="url")
    try:
        require_public_host(url)
    except KnowledgeError as exc:
        raise ApiError(400, str(exc), field="url") from None
    audience = data.get("audience", "public")
    if audience not in AUDIENCES:
        raise ApiError(
            400, f"unknown audience {audience!r} (expected one of: {', '.join(AUDIENCES)})", field="audience"
        )
    minutes = data.get("resync_minutes")
    if minutes is not None and (isinstance(minutes, bool) or not isinstance(minutes, int) or minutes < 1):
        raise ApiError(400, "a whole number of minutes, at least 1, or null for never", field="resync_minutes")
    source, _ = Source.objects.update_or_create(
        collection=token.collection,
        location=url,
        defaults={"kind": SourceKind.WEB, "audience": audience, "resync_minutes": minutes, "public_only": True},
    )
    return _accepted(tasks.start_source_run(source, trigger=SyncTrigger.API))


@require_http_methods(["DELETE"])
@_api
def delete_article(request: HttpRequest, token: IngestionToken, slug: str) -> JsonResponse:
    """Retire an article: it stops serving at once; its versions stay as history, and posting it again
    brings it back."""
    article = Article.objects.filter(collection=token.collection, slug=slug, retired_at__isnull=True).first()
    if article is None:
        raise ApiError(404, f"no article {slug!r} in service in collection {token.collection.name}")
    retire_articles(token.collection, [article])
    refresh_term_statistics(token.collection)
    article.refresh_from_db()
    assert article.retired_at is not None
    return JsonResponse({"id": article.slug, "retired_at": article.retired_at.isoformat()})


@require_GET
@_api
def get_run(request: HttpRequest, token: IngestionToken, run_id: int) -> JsonResponse:
    run = SyncRun.objects.select_related("collection").filter(pk=run_id, collection=token.collection).first()
    if run is None:
        raise ApiError(404, f"no sync run {run_id} in collection {token.collection.name}")
    return JsonResponse(run_json(run))
