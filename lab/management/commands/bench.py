"""manage.py bench: ingestion, retrieval, worker and scale benchmarks that print their figures."""

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from knowledge.dense import DenseIndex
from knowledge.embeddings import Embedder, default_embedder, embed_query, secondary_embedder
from knowledge.ingest import chunk_embedding_text, configured_chunking, ingest
from knowledge.models import Chunk, Collection
from knowledge.rerank import default_reranker
from knowledge.retrieval import default_config
from knowledge.scope import Scope
from knowledge.sources import SourceDocument, read_beir_corpus, read_markdown_tree
from lab import scale_benchmark as scale
from lab.benchmarking import replicate_collection, time_retrieval
from lab.retrieval_evaluation import read_queries
from lab.worker_benchmark import require_workers_configured, time_workers


def _models_seconds(embedders: list[Embedder], texts: list[str]) -> float:
    """Seconds the bare embedding models take for texts, with no pipeline around them: the least any
    ingestion of those texts could spend on this machine. The models are loaded already."""
    seconds = 0.0
    for embedder in embedders:
        started = time.perf_counter()
        embedder.encode(texts)
        seconds += time.perf_counter() - started
    return seconds


def _indexed_texts(collection_name: str) -> list[str]:
    """What ingestion embedded for a collection: each chunk's text as the models read it."""
    chunks = Chunk.objects.filter(version__article__collection__name=collection_name).select_related("version__article")
    return [chunk_embedding_text(c) for c in chunks]


