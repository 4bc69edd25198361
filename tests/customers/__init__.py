"""Tests of customers: loading, tokens, facts, erasure and the admin."""
