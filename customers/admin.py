"""Staff screens for customers: who they are, their orders, the facts in force, what the assistant decided
about refunds, and erasing a customer's data.

Customers and orders come from the shop (manage.py load_customers), refund decisions and summaries from the
assistant, so they are read here, not written. A fact changed here is saved as its next version."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import ForeignKey, QuerySet
from django.forms import ModelChoiceField
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.safestring import SafeString

from customers.erasure import erase_customer, erasure_preview
from customers.facts import newest_versions, set_fact
from customers.models import ConversationSummary, Customer, CustomerFact, Order, OrderLine, RefundDecision
from supportbot.admin_helpers import ReadOnly, ReadOnlyInline, admin_link


class Unwritable(ReadOnly):
    """Rows with one writer elsewhere (the loader, the assistant, erasure): staff read them here."""

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class OrderInline(ReadOnlyInline):
    model = Order
    fields = readonly_fields = ("link", "status", "placed_on", "total", "line_count")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Order]:
        return super().get_queryset(request).prefetch_related("lines")

    @admin.display(description="order")
    def link(self, obj: Order) -> SafeString:
        return admin_link(obj)

    @admin.display(description="lines")
    def line_count(self, obj: Order) -> int:
        return len(obj.lines.all())


class FactInline(ReadOnlyInline):
    model = CustomerFact
    verbose_name_plural = "facts in force"
    fields = readonly_fields = ("link", "value", "version", "source", "created_at")

    def get_queryset(self, request: HttpRequest) -> QuerySet[CustomerFact]:
        return newest_versions(super().get_queryset(request))

    @admin.display(description="key")
    def link(self, obj: CustomerFact) -> SafeString:
        return admin_link(obj)


@admin.register(Customer)
class CustomerAdmin(Unwritable, admin.ModelAdmin):
    list_display = ("external_id", "name", "is_member", "erased_at")
    list_filter = ("is_member", ("erased_at", admin.EmptyFieldListFilter))
    search_fields = ("external_id", "name", "email")
    fields = readonly_fields = ("external_id", "name", "email", "is_member", "created_at", "erased_at")
    inlines = [OrderInline, FactInline]
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


class OrderLineInline(ReadOnlyInline):
    model = OrderLine
    fields = readonly_fields = ("product", "quantity", "unit_price", "amount")


class RefundDecisionInline(ReadOnlyInline):
    model = RefundDecision
    fields = readonly_fields = ("decided_at", "amount", "approved", "reason", "requested_via", "conversation")


@admin.register(Order)
class OrderAdmin(Unwritable, admin.ModelAdmin):
    list_display = ("number", "customer", "status", "placed_on", "total")
    list_filter = ("status",)
    search_fields = ("number", "customer__external_id")
    list_select_related = ("customer",)
    fields = readonly_fields = (
        "number",
        "customer",
        "status",
        "placed_on",
        "shipped_on",
        "delivered_on",
        "carrier",
        "tracking_number",
        "total",
    )
    inlines = [OrderLineInline, RefundDecisionInline]


@admin.register(CustomerFact)
class CustomerFactAdmin(admin.ModelAdmin):
    list_display = ("customer", "key", "value", "version", "source", "created_at")
    list_filter = ("key", "source")
    search_fields = ("customer__external_id", "key")
    list_select_related = ("customer",)

    def get_fields(self, request: HttpRequest, obj: CustomerFact | None = None) -> tuple[str, ...]:
        return ("customer", "key", "value", "version", "source", "created_at") if obj else ("customer", "key", "value")

    def get_readonly_fields(self, request: HttpRequest, obj: CustomerFact | None = None) -> tuple[str, ...]:
        # A version stays as it was: a changed value is saved as the key's next version.
        return ("customer", "key", "version", "source", "created_at") if obj else ()

    def formfield_for_foreignkey(
        self, db_field: ForeignKey[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> ModelChoiceField[Any] | None:
        if db_field.name == "customer":
            kwargs["queryset"] = Customer.objects.filter(erased_at__isnull=True)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request: HttpRequest, obj: CustomerFact, form: Any, change: bool) -> None:
        in_force = set_fact(obj.customer, obj.key, obj.value, source="staff")
        # The admin goes on to log the change and link to `obj`: make it the version now in force.
        for field in CustomerFact._meta.concrete_fields:
            setattr(obj, field.attname, getattr(in_force, field.attname))

    def has_delete_permission(self, request: HttpRequest, obj: CustomerFact | None = None) -> bool:
        # A fact's history is kept: a version is never deleted on its own, only with its customer's erasure.
        return False


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
