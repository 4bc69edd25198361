"""Fixtures for the customers tests: the demo shop's sample customers loaded."""

import pytest

from customers.loading import LoadReport, load_customers
from tests.customers.helpers import SAMPLE_CUSTOMERS


@pytest.fixture
def shop(db) -> LoadReport:
    """The demo shop's sample customers, loaded into a fresh test database."""
    return load_customers(SAMPLE_CUSTOMERS)
