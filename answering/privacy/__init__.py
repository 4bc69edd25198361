"""Personal data found and masked before text leaves for a model provider, a log or a search."""
