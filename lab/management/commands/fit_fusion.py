"""manage.py fit_fusion: a collection's fusion weights and rerank blend fitted on its labelled questions."""

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from knowledge.embeddings import default_embedder
from knowledge.errors import KnowledgeError
from knowledge.models import Chunk, Collection
from knowledge.rerank import default_reranker
from knowledge.retrieval import default_config
from knowledge.stages import SEARCH_STAGES
from lab import fusion_fitting
from lab.calibration import read_calibration_set
from lab.errors import CalibrationError
from lab.retrieval_evaluation import Query, read_queries


class Command(BaseCommand):
    help = (
        "Fit the collection's fusion (stage weights and rerank blend) on its own labelled questions: every "
        "weighting of BM25 and the two dense models in tenths, fuzzy 0 or 0.1, blends 0 to 1, scored by "
        "nDCG@10 of the reranked ranking. The best replaces the default only when it beats it by "
        f"{fusion_fitting.MIN_GAIN} and ranks significantly more questions better than worse (sign test, "
        f"p < {fusion_fitting.MAX_P}); the fit is stored on the collection and every search of it uses it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--collection", required=True)
        parser.add_argument(
            "--labelled",
            action="append",
            type=Path,
            default=[],
            metavar="FILE",
            help="Labelled questions in calibrate's format (the answerable ones with an article are used); repeat",
        )
        parser.add_argument("--beir", type=Path, default=None, metavar="DIR", help="A BEIR folder's queries and qrels")
        parser.add_argument("--split", default="train", help="--beir: the qrels split to fit on (default train)")
        parser.add_argument("--limit", type=int, default=None, help="Only the first N questions")
        parser.add_argument("--dry-run", action="store_true", help="Print the figures, store nothing")
        parser.add_argument("--save", type=Path, default=None, metavar="FILE", help="Also write the fit as JSON")
        parser.add_argument(
            "--load",
            type=Path,
            default=None,
            metavar="FILE",
            help="Store a fit an earlier --save wrote, asking no question (make run does this for the sample)",
        )
        parser.add_argument("--clear", action="store_true", help="Forget the collection's fit: back to the default")
        parser.add_argument("--if-missing", action="store_true", help="Do nothing if the collection has a fit")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            collection = Collection.objects.get(name=options["collection"])
        except Collection.DoesNotExist:
            raise CommandError(f"No collection {options['collection']!r}; ingest it first.") from None
        if options["if_missing"] and collection.fusion and not options["clear"]:
            self.stdout.write(f"{collection.name}: fusion already fitted ({collection.fusion.get('fitted_on', '')}).")
            return
        if options["clear"] or options["load"]:
            self._store(collection, {} if options["clear"] else _read_fit(options["load"]), options)
            return
        queries = self._queries(options)
        if not queries:
            raise CommandError("No answerable question with a relevant article to fit on.")
        base = default_config()  # the settings' default, never an earlier fit
        settings = [*fusion_fitting.grid(base.stages), fusion_fitting.setting_of(base)]
        with tqdm(total=len(queries), unit="question", disable=not sys.stderr.isatty()) as bar:
            observations = fusion_fitting.observe(
                collection,
                queries,
                embedder=default_embedder(),
                reranker=default_reranker(),
                base=base,
                settings=settings,
                progress=lambda done, total: bar.update(1),
            )
        document_of = dict(Chunk.objects.filter(collection=collection).values_list("id", "version__article__slug"))
        fit = fusion_fitting.fit(observations, base, document_of)
        ranked = sorted(fit.ndcg.items(), key=lambda item: -item[1])
        self.stdout.write(f"{collection.name}: {fit.questions} questions, nDCG@10 of the reranked ranking")
        for name, ndcg in ranked[:10]:
            self.stdout.write(f"  {ndcg:.4f}  {name}")
        self.stdout.write(f"  {fit.ndcg[fit.default.name]:.4f}  {fit.default.name}  ← the default")
        self.stdout.write(
            f"best: {fit.best.name}: ranks {fit.wins} questions better than the default and {fit.losses} worse "
            f"(sign test p = {fit.p_value:.3g})"
        )
        self.stdout.write(f"chosen: {fit.chosen.name} (gain {fit.gain:+.4f} over the default)")
        # Stored even when the default is kept: the collection has been fitted, and --if-missing skips it.
        record = {
            "weights": dict(fit.chosen.weights),
            "rerank_blend": fit.chosen.blend,
            "ndcg@10": fit.ndcg[fit.chosen.name],
            "default_ndcg@10": fit.ndcg[fit.default.name],
            "questions": fit.questions,
            "better": fit.wins,
            "worse": fit.losses,
            "sign_test_p": round(fit.p_value, 4),
            "fitted_on": self._fitted_on(options),
        }
        if options["save"] is not None:
            options["save"].write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if options["dry_run"]:
            self.stdout.write("--dry-run: nothing stored.")
            return
        self._store(collection, record, options)

    def _queries(self, options: dict[str, Any]) -> list[Query]:
        if not options["labelled"] and options["beir"] is None:
            raise CommandError("Give the questions to fit on: --labelled FILE (repeatable) or --beir DIR.")
        if options["limit"] is not None and options["limit"] < 1:
            raise CommandError("--limit must be a positive number.")
        queries: list[Query] = []
        try:
            for path in options["labelled"]:
                queries.extend(
                    Query(f"{path.name}:{number}", q.question, {q.article: 1})
                    for number, q in enumerate(read_calibration_set(path), start=1)
                    if q.answerable and q.article
                )
            if options["beir"] is not None:
                queries.extend(read_queries(options["beir"], options["split"]))
        except (CalibrationError, KnowledgeError) as exc:
            raise CommandError(str(exc)) from None
        return queries[: options["limit"]]

    def _fitted_on(self, options: dict[str, Any]) -> str:
        sources = [str(path) for path in options["labelled"]]
        if options["beir"] is not None:
            sources.append(f"{options['beir']} ({options['split']})")
        return " + ".join(sources)

    def _store(self, collection: Collection, record: dict[str, Any], options: dict[str, Any]) -> None:
        collection.fusion = record
        collection.save(update_fields=["fusion"])
        config = default_config(collection)
        self.stdout.write(
            f"{collection.name} now fuses with weights { ({str(k): v for k, v in config.weights.items()}) }, "
            f"rerank blend {config.rerank_blend}" + ("" if record else " (the settings' default)")
        )


def _read_fit(path: Path) -> dict[str, Any]:
    """A fit written by --save, checked: weights for known stages, between 0 and 10, and a blend in [0, 1]."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CommandError(f"--load {path}: {exc}") from None
    weights, blend = record.get("weights"), record.get("rerank_blend")
    if not isinstance(weights, dict) or not weights or set(weights) - set(SEARCH_STAGES):
        raise CommandError(f"--load {path}: 'weights' must map stages ({', '.join(SEARCH_STAGES)}) to numbers.")
    if not all(isinstance(w, int | float) and 0 <= w <= 10 for w in weights.values()):
        raise CommandError(f"--load {path}: every weight must be a number from 0 to 10.")
    if not isinstance(blend, int | float) or not 0 <= blend <= 1:
        raise CommandError(f"--load {path}: 'rerank_blend' must be a number from 0 to 1.")
    return record
