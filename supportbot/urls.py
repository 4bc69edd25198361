from django.contrib import admin
from django.urls import include, path

from supportbot import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", views.home, name="home"),
    path("help/", include("knowledge.urls")),
    path("staff/", include("conversations.urls")),
]
