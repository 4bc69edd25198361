"""What the shop knows about its verified customers: their orders and keyed facts, as loaded from its own
systems. None of it is ever indexed with other customers' data: each turn builds a small corpus from the
verified customer's own rows. What happens in conversations (their summaries, refund decisions) is kept by
the conversations app, which depends on this one and never the other way round."""

from decimal import Decimal

from django.db import models


class Customer(models.Model):
    """A customer of the business, known by the id the host site signs into its widget token."""

    external_id = models.CharField(max_length=64, unique=True, help_text="The id the host site signs.")
    name = models.CharField(max_length=200, blank=True)
    email = models.EmailField(blank=True)
    is_member = models.BooleanField(default=False, help_text="Member articles are visible to members.")
    created_at = models.DateTimeField(auto_now_add=True)
    # Set by erasure: the row stays as a tombstone so a token for this customer is refused afterwards.
    erased_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["external_id"]

    def __str__(self) -> str:
        return f"{self.external_id} (erased)" if self.erased_at else f"{self.external_id}: {self.name}"


class OrderStatus(models.TextChoices):
    PLACED = "placed", "Placed"
    PACKED = "packed", "Packed"
    SHIPPED = "shipped", "Shipped"
    DELIVERED = "delivered", "Delivered"
    CANCELLED = "cancelled", "Cancelled"


class Order(models.Model):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="orders")
    number = models.CharField(max_length=32, unique=True)
    status = models.CharField(max_length=10, choices=OrderStatus.choices)
    placed_on = models.DateField()
    shipped_on = models.DateField(null=True, blank=True)
    delivered_on = models.DateField(null=True, blank=True)
    carrier = models.CharField(max_length=100, blank=True)
    tracking_number = models.CharField(max_length=100, blank=True)
    total = models.DecimalField(max_digits=10, decimal_places=2)

    class Meta:
        ordering = ["customer", "-placed_on", "number"]

    def __str__(self) -> str:
        return f"order #{self.number}"


class OrderLine(models.Model):
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="lines")
    product = models.CharField(max_length=200)
    quantity = models.PositiveIntegerField(default=1)
    unit_price = models.DecimalField(max_digits=10, decimal_places=2)

    class Meta:
        ordering = ["order", "id"]

    def __str__(self) -> str:
        return f"{self.quantity} × {self.product}"

    @property
    def amount(self) -> Decimal:
        return self.unit_price * self.quantity


class CustomerFact(models.Model):
    """A keyed fact about a customer ("preferred_name", "language", "contact_channel"): looked up by key,
    never ranked. Changing a value adds a version; the newest version is in force."""

    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="facts")
    key = models.SlugField(max_length=64)
    value = models.CharField(max_length=500)
    source = models.CharField(max_length=100, help_text='Where it came from: "customer", "staff", "import".')
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["customer", "key", "version"], name="unique_fact_version")]
        ordering = ["customer", "key", "-version"]

    def __str__(self) -> str:
        return f"{self.customer.external_id}.{self.key} v{self.version}"
