"""Tests of knowledge: sources, cleaning, chunking, ingestion, retrieval and the help pages."""
