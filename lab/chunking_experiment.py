"""The chunking experiment: how each chunking strategy trades retrieval quality against index size.

Each variant gets collections of its own, so the variants never disturb each other or the live help
centre. Two measurement caveats, both by design:
- The golden set credits a chunk by its heading path. Fixed and sentence windows ignore headings and
  carry the path of the section they start in, so a window that starts just before the gold section
  is not credited: the golden figures measure how well a strategy keeps answers inside their section.
- The experiment collections have no glossary, so golden figures sit below those of the live help
  centre; the variants are compared with each other, not with `evaluate answers`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Count, Sum
from django.db.models.functions import Length

from knowledge.chunking import ChunkBounds, Strategy
from knowledge.embeddings import Embedder
from knowledge.errors import IngestFileError
from knowledge.ingest import ingest
from knowledge.models import ArticleVersion, Chunk, Collection
from knowledge.retrieval import RetrievalConfig, default_config
from knowledge.sources import SourceDocument, read_beir_corpus, read_markdown_tree
from knowledge.stages import Stage
from lab.answer_evaluation import TOP_K, GoldenQuestion
from lab.experiments import golden_retrieval
from lab.retrieval_evaluation import evaluate_search, read_queries

HELPCENTRE_PREFIX = "exp-chunk-"
BEIR_PREFIX = "exp-chunk-stackfaq-"
# Collection.name is a slug of at most 100 characters; the longer prefix bounds a variant's name.
_MAX_NAME = 100 - len(BEIR_PREFIX)
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


@dataclass(frozen=True)
class ChunkingVariant:
    name: str
    strategy: Strategy
    bounds: ChunkBounds

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name) or len(self.name) > _MAX_NAME:
            raise ValueError(
                f"variant name {self.name!r} must be lowercase letters, digits and single hyphens, "
                f"at most {_MAX_NAME} characters (it names the variant's collections)"
            )


# The fixed windows keep the default min_tokens: that strategy ignores it, and 40 satisfies 2 × min ≤ max.
VARIANTS: tuple[ChunkingVariant, ...] = (
    ChunkingVariant("fixed-100-overlap-0", "fixed", ChunkBounds(max_tokens=100, overlap_tokens=0)),
    ChunkingVariant("fixed-100-overlap-25", "fixed", ChunkBounds(max_tokens=100, overlap_tokens=25)),
    ChunkingVariant("fixed-200-overlap-50", "fixed", ChunkBounds(max_tokens=200, overlap_tokens=50)),
    ChunkingVariant("fixed-300-overlap-50", "fixed", ChunkBounds(max_tokens=300, overlap_tokens=50)),
    ChunkingVariant("sentence", "sentence", ChunkBounds()),
    ChunkingVariant("heading", "heading", ChunkBounds()),
    ChunkingVariant("heading-semantic", "heading-semantic", ChunkBounds()),
)


@dataclass(frozen=True)
class ChunkingRow:
    variant: str
    corpus: str
    chunks: int
    # Chunk text leaves out headings (they travel in the heading path) and cleaned-away markup, so
    # stored_chars / source_chars is below 1 without overlap; above 1 is the cost of duplicated text.
    stored_chars: int
    source_chars: int
    recall_at_3: float
    mrr: float
    ndcg_at_10: float | None  # BEIR corpora only: the golden set has no graded relevance per document

    def as_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "corpus": self.corpus,
            "chunks": self.chunks,
            "stored_chars": self.stored_chars,
            "source_chars": self.source_chars,
            f"recall@{TOP_K}": self.recall_at_3,
            "mrr": self.mrr,
            "ndcg@10": self.ndcg_at_10,
        }


def _index_size(collection: Collection) -> tuple[int, int, int]:
    """(chunks, characters of chunk text, characters of the indexed versions' bodies) of a collection."""
    chunks = Chunk.objects.filter(version__article__collection=collection).aggregate(
        count=Count("id"), chars=Sum(Length("text"))
    )
    # Retired articles lose their chunks and their indexed_at, so these are exactly the chunked sources.
    sources = ArticleVersion.objects.filter(article__collection=collection, indexed_at__isnull=False).aggregate(
        chars=Sum(Length("body"))
    )
    return chunks["count"], chunks["chars"] or 0, sources["chars"] or 0


def _ingest_variant(
    name: str,
    items: Iterable[SourceDocument | IngestFileError],
    variant: ChunkingVariant,
    *,
    embedder: Embedder,
    secondary: Embedder | None,
    detect_boilerplate: bool,
    progress: Callable[[str], None] | None,
) -> Collection:
    report = ingest(
        name,
        items,
        embedder=embedder,
        secondary=secondary,
        strategy=variant.strategy,
        bounds=variant.bounds,
        # The collection is the experiment's own: it mirrors exactly the corpus being measured.
        retire_missing=True,
        detect_boilerplate=detect_boilerplate,
    )
    if progress is not None:
        progress(f"{name}: {report.summary()}")
    return Collection.objects.get(name=name)


def _row(
    variant: ChunkingVariant, corpus: str, collection: Collection, recall: float, mrr: float, ndcg: float | None
) -> ChunkingRow:
    chunks, stored, source = _index_size(collection)
    return ChunkingRow(variant.name, corpus, chunks, stored, source, recall, mrr, ndcg)


def _retrieval_config(secondary: Embedder | None) -> RetrievalConfig:
    """The product's retrieval settings, less the secondary dense stage when the experiment builds no
    secondary index (search would refuse a collection without one)."""
    config = default_config()
    if secondary is not None:
        return config
    return replace(config, stages=tuple(s for s in config.stages if s != Stage.DENSE_SECONDARY))


def run_chunking_experiment(
    variants: Sequence[ChunkingVariant],
    *,
    golden_questions: Sequence[GoldenQuestion],
    helpcentre_dir: Path,
    stackfaq_dir: Path | None,
    split: str,
    embedder: Embedder,
    secondary: Embedder | None,
    query_limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[ChunkingRow]:
    """One row per variant and corpus: index size and recall@3 / MRR with the product's retrieval settings.

    The help centre is ingested into `exp-chunk-<variant>` and measured on the golden questions; with
    stackfaq_dir, its BEIR corpus is ingested into `exp-chunk-stackfaq-<variant>` and measured on the
    first query_limit queries of the split. Ingestion skips documents whose content and chunking are
    unchanged, so running the experiment again embeds nothing for variants already ingested: only the
    measurements are repeated. `secondary` must be the configured secondary model (search loads that one
    for queries) or None to measure without it. progress receives each ingestion's summary.
    """
    config = _retrieval_config(secondary)
    # Read first, so a missing split fails before any ingestion.
    queries = read_queries(stackfaq_dir, split)[:query_limit] if stackfaq_dir is not None else []
    helpcentre = list(read_markdown_tree(helpcentre_dir, max_bytes=settings.INGEST_MAX_FILE_BYTES))
    rows: list[ChunkingRow] = []
    for variant in variants:
        collection = _ingest_variant(
            HELPCENTRE_PREFIX + variant.name,
            helpcentre,
            variant,
            embedder=embedder,
            secondary=secondary,
            detect_boilerplate=True,
            progress=progress,
        )
        golden = golden_retrieval(golden_questions, collection, config=config, embedder=embedder, setting=variant.name)
        rows.append(_row(variant, "golden", collection, golden.recall_at_3, golden.mrr, None))
        if stackfaq_dir is None:
            continue
        collection = _ingest_variant(
            BEIR_PREFIX + variant.name,
            read_beir_corpus(stackfaq_dir),
            variant,
            embedder=embedder,
            secondary=secondary,
            # As `evaluate retrieval` does: stripping lines repeated across documents is for a help
            # centre's page furniture; in a BEIR corpus such a line is content.
            detect_boilerplate=False,
            progress=progress,
        )
        final = evaluate_search(collection, queries, embedder=embedder, config=config)
        rows.append(
            _row(variant, stackfaq_dir.name, collection, final[f"recall@{TOP_K}"], final["mrr@10"], final["ndcg@10"])
        )
    return rows
