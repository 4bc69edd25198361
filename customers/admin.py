"""Staff screens for customers: who they are, their orders, the facts in force. Erasing a
customer's data is an action the conversations app's admin adds, since it erases their conversations too.

Customers and orders come from the shop (manage.py load_customers), so they are read here, not written. A
fact changed here is saved as its next version. What the assistant decided about refunds is shown on the
order by the conversations app's admin, which extends this one."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import ForeignKey, QuerySet
from django.forms import ModelChoiceField
from django.http import HttpRequest
from django.utils.safestring import SafeString

from customers.facts import newest_versions, set_fact
from customers.models import Customer, CustomerFact, Order, OrderLine
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


class OrderLineInline(ReadOnlyInline):
    model = OrderLine
    fields = readonly_fields = ("product", "quantity", "unit_price", "amount")


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
    inlines = [OrderLineInline]


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
