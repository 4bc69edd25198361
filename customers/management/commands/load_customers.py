"""manage.py load_customers: customers, their orders and facts loaded from a JSON file, all or nothing."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from customers.errors import CustomerDataError
from customers.loading import load_customers


class Command(BaseCommand):
    help = (
        "Load customers, their orders and facts from a JSON file (its shape: customers/loading.py; an example: "
        "customers/sample/customers.json). All of the file is stored, or none of it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="the JSON file")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = load_customers(options["path"])
        except CustomerDataError as exc:
            raise CommandError(f"{exc}. Nothing was loaded.") from None
        self.stdout.write(f"{options['path']}: {report}.")
