"""Tests of the project: settings, security headers, login throttling, deployment, layers and layout."""
