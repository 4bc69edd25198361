"""The insights app's management commands."""
