import json
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from conversations.answer_evaluation import GOLDEN_SET, GoldenQuestion, GoldenSetError, read_golden_set
from conversations.chunking_experiment import VARIANTS, run_chunking_experiment
from conversations.evaluation_runs import close_run, open_run
from conversations.experiments import fusion_experiment, threshold_experiment
from conversations.models import Conversation
from conversations.report import Section, bar_chart, line_chart, write_report
from conversations.turns import abstention_threshold, default_services
from knowledge.embeddings import default_embedder, secondary_embedder
from knowledge.models import Collection
from knowledge.retrieval import default_config

Result = tuple[list[dict[str, Any]], list[Section], dict[str, bytes]]


class Command(BaseCommand):
    help = (
        "Quality experiments on the golden set (each stored as an evaluation run): `fusion` compares RRF at "
        "several k with weighted fusion from α 0 (BM25 only) to 1 (dense only), each with and without the "
        "reranker; `threshold` sweeps the abstention threshold (answerable answered vs unanswerable answered, "
        "the threshold in force marked); `chunking` re-indexes the help centre (and StackFAQ with --stackfaq) "
        "with each chunking strategy and compares recall@3, MRR and index size."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("what", choices=["fusion", "threshold", "chunking"])
        parser.add_argument("--dataset", type=Path, default=GOLDEN_SET, help="A golden JSONL")
        parser.add_argument("--collection", default="helpcentre")
        parser.add_argument("--stackfaq", type=Path, default=None, help="chunking: also a BEIR folder, e.g. StackFAQ")
        parser.add_argument("--split", default="test")
        parser.add_argument("--limit", type=int, default=None, help="chunking: only the first N BEIR queries")
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
        bar = self._bar(len(questions), "question")
        table, _ = threshold_experiment(questions, collection, default_services(), progress=lambda _: bar.update(1))
        bar.close()
        chosen = abstention_threshold(Conversation(collection=collection))
        rows = [
            {
                "threshold": round(r.threshold, 3),
                "answerable_answered": round(r.answered, 3),
                "unanswerable_answered": round(r.wrongly_answered, 3),
            }
            for r in table
        ]
        plot = line_chart(
            [r.threshold for r in table],
            {
                "answerable answered": [r.answered for r in table],
                "unanswerable answered": [r.wrongly_answered for r in table],
            },
            title="Abstention threshold on the golden set",
            xlabel="best evidence sentence score (answer when ≥ threshold)",
            ylabel="share",
            marker_x=chosen,
            marker_label=f"in force: {chosen:.2f}",
        )
        at = next((r for r in table if r.threshold >= chosen), table[-1])
        text = (
            f"At the threshold in force ({chosen:.2f}): {at.answered:.0%} of answerable questions answered, "
            f"{at.wrongly_answered:.0%} of unanswerable ones answered anyway."
        )
        section = Section(
            "Threshold",
            text,
            ["threshold", "answerable answered", "unanswerable answered"],
            [list(r.values()) for r in rows[:: max(1, len(rows) // 25)]],
            ["threshold"],
        )
        return rows, [section], {"threshold": plot}

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
