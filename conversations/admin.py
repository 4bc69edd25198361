"""Staff screens: the system policy (versioned), and every conversation with what each turn decided and why.

Customers' words (and staff replies, which may echo them) are shown masked to staff without the
conversations.view_personal_data permission."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.options import BaseModelAdmin
from django.contrib.admin.utils import flatten_fieldsets
from django.db.models import Max, Model, Prefetch, QuerySet, Value
from django.http import HttpRequest, HttpResponse
from django.template.defaultfilters import linebreaksbr
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from answering.outcome import Decision
from answering.privacy.masking import PERSONAL_DATA_PERMISSION
from conversations.handoff.availability import for_collection, valid_time_zone
from conversations.models import (
    BusinessHours,
    Claim,
    ClosedDay,
    Conversation,
    ConversationSummary,
    Message,
    OpeningPeriod,
    Referral,
    RefundDecision,
    Role,
    StaffAction,
    StaffPresence,
    SystemPolicy,
    Turn,
    TurnFeedback,
    Verdict,
)
from conversations.records.erasure import erase_customer, erasure_preview
from customers.admin import CustomerAdmin, OrderAdmin, Unwritable
from customers.models import Customer, Order
from supportbot.admin_helpers import ReadOnly, ReadOnlyInline, admin_link, html_list, html_table


def sees_personal_data(request: HttpRequest) -> bool:
    return request.user.has_perm(PERSONAL_DATA_PERMISSION)


def words(message: Message, *, row: Model) -> str:
    """A message's text as the viewer of `row` may see it. Assistant replies are built from masked input,
    so they are shown as stored; customer and staff messages are masked unless the row says otherwise."""
    # A row fetched outside ShowsPersonalData.get_queryset has no flag and is masked.
    return message.words_for(unmasked=getattr(row, "unmasked", False) is True)


class ShowsPersonalData(BaseModelAdmin):
    """An admin (page or inline) whose rows show people's words.

    Django calls display methods with the row alone, and one admin instance serves every request at once,
    so the viewer's permission cannot be kept on the admin: it is annotated onto the rows fetched for the
    request, and `words` reads it from there."""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).annotate(unmasked=Value(sees_personal_data(request)))


class PersonalDataAdmin(ShowsPersonalData, admin.ModelAdmin):
    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # Read by templates/admin/conversations/change_form.html, so staff know the text is not verbatim.
        context = {**(extra_context or {}), "personal_data_masked": not sees_personal_data(request)}
        return super().change_view(request, object_id, form_url, context)


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


class MessageInline(ShowsPersonalData, ReadOnlyInline):
    model = Message
    fields = readonly_fields = ("role", "shown_text", "author", "created_at")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Message]:
        return super().get_queryset(request).select_related("author")

    @admin.display(description="text")
    def shown_text(self, obj: Message) -> str:
        return words(obj, row=obj)


class TurnInline(ReadOnlyInline):
    model = Turn
    fields = readonly_fields = ("link", "decision", "evidence_score", "generator", "created_at")

    @admin.display(description="turn")
    def link(self, obj: Turn) -> SafeString:
        return admin_link(obj)


class ReferralInline(ReadOnlyInline):
    model = Referral
    fields = readonly_fields = ("link", "status", "assignee", "reason", "created_at", "resolved_at")

    @admin.display(description="referral")
    def link(self, obj: Referral) -> SafeString:
        return admin_link(obj)


class ShowsStaffActions(ShowsPersonalData):
    def get_queryset(self, request: HttpRequest) -> QuerySet[StaffAction]:
        return super().get_queryset(request).select_related("message")

    @admin.display(description="message")
    def message_text(self, obj: StaffAction) -> str | None:
        return words(obj.message, row=obj) if obj.message else None


class StaffActionInline(ShowsStaffActions, ReadOnlyInline):
    model = StaffAction
    fields = readonly_fields = ("created_at", "username", "kind", "referral", "message_text")


@admin.register(Conversation)
class ConversationAdmin(ReadOnly, PersonalDataAdmin):
    list_display = ("public_id", "first_question", "collection", "audience", "status", "updated_at")
    list_filter = ("status", "audience", "collection", "from_lab")
    fields = readonly_fields = ("public_id", "collection", "audience", "status", "created_at", "updated_at")
    inlines = [MessageInline, TurnInline, ReferralInline, StaffActionInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Conversation]:
        # The list shows each conversation's collection and first question: fetched with the page, not a
        # query per row.
        asked = Message.objects.filter(role=Role.CUSTOMER).order_by("pk")
        return (
            super()
            .get_queryset(request)
            .select_related("collection")
            .prefetch_related(Prefetch("messages", queryset=asked, to_attr="customer_messages"))
        )

    @admin.display(description="first question")
    def first_question(self, obj: Conversation) -> str:
        asked = getattr(obj, "customer_messages", [])
        text = words(asked[0], row=obj) if asked else ""
        return text if len(text) <= 100 else text[:99] + "…"

    def has_delete_permission(self, request: HttpRequest, obj: Conversation | None = None) -> bool:
        # The deletion summary lists every message by str(), which is its raw text.
        return sees_personal_data(request) and super().has_delete_permission(request, obj)


def _stage_cell(stage: dict[str, Any] | None) -> str:
    return f"#{stage.get('rank')} ({stage.get('score')})" if stage else "–"


def _passage_source(passage: dict[str, Any]) -> str:
    if passage.get("source") != "article":
        return str(passage.get("source", ""))
    return (
        f"[{passage.get('number')}] {passage.get('article')} version {passage.get('version')}"
        f" › {passage.get('heading_path')}"
    )


class ClaimInline(ReadOnlyInline):
    model = Claim
    fields = readonly_fields = ("ordinal", "text", "citations", "verdict", "tier", "score", "reason")


@admin.register(Turn)
class TurnAdmin(ReadOnly, PersonalDataAdmin):
    list_display = ("id", "conversation", "decision", "generator", "evidence_score", "rating", "created_at")
    list_filter = ("decision", "generator", "feedback__rating")
    list_select_related = ("conversation", "feedback")
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "conversation",
                    "referral_link",
                    "customer_words",
                    "rewritten_query",
                    "decision",
                    "generator",
                    "evidence_score",
                    "created_at",
                )
            },
        ),
        ("Retrieval", {"fields": ("candidate_table", "context_passages")}),
        ("Reply", {"fields": ("draft", "reply", "citation_list", "unit_list")}),
        ("Decision", {"fields": ("signals", "reading")}),
        ("Customer feedback", {"fields": ("rating", "feedback_reason", "golden_candidate")}),
        ("Diagnostics", {"fields": ("latency_table", "note_list")}),
    )
    readonly_fields = flatten_fieldsets(fieldsets)
    inlines = [ClaimInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Turn]:
        return super().get_queryset(request).select_related("customer_message", "referral", "feedback")

    def _feedback(self, obj: Turn) -> TurnFeedback | None:
        try:
            return obj.feedback
        except TurnFeedback.DoesNotExist:
            return None

    @admin.display(description="rating")
    def rating(self, obj: Turn) -> str | None:
        feedback = self._feedback(obj)
        return feedback.get_rating_display() if feedback else None

    @admin.display(description="customer's reason")
    def feedback_reason(self, obj: Turn) -> str | None:
        # Stored masked (conversations/chat/feedback.py), so it is shown as stored.
        feedback = self._feedback(obj)
        return (feedback.reason or None) if feedback else None

    @admin.display(description="golden set")
    def golden_candidate(self, obj: Turn) -> SafeString | None:
        """For a down-voted or referred turn, a button to the lab's form that makes it a golden-set candidate
        (linked by URL name: the lab builds on conversations, not the other way round)."""
        feedback = self._feedback(obj)
        referred = obj.decision == Decision.REFERRED or getattr(obj, "referral", None) is not None
        if not referred and not (feedback and feedback.rating == "down"):
            return None
        made = obj.golden_candidates.count()
        return format_html(
            '<a class="button" data-role="make-golden-candidate" href="{}">Make a golden-set candidate</a>{}',
            reverse("admin:lab_goldencandidate_from_turn", args=[obj.pk]),
            f" ({made} made from this turn already)" if made else "",
        )

    @admin.display(description="referral")
    def referral_link(self, obj: Turn) -> SafeString | None:
        referral = getattr(obj, "referral", None)
        return admin_link(referral) if referral else None

    @admin.display(description="customer message")
    def customer_words(self, obj: Turn) -> str:
        return words(obj.customer_message, row=obj)

    @admin.display(description="retrieval candidates")
    def candidate_table(self, obj: Turn) -> SafeString | None:
        if not obj.candidates:
            return None
        # Stages that did not find a chunk leave no entry for it, so the columns are the union, in order.
        stages = list(dict.fromkeys(name for c in obj.candidates for name in c.get("stages", {})))
        return html_table(
            ["rank", "article", "version", "heading path", "fused score", *stages],
            (
                [
                    c.get("rank"),
                    c.get("article"),
                    c.get("version"),
                    c.get("heading_path"),
                    c.get("score"),
                    *(_stage_cell(c.get("stages", {}).get(stage)) for stage in stages),
                ]
                for c in obj.candidates
            ),
        )

    @admin.display(description="context given to the generator")
    def context_passages(self, obj: Turn) -> SafeString | None:
        if not obj.context:
            return None
        return html_list(
            "ol",
            (
                format_html(
                    "<strong>{}</strong> {}<br>{}", p.get("trust"), _passage_source(p), linebreaksbr(p.get("text", ""))
                )
                for p in obj.context
            ),
        )

    @admin.display(description="citations")
    def citation_list(self, obj: Turn) -> SafeString | None:
        if not obj.citations:
            return None
        return html_list(
            "ul",
            (
                format_html(
                    "[{}] {} ({}, version {}) › {}",
                    c.get("number"),
                    c.get("title") or c.get("article"),
                    c.get("article"),
                    c.get("version"),
                    c.get("heading_path"),
                )
                for c in obj.citations
            ),
        )

    @admin.display(description="quoted units")
    def unit_list(self, obj: Turn) -> SafeString | None:
        """The whole units the reply quoted; a suggestion's with the section each came from."""
        if not obj.units:
            return None
        return html_list(
            "ol",
            (
                format_html(
                    "<strong>{}</strong> {}<br>{}",
                    u.get("kind"),
                    u.get("heading_path") or f"passage {u.get('passage')}",
                    linebreaksbr(u.get("text", "")),
                )
                for u in obj.units
            ),
        )

    @admin.display(description="latency (ms)")
    def latency_table(self, obj: Turn) -> SafeString | None:
        if not obj.latency_ms:
            return None
        return html_table(["stage", "ms"], obj.latency_ms.items())

    @admin.display(description="notes")
    def note_list(self, obj: Turn) -> SafeString | None:
        return html_list("ul", obj.notes) if obj.notes else None


