"""The customers app's configuration."""

from django.apps import AppConfig


class CustomersConfig(AppConfig):
    name = "customers"
    verbose_name = "Customers"
