"""The conversations app's management commands."""