@admin.register(Referral)
class ReferralAdmin(PersonalDataAdmin):
    list_display = ("id", "conversation", "status", "reason_code", "assignee", "created_at", "reason")
    list_filter = ("status", "reason_code")
    readonly_fields = (
        "turn",
        "conversation",
        "assignee",
        "reason_code",
        "reason",
        "customer_question",
        "draft",
        "claim_summary",
        "created_at",
    )
    fields = (
        "conversation",
        "turn",
        "status",
        "assignee",
        "reason_code",
        "reason",
        "customer_question",
        "draft",
        "claim_summary",
        "created_at",
        "resolved_at",
    )
    inlines = [StaffActionInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Referral]:
        return super().get_queryset(request).select_related("conversation", "assignee", "turn__customer_message")

    @admin.display(description="customer's question")
    def customer_question(self, obj: Referral) -> str:
        return words(obj.turn.customer_message, row=obj)

    @admin.display(description="draft reply")
    def draft(self, obj: Referral) -> str:
        return obj.turn.draft

    @admin.display(description="claims")
    def claim_summary(self, obj: Referral) -> SafeString | None:
        claims = list(obj.turn.claims.all())
        if not claims:
            return None
        unsupported = sum(claim.verdict == Verdict.UNSUPPORTED for claim in claims)
        return format_html(
            "{} of {} claims unsupported{}",
            unsupported,
            len(claims),
            html_list(
                "ul",
                (
                    format_html("<strong>{}</strong> ({}): {}", claim.get_verdict_display(), claim.tier, claim.text)
                    for claim in claims
                ),
            ),
        )


