"""The staff queue's URLs: signing in and out, the queue page, and the actions on one conversation."""

from django.contrib.auth import views as auth_views
from django.urls import path

from conversations import views
from supportbot.login import ThrottledLogin

urlpatterns = [
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="staff/login.html", authentication_form=ThrottledLogin),
        name="staff-login",
    ),
    path("logout/", auth_views.LogoutView.as_view(next_page="staff-login"), name="staff-logout"),
    path("queue", views.queue, name="staff-queue"),
    path("conversations/<uuid:public_id>/reply", views.reply, name="staff-reply"),
    path("conversations/<uuid:public_id>/take-over", views.take_over, name="staff-take-over"),
    path("conversations/<uuid:public_id>/resolve", views.resolve, name="staff-resolve"),
    path("conversations/<uuid:public_id>/hand-back", views.hand_back, name="staff-hand-back"),
]
