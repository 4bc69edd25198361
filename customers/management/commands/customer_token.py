"""manage.py customer_token: a token signed as the host site would, to chat as that customer."""

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from customers.models import Customer
from customers.tokens import sign


class Command(BaseCommand):
    help = "Print a token for a customer, signed as the host site would sign it, to try the chat as that customer."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("external_id", help="the customer's id, e.g. c-1001")
        parser.add_argument("--ttl", type=int, default=3600, help="seconds the token stays valid (default 3600)")

    def handle(self, *args: Any, **options: Any) -> None:
        secret = getattr(settings, "CUSTOMER_TOKEN_SECRET", "")
        if not secret:
            raise CommandError(
                "CUSTOMER_TOKEN_SECRET is not set, so no customer token can be made or accepted: set it in the "
                "environment to a random string of at least 32 characters."
            )
        if options["ttl"] < 1:
            raise CommandError("--ttl must be a positive number of seconds.")
        customer = Customer.objects.filter(external_id=options["external_id"]).first()
        if customer is None:
            raise CommandError(f"No customer {options['external_id']!r}; load them first (manage.py load_customers).")
        if customer.erased_at:
            raise CommandError(
                f"Customer {customer.external_id} was erased on {customer.erased_at:%Y-%m-%d}; "
                "their tokens are refused."
            )
        self.stdout.write(sign(customer.external_id, secret=secret, ttl_s=options["ttl"]))
