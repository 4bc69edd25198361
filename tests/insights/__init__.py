"""Tests of insights: the outcome analytics and the content gaps."""
