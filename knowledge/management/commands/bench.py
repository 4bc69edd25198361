import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from knowledge.benchmarking import replicate_collection, time_retrieval
from knowledge.embeddings import Embedder, default_embedder, secondary_embedder
from knowledge.evaluation import read_queries
from knowledge.ingest import configured_chunking, ingest
from knowledge.models import Collection
from knowledge.rerank import default_reranker
from knowledge.retrieval import default_config
from knowledge.sources import SourceDocument, read_beir_corpus

CEILING_SAMPLE = 256


def _model_ceiling(embedder: Embedder, docs: list[SourceDocument]) -> float:
    """Tokens per second of the bare model on whole documents, the most the pipeline could reach."""
    texts = [doc.body for doc in docs[:CEILING_SAMPLE]]
    embedder.encode(texts[:8])  # warm-up: thread pools, first allocations
    tokens_before = embedder.tokens_embedded
    started = time.perf_counter()
    embedder.encode(texts)
    return (embedder.tokens_embedded - tokens_before) / (time.perf_counter() - started)


class Command(BaseCommand):
    help = (
        "Benchmarks. `bench ingest`: index a BEIR corpus from scratch, then re-sync it, and print the figures. "
        "`bench retrieval`: replicate an indexed collection to a large size and time each retrieval stage."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("what", choices=["ingest", "retrieval"])
        parser.add_argument("--dataset", type=Path, default=None, help="BEIR folder (default: shared scifact)")
        parser.add_argument("--limit", type=int, default=None, help="Only the first N documents (queries)")
        parser.add_argument("--source", default="bench-scifact", help="retrieval: the indexed collection to copy")
        parser.add_argument("--copies", type=int, default=8, help="retrieval: copies of the source collection")
        parser.add_argument("--rebuild", action="store_true", help="retrieval: copy again even if the copy exists")
        parser.add_argument("--strategy", default=settings.CHUNK_STRATEGY)
        parser.add_argument("--json", type=Path, default=None, help="Also write the figures here as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        dataset: Path = options["dataset"] or settings.SHARED_DATA_DIR / "scifact"
        if not (dataset / "corpus.jsonl").exists():
            raise CommandError(f"No corpus.jsonl in {dataset}; pass --dataset or set SHARED_DATA_DIR.")
        if options["limit"] is not None and options["limit"] < 1:
            raise CommandError("--limit must be a positive number.")
        figures = (
            self._retrieval(dataset, options) if options["what"] == "retrieval" else self._ingest(dataset, options)
        )
        if options["json"]:
            options["json"].write_text(json.dumps(figures, indent=2))

    def _retrieval(self, dataset: Path, options: dict[str, Any]) -> dict[str, Any]:
        if not 1 <= options["copies"] <= 1000:
            raise CommandError("--copies must be between 1 and 1000.")
        try:
            source = Collection.objects.select_related("embedding_space", "secondary_space").get(name=options["source"])
        except Collection.DoesNotExist:
            raise CommandError(
                f"No collection {options['source']!r}: index one first (`bench ingest` makes bench-scifact)."
            ) from None
        queries = [q.text for q in read_queries(dataset, "test")][: options["limit"] or 100]
        started = time.perf_counter()
        name = f"{source.name}-x{options['copies']}"
        target = Collection.objects.filter(name=name, chunk_count=source.chunk_count * options["copies"]).first()
        if target is None or options["rebuild"]:
            target = replicate_collection(source, copies=options["copies"], name=name)
            self.stderr.write(f"{name}: {target.chunk_count} chunks, built in {time.perf_counter() - started:.0f} s")
        config = default_config()
        stages = time_retrieval(
            target, queries, config=config, embedder=default_embedder(), reranker=default_reranker()
        )
        retrieval_p50 = stages["retrieval_total"]["p50_ms"]
        rerank_p50 = stages[f"rerank_{config.rerank_candidates}"]["p50_ms"]
        figures = {
            "collection": target.name,
            "chunks": target.chunk_count,
            "queries": len(queries),
            "stages": stages,
            "retrieval_p50_vs_30ms": round(retrieval_p50 / 30, 2),
            f"rerank_{config.rerank_candidates}_p50_vs_250ms": round(rerank_p50 / 250, 2),
        }
        self.stdout.write(
            f"{target.name}: {target.chunk_count} chunks · {len(queries)} queries · stages {','.join(config.stages)}"
        )
        for name, values in stages.items():
            self.stdout.write(f"{name:>28}: p50 {values['p50_ms']:>8.1f} ms   p95 {values['p95_ms']:>8.1f} ms")
        self.stdout.write(f"retrieval p50 / 30 ms target: {figures['retrieval_p50_vs_30ms']}")
        self.stdout.write(
            f"rerank of {config.rerank_candidates} p50 / 250 ms target: "
            f"{figures[f'rerank_{config.rerank_candidates}_p50_vs_250ms']}"
        )
        return figures

    def _ingest(self, dataset: Path, options: dict[str, Any]) -> dict[str, Any]:
        items = list(read_beir_corpus(dataset))[: options["limit"]]
        docs = [d for d in items if isinstance(d, SourceDocument)]
        name = f"bench-{dataset.name}"
        embedder = default_embedder()
        _, bounds = configured_chunking()

        ceiling = _model_ceiling(embedder, docs)
        Collection.objects.filter(name=name).delete()

        def run() -> Any:
            return ingest(
                name,
                items,
                embedder=embedder,
                secondary=secondary_embedder(),
                strategy=options["strategy"],
                bounds=bounds,
                retire_missing=False,
                detect_boilerplate=False,
            )

        cold = run()
        warm = run()
        tokens_per_s = cold.tokens_embedded / cold.seconds
        figures = {
            "dataset": str(dataset),
            "strategy": options["strategy"],
            "documents": len(docs),
            "failed": cold.failed,
            "chunks": cold.chunks,
            "seconds": round(cold.seconds, 1),
            "chunks_per_s": round(cold.chunks / cold.seconds, 1),
            "documents_per_s": round(len(docs) / cold.seconds, 1),
            "embedding_calls": cold.embedding_calls,
            "texts_embedded": cold.texts_embedded,
            "tokens_embedded": cold.tokens_embedded,
            "tokens_per_s": round(tokens_per_s),
            "model_ceiling_tokens_per_s": round(ceiling),
            "ratio_to_ceiling": round(tokens_per_s / ceiling, 2),
            "resync_seconds": round(warm.seconds, 2),
            "resync_embedding_calls": warm.embedding_calls,
        }
        for key, value in figures.items():
            self.stdout.write(f"{key:>28}: {value}")
        return figures
