"""What the insights app refuses, with a message fit to show a person."""


class InsightsError(Exception):
    pass


class GapError(InsightsError):
    """Content gaps cannot be found or drafted as asked (a bad setting, an unindexed collection, no section)."""
