from django.urls import path

from knowledge import api

urlpatterns = [
    path("articles", api.post_article, name="api-articles"),
    path("sources", api.post_source, name="api-sources"),
    path("runs/<int:run_id>", api.get_run, name="api-run"),
]
