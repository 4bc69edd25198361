"""The staff hand-off queue: a live list of conversations waiting for a person, and what staff do to them.

Every action is a POST with CSRF protection; it works without JavaScript (redirect back to the queue) and,
from the queue's script, answers JSON with the card to show.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import user_passes_test
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from conversations.errors import ChatError
from conversations.handoff import actions, staff
from conversations.models import Conversation

staff_required = user_passes_test(lambda user: user.is_active and user.is_staff, login_url="staff-login")


@require_GET
@staff_required
def queue(request: HttpRequest) -> HttpResponse:
    cards = [staff.render_card(c, request.user, request) for c in actions.waiting_conversations()]
    return render(request, "staff/queue.html", {"cards": cards, "presence": staff.presence_status(request.user)})


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def _action(perform: Callable[[Conversation, Any, HttpRequest], object]) -> Callable[..., HttpResponse]:
    @require_POST
    @staff_required
    def view(request: HttpRequest, public_id: str) -> HttpResponse:
        conversation = get_object_or_404(Conversation, public_id=public_id)
        try:
            perform(conversation, request.user, request)
        except ChatError as exc:
            if _wants_json(request):
                return JsonResponse({"error": exc.code, "message": str(exc)}, status=400)
            cards = [staff.render_card(c, request.user, request) for c in actions.waiting_conversations()]
            context = {"cards": cards, "presence": staff.presence_status(request.user), "error": str(exc)}
            return render(request, "staff/queue.html", context, status=400)
        if _wants_json(request):
            return JsonResponse(staff.card_frame(str(conversation.public_id), request.user))
        return redirect("staff-queue")

    return view


reply = _action(
    lambda conversation, user, request: actions.send_staff_reply(conversation, user, request.POST.get("text", ""))
)
take_over = _action(lambda conversation, user, request: actions.take_over(conversation, user))
resolve = _action(lambda conversation, user, request: actions.resolve(conversation, user))
hand_back = _action(lambda conversation, user, request: actions.hand_back(conversation, user))
