"""The staff analytics page's URLs: the page and its CSV."""

from django.urls import path

from insights import views

urlpatterns = [
    path("analytics", views.analytics, name="staff-analytics"),
    path("analytics.csv", views.analytics_csv, name="staff-analytics-csv"),
]
