"""The site's URLs: the demo page, the help pages, the ingestion API, the staff queue, insights and the admin."""

from django.contrib import admin
from django.urls import include, path

from supportbot import views
from supportbot.login import AdminThrottledAuthenticationForm

# The admin signs in through the same throttle as the staff queue.
admin.site.login_form = AdminThrottledAuthenticationForm

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", views.home, name="home"),
    path("help/", include("knowledge.urls")),
    path("api/v1/", include("knowledge.api_urls")),
    path("staff/", include("conversations.urls")),
    path("staff/", include("insights.urls")),
]
