"""The public help-centre pages: the articles customers are shown, at the version in force today."""

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from knowledge.help import public_version, public_versions, render_article, table_of_contents
from knowledge.models import Collection
from knowledge.voice import Voice


def _help_centre() -> Collection:
    collection = Collection.objects.filter(name=settings.CHAT_COLLECTION).first()
    if collection is None:
        raise Http404(f"The help centre has not been ingested yet (no collection named {settings.CHAT_COLLECTION!r}).")
    return collection


def help_index(request: HttpRequest) -> HttpResponse:
    collection = _help_centre()
    versions = public_versions(collection, timezone.localdate())
    return render(request, "help/index.html", {"versions": versions, "voice": Voice.of(collection)})


def help_article(request: HttpRequest, slug: str) -> HttpResponse:
    collection = _help_centre()
    version = public_version(collection, slug, timezone.localdate())
    if version is None:
        raise Http404(f"There is no public help article called {slug!r}.")
    context = {
        "voice": Voice.of(collection),
        "article": version.article,
        "version": version,
        "body": render_article(version.body, without_title=True),
        # Only the main sections: a table of contents as long as the article helps nobody.
        "sections": [h for h in table_of_contents(version.body) if h.level == 2],
    }
    return render(request, "help/article.html", context)