class Command(BaseCommand):
    help = (
        "Benchmarks. `bench ingest`: index a BEIR corpus or a folder of Markdown articles from scratch, then "
        "re-sync it, and print the figures against what the embedding models alone take. "
        "`bench retrieval`: replicate an indexed collection to a large size and time each retrieval stage. "
        "`bench workers`: documents per minute through the Celery ingestion workers at 1, 2, … processes. "
        "`bench scale`: a synthetic collection of --chunks chunks (real text and vectors from --source as far as "
        "it goes, stand-in vectors beyond), its build time and disk, and dense search latency and recall@10 "
        "against an exact scan, with and without the audience filter, and in a small collection beside it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("what", choices=["ingest", "retrieval", "workers", "scale"])
        parser.add_argument(
            "--dataset",
            type=Path,
            default=None,
            help="BEIR folder (default: shared scifact); ingest also takes a folder of Markdown articles",
        )
        parser.add_argument("--limit", type=int, default=None, help="Only the first N documents (queries)")
        parser.add_argument("--source", default="bench-scifact", help="retrieval: the indexed collection to copy")
        parser.add_argument("--copies", type=int, default=8, help="retrieval: copies of the source collection")
        parser.add_argument(
            "--rebuild", action="store_true", help="retrieval, scale: build the copy again even if it exists"
        )
        parser.add_argument("--strategy", default=settings.CHUNK_STRATEGY)
        parser.add_argument(
            "--processes", type=int, nargs="+", default=[1, 2], help="workers: worker process counts to time"
        )
        parser.add_argument("--chunks", type=int, default=100_000, help="scale: chunks in the synthetic collection")
        parser.add_argument("--small", type=int, default=2_000, help="scale: chunks in the small collection beside it")
        parser.add_argument(
            "--columns",
            choices=["both", "embedding"],
            default="both",
            help="scale: build both vector columns' graphs, or only the first model's (halves a 1 M build)",
        )
        parser.add_argument(
            "--ef-search", type=int, nargs="+", default=[40, 100, 200], help="scale: HNSW search breadths to time"
        )
        parser.add_argument(
            "--without-postings",
            action="store_true",
            help="scale: load the large collection without BM25 postings (superuser; dense search only, faster)",
        )
        parser.add_argument(
            "--compare-shared",
            action="store_true",
            help="scale: also time the small collection with one graph shared by every collection (the old layout)",
        )
        parser.add_argument("--json", type=Path, default=None, help="Also write the figures here as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        dataset: Path = options["dataset"] or settings.SHARED_DATA_DIR / "scifact"
        markdown = options["what"] == "ingest" and dataset.is_dir() and any(dataset.rglob("*.md"))
        if not (dataset / "corpus.jsonl").exists() and not markdown:
            raise CommandError(
                f"No corpus.jsonl in {dataset}"
                + (" and no Markdown files" if options["what"] == "ingest" else "")
                + "; pass --dataset or set SHARED_DATA_DIR."
            )
        if options["limit"] is not None and options["limit"] < 1:
            raise CommandError("--limit must be a positive number.")
        if options["what"] == "workers":
            figures = self._workers(dataset, options)
        elif options["what"] == "scale":
            figures = self._scale(dataset, options)
        elif options["what"] == "retrieval":
            figures = self._retrieval(dataset, options)
        else:
            figures = self._ingest(dataset, options)
        if options["json"]:
            options["json"].write_text(json.dumps(figures, indent=2))

    def _retrieval(self, dataset: Path, options: dict[str, Any]) -> dict[str, Any]:
        if not 1 <= options["copies"] <= 1000:
            raise CommandError("--copies must be between 1 and 1000.")
        source = _source(options["source"])
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

    def _scale(self, dataset: Path, options: dict[str, Any]) -> dict[str, Any]:
        if not 1_000 <= options["chunks"] <= 10_000_000:
            raise CommandError("--chunks must be between 1000 and 10000000.")
        if not 100 <= options["small"] <= options["chunks"]:
            raise CommandError("--small must be at least 100 and at most --chunks.")
        if any(not 1 <= ef <= 1000 for ef in options["ef_search"]):
            raise CommandError("--ef-search values must be between 1 and 1000.")
        source = _source(options["source"])
        columns: tuple[DenseIndex, ...] = (
            ("embedding", "secondary_embedding") if options["columns"] == "both" else ("embedding",)
        )
        try:
            sample = scale.read_sample(source, columns)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        big_name, small_name = f"scale-{options['chunks']}", f"scale-small-{options['small']}"
        big = Collection.objects.filter(name=big_name, chunk_count=options["chunks"]).first()
        built: dict[str, Any] = {}
        for name, size in ((big_name, options["chunks"]), (small_name, options["small"])):
            if name == big_name and big is not None and not options["rebuild"]:
                continue
            with tqdm(total=size, unit="chunk", desc=name, disable=not sys.stderr.isatty()) as bar:
                _, build = scale.build(
                    name,
                    size,
                    source=source,
                    sample=sample,
                    postings=not (options["without_postings"] and name == big_name),
                    progress=_progress(bar),
                )
            built[name] = vars(build)
            self.stdout.write(
                f"{name}: {size} chunks ({build.real_chunks} with real vectors), loaded in {build.load_seconds:.0f} s, "
                f"graphs built in {build.index_seconds} s; disk MB {build.sizes_mb}"
            )
        big = Collection.objects.get(name=big_name)
        small = Collection.objects.get(name=small_name)
        embedder = default_embedder()
        texts = [q.text for q in read_queries(dataset, "test")][: options["limit"] or 100]
        vectors = np.stack([embed_query(big, text, embedder) for text in texts])
        results: dict[str, Any] = {"chunks": big.chunk_count, "small_chunks": small.chunk_count, "built": built}
        for collection, label in ((big, "large"), (small, "small")):
            for audience in ("public", "staff"):
                scope = Scope(collection.pk, audience)
                started = time.perf_counter()
                exact = {i: scale.exact_neighbours(scope, v, 10) for i, v in enumerate(vectors)}
                exact_ms = (time.perf_counter() - started) * 1000 / len(vectors)
                for ef in options["ef_search"]:
                    figures = scale.time_dense(collection, vectors, audience=audience, ef_search=ef, exact=exact)
                    key = f"{label} {audience} ef_search={ef}"
                    results[key] = {**figures, "exact_scan_ms": round(exact_ms, 1)}
                    self.stdout.write(
                        f"{key:>32}: p50 {figures['p50_ms']:>6.1f} ms  p95 {figures['p95_ms']:>6.1f} ms  "
                        f"recall@10 {figures['recall@10']:.3f} (with ties {figures['recall@10_ties']:.3f})  "
                        f"(exact scan {exact_ms:.0f} ms)"
                    )
        if options["compare_shared"]:
            with scale.shared_graph((big.pk, small.pk)) as seconds:
                self.stdout.write(f"one shared graph over every chunk built in {seconds:.0f} s")
                for ef in options["ef_search"]:
                    figures = scale.time_dense(small, vectors, audience="public", ef_search=ef)
                    results[f"small public ef_search={ef}, shared graph"] = figures
                    self.stdout.write(
                        f"small public ef_search={ef}, shared graph: p50 {figures['p50_ms']:.1f} ms  "
                        f"p95 {figures['p95_ms']:.1f} ms"
                    )
        if columns == ("embedding", "secondary_embedding") and not options["without_postings"]:
            config = default_config()
            stages = time_retrieval(big, texts, config=config, embedder=embedder, reranker=default_reranker())
            results["search_without_rerank"] = stages["retrieval_total"]
            results["search_stages"] = stages
            for name, values in stages.items():
                self.stdout.write(f"{name:>28}: p50 {values['p50_ms']:>8.1f} ms   p95 {values['p95_ms']:>8.1f} ms")
        return results

    def _ingest(self, dataset: Path, options: dict[str, Any]) -> dict[str, Any]:
        if (dataset / "corpus.jsonl").exists():
            source = read_beir_corpus(dataset)
        else:
            source = read_markdown_tree(dataset, max_bytes=settings.INGEST_MAX_FILE_BYTES)
        items = list(source)[: options["limit"]]
        docs = [d for d in items if isinstance(d, SourceDocument)]
        # A partial corpus gets its own collection, so it never replaces the whole one `bench retrieval` copies.
        name = f"bench-{dataset.name}" + (f"-{options['limit']}" if options["limit"] else "")
        embedder = default_embedder()
        _, bounds = configured_chunking()

        Collection.objects.filter(name=name).delete()
        secondary = secondary_embedder()

        def run() -> Any:
            return ingest(
                name,
                items,
                embedder=embedder,
                secondary=secondary,
                strategy=options["strategy"],
                bounds=bounds,
                retire_missing=False,
                detect_boilerplate=False,
            )

        models = [embedder] if secondary is None else [embedder, secondary]
        for model in models:
            model.encode(["Loading a model is paid once per process, not per corpus."])
        cold = run()
        warm = run()
        models_seconds = _models_seconds(models, _indexed_texts(name))
        figures = {
            "dataset": str(dataset),
            "strategy": options["strategy"],
            "models": [m.model_name for m in models],
            "documents": len(docs),
            "failed": cold.failed,
            "chunks": cold.chunks,
            "seconds": round(cold.seconds, 1),
            "chunks_per_s": round(cold.chunks / cold.seconds, 1),
            "documents_per_s": round(len(docs) / cold.seconds, 1),
            "embedding_calls": cold.embedding_calls,
            "tokens_embedded": cold.tokens_embedded,
            "models_alone_seconds": round(models_seconds, 1),
            "ratio_to_models_alone": round(cold.seconds / models_seconds, 2),
            "resync_seconds": round(warm.seconds, 2),
            "resync_embedding_calls": warm.embedding_calls,
        }
        for key, value in figures.items():
            self.stdout.write(f"{key:>28}: {value}")
        return figures

    def _workers(self, dataset: Path, options: dict[str, Any]) -> dict[str, Any]:
        try:
            require_workers_configured()
        except RuntimeError as exc:
            raise CommandError(str(exc)) from None
        if any(n < 1 for n in options["processes"]):
            raise CommandError("--processes must be positive numbers.")
        if (dataset / "corpus.jsonl").exists():
            source = read_beir_corpus(dataset)
        else:
            source = read_markdown_tree(dataset, max_bytes=settings.INGEST_MAX_FILE_BYTES)
        docs = [d for d in source if isinstance(d, SourceDocument)][: options["limit"] or 200]
        log = settings.BASE_DIR / "var" / "bench-workers.log"
        log.parent.mkdir(exist_ok=True)
        trials = []
        for processes in options["processes"]:
            trial = time_workers(docs, processes, log=log)
            trials.append(trial)
            self.stdout.write(
                f"{processes} process(es): {trial.documents} documents, {trial.chunks} chunks in {trial.seconds:.1f} s "
                f"= {trial.documents_per_minute:.0f} documents/min ({trial.failed} failed)"
            )
        base = trials[0].documents_per_minute
        for trial in trials[1:]:
            self.stdout.write(
                f"{trial.processes} vs {trials[0].processes} process(es): ×{trial.documents_per_minute / base:.2f}"
            )
        return {
            "dataset": str(dataset),
            "cores": os.cpu_count(),
            "trials": [
                {**vars(t), "seconds": round(t.seconds, 1), "documents_per_minute": round(t.documents_per_minute, 1)}
                for t in trials
            ],
        }


def _progress(bar: tqdm) -> Callable[[int, int], None]:
    return lambda done, total: bar.update(done - bar.n)


def _source(name: str) -> Collection:
    """The indexed collection a benchmark copies or samples."""
    try:
        return Collection.objects.select_related("embedding_space", "secondary_space").get(name=name)
    except Collection.DoesNotExist:
        raise CommandError(f"No collection {name!r}: index one first (`bench ingest` makes bench-scifact).") from None
