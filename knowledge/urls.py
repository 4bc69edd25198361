"""The public help pages' URLs: the index and each article."""

from django.urls import path

from knowledge import views

urlpatterns = [
    path("", views.help_index, name="help-index"),
    # Not the slug converter: article ids may contain dots (knowledge.sources), and a citation to such an
    # article must still have a URL.
    path("<str:slug>", views.help_article, name="help-article"),
]
