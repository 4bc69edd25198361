"""Staff screens: the system policy (versioned), and every conversation with what each turn decided and why."""

from typing import Any

from django.contrib import admin
from django.db.models import Max, QuerySet
from django.http import HttpRequest

from conversations.models import Claim, Conversation, Message, Referral, SystemPolicy, Turn


@admin.register(SystemPolicy)
class SystemPolicyAdmin(admin.ModelAdmin):
    list_display = ("collection", "version", "created_by", "created_at")
    list_filter = ("collection",)
    fields = ("collection", "text")

    def get_readonly_fields(self, request: HttpRequest, obj: SystemPolicy | None = None) -> tuple[str, ...]:
        # A version once in force stays as it was; editing saves the text as the next version.
        return ("collection",) if obj else ()

    def save_model(self, request: HttpRequest, obj: SystemPolicy, form: Any, change: bool) -> None:
        latest = SystemPolicy.objects.filter(collection=obj.collection).aggregate(v=Max("version"))["v"] or 0
        obj.pk = None
        obj._state.adding = True
        obj.version = latest + 1
        obj.created_by = request.user  # type: ignore[assignment]
        super().save_model(request, obj, form, False)

    def has_delete_permission(self, request: HttpRequest, obj: SystemPolicy | None = None) -> bool:
        return False


class MessageInline(admin.TabularInline):
    model = Message
    fields = ("role", "text", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False


class ReadOnly:
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Conversation)
class ConversationAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("public_id", "collection", "audience", "status", "updated_at")
    list_filter = ("status", "audience", "collection")
    inlines = [MessageInline]


class ClaimInline(admin.TabularInline):
    model = Claim
    fields = ("ordinal", "text", "citations", "verdict", "tier", "score", "reason")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Turn)
class TurnAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("id", "conversation", "decision", "generator", "evidence_score", "created_at")
    list_filter = ("decision", "generator")
    readonly_fields = (
        "conversation",
        "customer_message",
        "rewritten_query",
        "candidates",
        "context",
        "generator",
        "draft",
        "reply",
        "decision",
        "evidence_score",
        "latency_ms",
        "notes",
    )
    exclude = ("reply_message",)
    inlines = [ClaimInline]


@admin.register(Referral)
class ReferralAdmin(admin.ModelAdmin):
    list_display = ("id", "conversation", "status", "created_at", "reason")
    list_filter = ("status",)
    readonly_fields = ("turn", "conversation", "reason", "created_at")
    fields = ("turn", "conversation", "reason", "status", "created_at", "resolved_at")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Referral]:
        return super().get_queryset(request).select_related("conversation")
