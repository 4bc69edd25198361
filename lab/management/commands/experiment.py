"""manage.py experiment: quality experiments on the golden set (fusion, abstention cut, chunking)."""

import json
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from answering.decide.abstention import rates_at, roc_auc
from answering.services import default_services
from conversations.records.turns import answer_model
from knowledge.embeddings import default_embedder, secondary_embedder
from knowledge.errors import RerankerUnavailable
from knowledge.models import Collection
from knowledge.rerank import PACKAGED_RERANKER, CrossEncoder, default_reranker, resolve_reranker_dir
from knowledge.retrieval import default_config
from lab.answer_evaluation import GOLDEN_SET, GoldenQuestion, read_golden_set
from lab.calibration import SAMPLE_SET, SAMPLE_SETS, LabelledQuestion, labelled_set
from lab.chunking_experiment import VARIANTS, run_chunking_experiment
from lab.errors import CalibrationError, GoldenSetError
from lab.evaluation_runs import close_run, open_run
from lab.experiments import as_labelled, fusion_experiment, model_experiment, threshold_experiment
from lab.report import Section, bar_chart, tradeoff_chart, write_report

Result = tuple[list[dict[str, Any]], list[Section], dict[str, bytes]]


class Command(BaseCommand):
    help = (
        "Quality experiments on the golden set (each stored as an evaluation run): `fusion` compares RRF at "
        "several k with weighted fusion from α 0 (BM25 only) to 1 (dense only), each with and without the "
        "reranker; `threshold` sweeps the cut of the abstention decision on the golden set and labelled sets "
        "(answerable answered vs unanswerable answered, the cut in force marked); `chunking` re-indexes the "
        "help centre (and StackFAQ with --stackfaq) with each chunking strategy and compares recall@3, MRR and "
        "index size; `models` reads the golden set and labelled sets with each answer-scoring cross-encoder "
        "(the one in force and the packaged reranker, or those named with --model) and compares for how many "
        "answerable questions the reply states the fact, and how well the best statement's score tells those "
        "replies from the rest."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("what", choices=["fusion", "threshold", "chunking", "models"])
        parser.add_argument("--dataset", type=Path, default=GOLDEN_SET, help="A golden JSONL")
        parser.add_argument("--collection", default="helpcentre")
        parser.add_argument("--stackfaq", type=Path, default=None, help="chunking: also a BEIR folder, e.g. StackFAQ")
        parser.add_argument("--split", default="test")
        parser.add_argument("--limit", type=int, default=None, help="chunking: only the first N BEIR queries")
        parser.add_argument(
            "--labelled",
            action="append",
            default=None,
            metavar="FILE@COLLECTION",
            help="threshold, models: also a labelled question set asked of its collection (default: the sample "
            "calibration set on --collection; for models the three help-centre calibration sets); repeat for several",
        )
        parser.add_argument(
            "--model",
            action="append",
            default=None,
            metavar="NAME",
            help="models: a cross-encoder to compare, as RERANK_MODEL names one (default: the one in force and the "
            "packaged reranker); repeat for several",
        )
        parser.add_argument("--json", type=Path, default=None)
        parser.add_argument("--report", type=Path, default=None, help="Write an HTML report with plots here")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["limit"] is not None and options["limit"] < 1:
            raise CommandError("--limit must be a positive number.")
        try:
            questions = read_golden_set(options["dataset"])
            collection = Collection.objects.select_related("embedding_space", "secondary_space").get(
                name=options["collection"]
            )
        except GoldenSetError as exc:
            raise CommandError(str(exc)) from None
        except Collection.DoesNotExist:
            raise CommandError(f"No collection {options['collection']!r}; ingest the help centre first.") from None
        if options["stackfaq"] is not None and not (options["stackfaq"] / "corpus.jsonl").exists():
            raise CommandError(f"No corpus.jsonl in {options['stackfaq']}.")
        run = open_run(options["what"], str(options["dataset"]), collection, resume=False)
        rows, sections, plots = getattr(self, f"_{options['what']}")(questions, collection, options)
        close_run(run, {"rows": rows}, plots)
        self.stdout.write(f"run {run.pk} ({options['what']}):")
        for row in rows:
            self.stdout.write("  " + "  ".join(f"{k} {v}" for k, v in row.items()))
        if options["json"]:
            options["json"].write_text(json.dumps(rows, indent=2))
        if options["report"]:
            index = write_report(
                options["report"], f"{options['what'].capitalize()} experiment, run {run.pk}", sections, plots
            )
            self.stdout.write(f"report: {index}")

    def _bar(self, total: int, unit: str) -> tqdm:
        return tqdm(total=total, unit=unit, disable=not sys.stderr.isatty())

    def _fusion(self, questions: list[GoldenQuestion], collection: Collection, options: dict[str, Any]) -> Result:
        bar = self._bar(20, "setting")
        figures = fusion_experiment(
            questions, collection, embedder=default_embedder(), progress=lambda _: bar.update(1)
        )
        bar.close()
        rows = [f.as_dict() for f in figures]
        plot = bar_chart(
            [f.setting for f in figures],
            {"recall@3": [f.recall_at_3 for f in figures], "MRR": [f.mrr for f in figures]},
            title="Retrieval on the golden set by fusion setting",
            ylabel="share of answerable questions",
        )
        best = max(figures, key=lambda f: (f.recall_at_3, f.mrr))
        in_force = default_config()
        weights = ", ".join(f"{stage} {weight}" for stage, weight in in_force.weights.items())
        text = (
            f"Best: {best.setting} (recall@3 {best.recall_at_3}, MRR {best.mrr}). In force: {in_force.fusion} "
            f"fusion ({weights}), reranker {'on' if in_force.rerank else 'off'}."
        )
        return (
            rows,
            [Section("Fusion", text, ["setting", "recall@3", "MRR"], [list(r.values()) for r in rows], ["fusion"])],
            {"fusion": plot},
        )

    def _threshold(self, questions: list[GoldenQuestion], collection: Collection, options: dict[str, Any]) -> Result:
        sets: list[tuple[str, list[LabelledQuestion], Collection]] = [
            (f"golden ({options['dataset'].name})", [as_labelled(q) for q in questions], collection)
        ]
        sets += self._labelled_sets(options, collection, [str(SAMPLE_SET)])
        bar = self._bar(sum(len(q) for _, q, _ in sets), "question")
        rows: list[dict[str, Any]] = []
        curves: dict[str, list[tuple[float, float]]] = {}
        chosen: dict[str, list[tuple[str, float, float]]] = {}
        summary = []
        for name, labelled, on in sets:
            table, scores = threshold_experiment(labelled, on, default_services(), progress=lambda *_: bar.update(1))
            model = answer_model(on)
            at = {cut: rates_at(scores, cut) for cut in dict.fromkeys((model.cut, model.suggests_from))}
            label = f"{name} on {on.name}"
            curves[label] = [(1.0, 1.0), *((r.wrongly_answered, r.answered) for r in table), (0.0, 0.0)]
            chosen[label] = [
                (kind, at[cut].wrongly_answered, at[cut].answered)
                for kind, cut in (("answer", model.cut), ("suggest", model.suggests_from))
            ]
            answer, suggest = at[model.cut], at[model.suggests_from]
            summary.append(
                [
                    label,
                    len(scores),
                    round(roc_auc(scores), 3),
                    round(model.cut, 3),
                    answer.answered,
                    answer.wrongly_answered,
                    round(model.suggests_from, 3),
                    suggest.answered,
                    suggest.wrongly_answered,
                ]
            )
            # Each cut falls on the first row at or above it: the questions it lets through are that row's.
            answer_row = next((r for r in table if r.threshold >= model.cut), None)
            suggest_row = next((r for r in table if r.threshold >= model.suggests_from), None)
            rows.extend(
                {
                    "set": label,
                    "cut": round(r.threshold, 4),
                    "answerable_at_or_above": round(r.answered, 3),
                    "unanswerable_at_or_above": round(r.wrongly_answered, 3),
                    "answer_cut": r is answer_row,
                    "suggest_cut": r is suggest_row,
                }
                for r in table
            )
            # A cut above every question's probability answers none of them: it gets a row of its own.
            rows.extend(
                {
                    "set": label,
                    "cut": round(cut, 4),
                    "answerable_at_or_above": 0.0,
                    "unanswerable_at_or_above": 0.0,
                    "answer_cut": cut == model.cut,
                    "suggest_cut": cut == model.suggests_from,
                }
                for cut in dict.fromkeys(
                    cut for cut, row in ((model.suggests_from, suggest_row), (model.cut, answer_row)) if row is None
                )
            )
        bar.close()
        plot = tradeoff_chart(curves, chosen, title="The decision's two cuts: answer (dot) and suggest (square)")
        section = Section(
            "Threshold",
            "Each curve moves a cut on the probability that the evidence answers; the dot is the answer cut in "
            "force for that set's collection (answered at or above it), the square the suggest cut (answered or "
            "suggested at or above it; below it the assistant says it does not know).",
            [
                "set",
                "questions",
                "ROC AUC",
                "answer cut",
                "answerable answered",
                "unanswerable answered",
                "suggest cut",
                "answerable answered or suggested",
                "unanswerable answered or suggested",
            ],
            summary,
            ["threshold"],
        )
        return rows, [section], {"threshold": plot}

    def _labelled_sets(
        self, options: dict[str, Any], collection: Collection, default: list[str]
    ) -> list[tuple[str, list[LabelledQuestion], Collection]]:
        sets = []
        for spec in options["labelled"] or default:
            try:
                path, labelled, on = labelled_set(spec, collection.name)
            except CalibrationError as exc:
                raise CommandError(f"--labelled: {exc}") from None
            sets.append((Path(path).name, labelled, on))
        return sets

    def _models(self, questions: list[GoldenQuestion], collection: Collection, options: dict[str, Any]) -> Result:
        names = list(dict.fromkeys(options["model"] or [settings.RERANK_MODEL, PACKAGED_RERANKER]))
        try:
            # The one in force is loaded already.
            models = {
                name: default_reranker()
                if name == settings.RERANK_MODEL
                else CrossEncoder(resolve_reranker_dir(name), max_tokens=settings.RERANK_MAX_TOKENS)
                for name in names
            }
        except RerankerUnavailable as exc:
            raise CommandError(f"--model: {exc}") from None
        sets = [(f"golden ({options['dataset'].name})", [as_labelled(q) for q in questions], collection)]
        sets += self._labelled_sets(options, collection, [str(path) for path in SAMPLE_SETS])
        bar = self._bar(len(models) * sum(len(q) for _, q, _ in sets), "question")
        figures = model_experiment(models, sets, default_services(), progress=lambda *_: bar.update(1))
        bar.close()
        rows = [f.as_dict() for f in figures]
        section = Section(
            "Answer-scoring models",
            "Each labelled set read with each cross-encoder as reranker and reader's evidence. Read right: "
            "answerable questions whose reply states the set's fact (any reply, where the set names none). AUC: "
            "how well the best statement's score tells those replies from all others, before any decision.",
            list(rows[0]) if rows else [],
            [list(r.values()) for r in rows],
            [],
        )
        return rows, [section], {}

    def _chunking(self, questions: list[GoldenQuestion], collection: Collection, options: dict[str, Any]) -> Result:
        bar = self._bar(len(VARIANTS) * (2 if options["stackfaq"] else 1), "step")

        def ingested(summary: str) -> None:
            bar.update(1)
            self.stderr.write(summary)  # what each variant's ingest did, failures included

        figures = run_chunking_experiment(
            VARIANTS,
            golden_questions=questions,
            helpcentre_dir=settings.SAMPLE_HELP_CENTRE,
            stackfaq_dir=options["stackfaq"],
            split=options["split"],
            embedder=default_embedder(),
            secondary=secondary_embedder(),
            query_limit=options["limit"],
            progress=ingested,
        )
        bar.close()
        rows = [f.as_dict() for f in figures]
        corpora = list(dict.fromkeys(f.corpus for f in figures))
        variants = list(dict.fromkeys(f.variant for f in figures))
        by = {(f.variant, f.corpus): f for f in figures}
        plot = bar_chart(
            variants,
            {f"recall@3 {c}": [by[(v, c)].recall_at_3 for v in variants] for c in corpora},
            title="Retrieval by chunking strategy",
            ylabel="recall@3",
        )
        columns = list(rows[0]) if rows else []
        return (
            rows,
            [Section("Chunking", "", columns, [list(r.values()) for r in rows], ["chunking"])],
            {"chunking": plot},
        )
