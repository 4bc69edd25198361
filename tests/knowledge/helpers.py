"""Helpers for the knowledge tests: a folder of articles synced into a collection as ingestion would."""

from pathlib import Path
from typing import Literal

from knowledge.chunking import Strategy
from knowledge.embeddings import Embedder, secondary_embedder
from knowledge.ingest import IngestReport, configured_chunking, ingest
from knowledge.sources import read_markdown_tree


def sync_folder(
    folder: Path,
    embedder: Embedder,
    *,
    strategy: Strategy | None = None,
    collection: str = "helpcentre",
    secondary: Embedder | Literal["configured"] | None = "configured",
) -> IngestReport:
    """Sync a collection with a folder of Markdown files, as `manage.py ingest FOLDER` does (with the
    configured chunking and secondary model unless told otherwise)."""
    configured, bounds = configured_chunking()
    return ingest(
        collection,
        read_markdown_tree(folder, max_bytes=1_000_000),
        embedder=embedder,
        secondary=secondary_embedder() if secondary == "configured" else secondary,
        strategy=strategy or configured,
        bounds=bounds,
        retire_missing=True,
    )
