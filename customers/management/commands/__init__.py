"""The customers app's management commands."""
