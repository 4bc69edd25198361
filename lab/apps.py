"""The lab app's configuration."""

from django.apps import AppConfig


class LabConfig(AppConfig):
    name = "lab"
    verbose_name = "Evaluation lab"