@admin.register(StaffPresence)
class StaffPresenceAdmin(admin.ModelAdmin):
    """Only the limit is set here: online / away and the socket count are the queue page's (a status set
    by hand would never be dropped when the person leaves, nor hand their conversations on)."""

    list_display = ("user", "status", "open_sockets", "seen_at", "max_conversations", "last_assigned_at")
    list_filter = ("status",)
    list_editable = ("max_conversations",)
    list_select_related = ("user",)
    readonly_fields = ("status", "open_sockets", "seen_at", "last_assigned_at", "updated_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> tuple[str, ...]:
        # The person is chosen when the row is added by hand, never changed afterwards.
        return (*self.readonly_fields, "user") if obj is not None else self.readonly_fields


@admin.register(StaffAction)
class StaffActionAdmin(ReadOnly, ShowsStaffActions, PersonalDataAdmin):
    """The hand-off queue's audit trail: readable here, never written."""

    list_display = ("created_at", "username", "kind", "conversation", "referral")
    list_filter = ("kind",)
    search_fields = ("username",)
    list_select_related = ("conversation", "referral")
    fields = readonly_fields = ("conversation", "referral", "user", "username", "kind", "message_text", "created_at")

    def has_delete_permission(self, request: HttpRequest, obj: StaffAction | None = None) -> bool:
        return False


class RefundDecisionInline(ReadOnlyInline):
    model = RefundDecision
    fields = readonly_fields = ("decided_at", "amount", "approved", "reason", "requested_via", "conversation")


class OrderWithRefundsAdmin(OrderAdmin):
    """The shop's order, with what the assistant decided about refunding it."""

    inlines = [*OrderAdmin.inlines, RefundDecisionInline]


admin.site.unregister(Order)
admin.site.register(Order, OrderWithRefundsAdmin)


@admin.register(RefundDecision)
class RefundDecisionAdmin(Unwritable, admin.ModelAdmin):
    list_display = ("decided_at", "order", "amount", "approved", "requested_via")
    list_filter = ("approved", "requested_via")
    search_fields = ("order__number", "order__customer__external_id")
    list_select_related = ("order",)
    fields = readonly_fields = ("order", "amount", "approved", "reason", "requested_via", "conversation", "decided_at")


@admin.register(ConversationSummary)
class ConversationSummaryAdmin(Unwritable, admin.ModelAdmin):
    list_display = ("customer", "conversation", "updated_at")
    search_fields = ("customer__external_id",)
    list_select_related = ("customer", "conversation")
    fields = readonly_fields = ("customer", "conversation", "text", "updated_at")


class CustomerWithErasureAdmin(CustomerAdmin):
    # Erasing, not deleting: deletion would take the customer's row with it, the tombstone that makes their
    # tokens refused.
    actions = ["erase_selected"]

    def has_erase_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("customers.delete_customer")

    @admin.action(description="Erase selected customers' data", permissions=["erase"])
    def erase_selected(self, request: HttpRequest, queryset: QuerySet[Customer]) -> TemplateResponse | None:
        """Django's "delete selected" for erasure: a page of what would go, then the erasure once confirmed."""
        if request.POST.get("post") == "yes":
            for customer in queryset:
                report = erase_customer(customer)
                self.log_change(request, customer, f"Erased the customer's data, deleting {report}.")
            self.message_user(request, f"Erased the data of {len(queryset)} customer(s).", messages.SUCCESS)
            return None
        previews = [(customer, erasure_preview(customer).counts()) for customer in queryset]
        context = {
            **self.admin_site.each_context(request),
            "title": "Erase these customers' data?",
            "opts": self.opts,
            "kinds": [kind for kind, _ in previews[0][1]],
            "previews": previews,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/customers/erase_confirmation.html", context)


admin.site.unregister(Customer)
admin.site.register(Customer, CustomerWithErasureAdmin)


# --- Business hours: when people answer a collection's hand-offs (conversations/handoff/availability.py) ---------


class BusinessHoursForm(forms.ModelForm):
    class Meta:
        model = BusinessHours
        fields = ("collection", "time_zone")

    def clean_time_zone(self) -> str:
        name = self.cleaned_data["time_zone"].strip()
        if not valid_time_zone(name):
            raise forms.ValidationError(
                f"{name!r} is not a time zone this server knows. Use an IANA name such as Europe/Berlin, "
                "America/New_York or UTC."
            )
        return str(name)


class OpeningPeriodForm(forms.ModelForm):
    class Meta:
        model = OpeningPeriod
        fields = ("weekday", "opens", "closes")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        opens, closes = cleaned.get("opens"), cleaned.get("closes")
        if opens is not None and closes is not None and opens >= closes:
            raise forms.ValidationError(
                f"A period must open before it closes ({opens:%H:%M} is not before {closes:%H:%M}). For hours "
                "past midnight, add one period until 23:59 and another from 00:00 the next day."
            )
        return cleaned


class OpeningPeriodInline(admin.TabularInline):
    model = OpeningPeriod
    form = OpeningPeriodForm
    extra = 0


class ClosedDayInline(admin.TabularInline):
    model = ClosedDay
    extra = 0


@admin.register(BusinessHours)
class BusinessHoursAdmin(admin.ModelAdmin):
    form = BusinessHoursForm
    list_display = ("collection", "time_zone", "now")
    inlines = [OpeningPeriodInline, ClosedDayInline]

    @admin.display(description="a person available now?")
    def now(self, obj: BusinessHours) -> str:
        return for_collection(obj.collection).message
