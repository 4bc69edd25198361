"""The ingestion API's URLs: post or delete an article, register a source, read a sync run."""

from django.urls import path

from knowledge import api

urlpatterns = [
    path("articles", api.post_article, name="api-articles"),
    # Not the slug converter: article ids may contain dots.
    path("articles/<str:slug>", api.delete_article, name="api-article"),
    path("sources", api.post_source, name="api-sources"),
    path("runs/<int:run_id>", api.get_run, name="api-run"),
]
