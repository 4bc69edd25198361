"""The knowledge app's management commands."""
