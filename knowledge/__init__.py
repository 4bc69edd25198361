"""The help centre: articles from their sources, cleaned, chunked, embedded and indexed, and the retrieval that
finds their passages."""
