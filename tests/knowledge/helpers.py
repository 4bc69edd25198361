from pathlib import Path

from knowledge.chunking import ChunkBounds, Strategy
from knowledge.embeddings import Embedder
from knowledge.ingest import IngestReport, ingest
from knowledge.sources import read_markdown_tree


def sync_folder(
    folder: Path,
    embedder: Embedder,
    *,
    strategy: Strategy = "heading-semantic",
    collection: str = "helpcentre",
    secondary: Embedder | None = None,
) -> IngestReport:
    """Sync a collection with a folder of Markdown files, as `manage.py ingest FOLDER` does."""
    return ingest(
        collection,
        read_markdown_tree(folder, max_bytes=1_000_000),
        embedder=embedder,
        secondary=secondary,
        strategy=strategy,
        bounds=ChunkBounds(min_tokens=40, max_tokens=200),
        retire_missing=True,
    )
