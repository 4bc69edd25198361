"""Tests that drive the widget, the staff queue and the insights pages in a real Chromium."""
