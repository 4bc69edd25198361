"""manage.py erase_customer: a customer's conversations, facts, orders and refund decisions erased."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from conversations.records.erasure import erase_customer, erasure_preview
from customers.models import Customer


class Command(BaseCommand):
    help = (
        "Erase a customer's data: conversations, facts, summaries, orders and refund decisions are deleted and "
        "the customer is kept blanked, marked erased, so their tokens are refused. Without --yes, only says "
        "what would be deleted."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("external_id", help="the customer's id, e.g. c-1001")
        parser.add_argument("--yes", action="store_true", help="erase for real")

    def handle(self, *args: Any, **options: Any) -> None:
        customer = Customer.objects.filter(external_id=options["external_id"]).first()
        if customer is None:
            raise CommandError(f"No customer {options['external_id']!r}.")
        if not options["yes"]:
            self.stdout.write(f"Erasing {customer} would delete:")
            self._write_counts(erasure_preview(customer).counts())
            raise CommandError(f"Nothing was erased: add --yes to erase {customer.external_id}'s data.")
        report = erase_customer(customer)
        self.stdout.write(f"Erased the data of customer {customer.external_id}, deleting:")
        self._write_counts(report.counts())

    def _write_counts(self, counts: list[tuple[str, int]]) -> None:
        for kind, count in counts:
            self.stdout.write(f"  {kind}: {count}")
