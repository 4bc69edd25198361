"""manage.py evaluate: quality on labelled sets (answers, kinds, retrieval, grounding, personal data, injection, the
injection detector, content gaps, asides)."""

import json
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from answering.services import default_services
from knowledge.embeddings import default_embedder, secondary_embedder
from knowledge.errors import KnowledgeError
from knowledge.ingest import configured_chunking, ingest
from knowledge.injection_model import shipped_model
from knowledge.models import Collection
from knowledge.rerank import default_reranker
from knowledge.retrieval import RetrievalConfig, default_config
from knowledge.sources import read_beir_corpus
from knowledge.stages import SEARCH_STAGES, Stage
from lab.answer_evaluation import (
    GOLDEN_SET,
    KINDS,
    GoldenQuestion,
    QuestionResult,
    evaluate_answers,
    read_golden_set,
)
from lab.boilerplate_evaluation import asides_report
from lab.calibration import labelled_set
from lab.errors import (
    AsideDataError,
    AttackSetError,
    CalibrationError,
    GapLabelError,
    GoldenSetError,
    GroundingDatasetError,
    InjectionSetupError,
    PiiDatasetError,
)
from lab.evaluation_runs import (
    answers_report,
    close_run,
    finished_results,
    open_run,
    save_result,
    stages_report,
)
from lab.experiments import golden_stage_figures
from lab.gap_evaluation import GAP_LABELS, THRESHOLDS, evaluate_gaps, read_gap_labels
from lab.grounding_evaluation import evaluate_grounding, read_evidence_pairs
from lab.injection_evaluation import PROVIDERS, evaluate_injection, prepare_poisoned, report_lines, services_for
from lab.injection_training import detector_report
from lab.kinds_evaluation import evaluate_kinds, read_co_relevant
from lab.models import EvaluationKind
from lab.pii_evaluation import PII_TEST_SET, evaluate_pii, pii_table, read_pii_set
from lab.poisoning import ATTACKS, read_attacks
from lab.report import write_report
from lab.retrieval_evaluation import evaluate_retrieval, evaluate_search, fusion_grid, read_queries


def _weights(pairs: list[str]) -> dict[str, float]:
    weights = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if name not in SEARCH_STAGES:
            raise CommandError(f"--weight {pair!r}: the stage must be one of {', '.join(SEARCH_STAGES)}.")
        try:
            weights[name] = float(value)
        except ValueError:
            raise CommandError(f"--weight {pair!r}: use STAGE=NUMBER, e.g. bm25=0.5.") from None
    return weights


def _write_report(path: Path, text: str) -> None:
    # A run takes minutes; a missing folder must not lose its figures at the end.
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


class Command(BaseCommand):
    help = (
        "Measure quality. `evaluate retrieval --dataset DIR`: index a BEIR dataset (hash-skip sync) and report "
        "nDCG@10, MRR@10, recall@k and latency for each stage, their fusion, and the final pipeline. "
        "`evaluate grounding --dataset SCIFACT --split train`: the support verifier on SUPPORT / CONTRADICT / "
        "unrelated evidence sentences. `evaluate answers [--dataset GOLDEN.jsonl]`: full turns on the golden "
        "question set, with recall@3, MRR, answer correctness, abstention, audience leaks, unsupported claims "
        "shipped and the failure tree. `evaluate kinds --labelled FILE@COLLECTION [--qrels TSV]`: full turns on a "
        "labelled set, counted by kind of reply (answered, suggested, abstained, referred), with the share of "
        "answerable questions answered or suggested from a relevant article. `evaluate pii [--dataset "
        "MESSAGES.jsonl]`: personal-data masking on a labelled message set (default lab/sample/pii_test.jsonl): "
        "recall and precision by kind, kept "
        "identifiers lost, masking latency. `evaluate gaps [--dataset LABELS.jsonl]`: content-gap clustering of the "
        "golden and calibration sets' unanswerable questions against a topic labelling (default "
        "lab/sample/gap_labels.jsonl): the threshold tuned on the calibration questions, purity, inverse purity "
        "and adjusted Rand index on the golden ones."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "what",
            choices=["retrieval", "grounding", "answers", "kinds", "pii", "injection", "detector", "gaps", "asides"],
        )
        parser.add_argument(
            "--dataset",
            type=Path,
            default=None,
            help="A BEIR folder (corpus, queries, qrels; evidence for grounding); for answers a golden JSONL "
            "(default: the sample help centre's golden set)",
        )
        parser.add_argument("--split", default="test")
        parser.add_argument("--collection", default=None, help="Default: eval-<dataset folder name>")
        parser.add_argument("--json", type=Path, default=None)
        parser.add_argument("--limit", type=int, default=None, help="Only the first N queries")
        parser.add_argument("--stages", default=None, help="Comma-separated, e.g. bm25,dense (default: settings)")
        parser.add_argument("--fusion", choices=["rrf", "weighted"], default=None)
        parser.add_argument("--weight", action="append", default=[], metavar="STAGE=W")
        parser.add_argument("--rrf-k", type=int, default=None)
        parser.add_argument("--depth", type=int, default=None)
        parser.add_argument("--with-rerank", action="store_true", help="Also measure the reranked fusion")
        parser.add_argument("--rerank-blend", type=float, default=None, help="0 = fused order, 1 = reranker only")
        parser.add_argument("--fusion-grid", action="store_true", help="Compare fusion settings (nDCG@10) instead")
        parser.add_argument(
            "--final-only", action="store_true", help="retrieval: only what search() returns, no stage alone (faster)"
        )
        parser.add_argument("--report", type=Path, default=None, help="answers: write an HTML report with plots here")
        parser.add_argument(
            "--resume", action="store_true", help="answers: continue the newest unfinished run with the same settings"
        )
        parser.add_argument(
            "--provider",
            choices=PROVIDERS,
            default="reader",
            help="injection: the generator (the offline reader, a compliant fake model, or the LLM_* one)",
        )
        parser.add_argument("--attacks", type=Path, default=ATTACKS, help="injection: the attack manifest")
        parser.add_argument("--poisoned-collection", default="helpcentre-poisoned", help="injection")
        parser.add_argument(
            "--labelled",
            default=None,
            metavar="FILE[@COLLECTION]",
            help="kinds: a labelled question set (calibrate's format) asked of its collection (default: --collection)",
        )
        parser.add_argument(
            "--qrels", type=Path, default=None, help="kinds: BEIR qrels naming every relevant article of a question"
        )

    def _config(self, options: dict[str, Any], collection: Collection | None = None) -> RetrievalConfig:
        base = default_config(collection)
        try:
            return RetrievalConfig(
                stages=tuple(options["stages"].split(",")) if options["stages"] else base.stages,
                fusion=options["fusion"] or base.fusion,
                weights=MappingProxyType({**base.weights, **_weights(options["weight"])}),
                rrf_k=options["rrf_k"] or base.rrf_k,
                depth=options["depth"] or base.depth,
                bm25=base.bm25,
                ef_search=base.ef_search,
                rerank=base.rerank,
                rerank_candidates=base.rerank_candidates,
                rerank_confident_candidates=base.rerank_confident_candidates,
                rerank_blend=base.rerank_blend if options["rerank_blend"] is None else options["rerank_blend"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None

    def _kinds(self, options: dict[str, Any]) -> None:
        if not options["labelled"]:
            raise CommandError("evaluate kinds needs --labelled FILE[@COLLECTION].")
        try:
            path, questions, collection = labelled_set(options["labelled"], options["collection"] or "helpcentre")
            relevant = read_co_relevant(options["qrels"]) if options["qrels"] else None
        except CalibrationError as exc:
            raise CommandError(str(exc)) from None
        questions = questions[: options["limit"]]
        bar = tqdm(total=len(questions), unit="question", disable=not sys.stderr.isatty())
        evaluation = evaluate_kinds(questions, collection, default_services(), relevant=relevant, progress=bar.update)
        bar.close()
        summary = evaluation.summary()
        self.stdout.write(f"{path} on {collection.name}: {summary['questions']} questions, full turns")
        for group in ("answerable", "unanswerable"):
            self.stdout.write(f"  {group:<13} " + " · ".join(f"{k} {n}" for k, n in summary[group].items()))
        for key in (
            "answerable_answered_or_suggested_relevant",
            "answerable_answered_relevant",
            "unanswerable_answered",
            "unanswerable_suggested",
            "reached",
            "confident_wrong",
            "confident_wrong_share",
        ):
            self.stdout.write(f"  {key:<42} {summary[key]}")
        if options["json"]:
            _write_report(options["json"], json.dumps(summary, indent=2))

    def _grounding(self, options: dict[str, Any]) -> None:
        try:
            pairs = read_evidence_pairs(options["dataset"], options["split"])
        except GroundingDatasetError as exc:
            raise CommandError(str(exc)) from None
        pairs = pairs[: options["limit"]]
        services = default_services()
        bar = tqdm(total=len(pairs), unit="pair", disable=not sys.stderr.isatty())
        figures = evaluate_grounding(pairs, services.grounder, progress=lambda done, total: bar.update(1))
        bar.close()
        verifier = figures["support_verifier"]
        self.stdout.write(f"{options['dataset'].name} ({options['split']}): pairs {figures['pairs']}")
        self.stdout.write(
            f"support verifier (cross-encoder ≥ {verifier['threshold']} + number/negation checks): "
            f"accuracy {verifier['accuracy']:.3f} · precision of 'supported' {verifier['precision_supported']:.3f} · "
            f"recall {verifier['recall_supported']:.3f}"
        )
        self.stdout.write(f"  share judged supported, by label: {verifier['supported_rate_by_label']}")
        for title, key in (("cross-encoder score", "score_sweep"), ("embedding cosine", "similarity_sweep")):
            self.stdout.write(f"{title} alone as the test: threshold → precision / recall of SUPPORT")
            for row in figures[key]:
                self.stdout.write(f"  {row['threshold']:>6} → {row['precision']:.3f} / {row['recall']:.3f}")
        if options["json"]:
            _write_report(options["json"], json.dumps(figures, indent=2))

    def _pii(self, options: dict[str, Any]) -> None:
        try:
            messages = read_pii_set(options["dataset"] or PII_TEST_SET)[: options["limit"]]
        except PiiDatasetError as exc:
            raise CommandError(str(exc)) from None
        figures = evaluate_pii(messages)
        self.stdout.write("\n".join(pii_table(figures)))
        if options["json"]:
            _write_report(options["json"], json.dumps(figures.as_json(), indent=2, ensure_ascii=False))

    def _gaps(self, options: dict[str, Any]) -> None:
        try:
            labelled = read_gap_labels(options["dataset"] or GAP_LABELS)
            bar = tqdm(total=len(THRESHOLDS), unit="threshold", disable=not sys.stderr.isatty())
            evaluation = evaluate_gaps(labelled, default_embedder(), progress=lambda: bar.update(1))
            bar.close()
        except GapLabelError as exc:
            raise CommandError(str(exc)) from None
        columns = ["threshold", "clusters", "purity", "inverse_purity", "f", "adjusted_rand"]
        tune = evaluation.sweep[0]
        self.stdout.write(f"calibration questions ({tune.questions}, {tune.topics} topics): tuning the threshold")
        self.stdout.write("  " + "".join(f"{c:>15}" for c in columns))
        for figures in evaluation.sweep:
            mark = "  ← chosen (best f)" if figures.threshold == evaluation.chosen else ""
            self.stdout.write("  " + "".join(f"{getattr(figures, c):>15}" for c in columns) + mark)
        test, alone = evaluation.test, evaluation.singletons
        self.stdout.write(
            f"golden questions ({test.questions}, {test.topics} topics) at threshold {evaluation.chosen}: "
            f"{test.clusters} clusters · purity {test.purity} · inverse purity {test.inverse_purity} · f {test.f} · "
            f"adjusted Rand {test.adjusted_rand}"
        )
        self.stdout.write(
            f"  each question alone: purity {alone.purity} · inverse purity {alone.inverse_purity} · f {alone.f} · "
            f"adjusted Rand {alone.adjusted_rand}"
        )
        for group in evaluation.test_groups:
            if len(group) > 1:
                self.stdout.write("  cluster: " + " | ".join(group))
        if options["json"]:
            _write_report(options["json"], json.dumps(evaluation.as_json(), indent=2, ensure_ascii=False))

    def _answers(self, options: dict[str, Any]) -> None:
        name = options["collection"] or "helpcentre"
        dataset = options["dataset"] or GOLDEN_SET
        try:
            questions = read_golden_set(dataset)[: options["limit"]]
            collection = Collection.objects.select_related("embedding_space", "secondary_space").get(name=name)
        except GoldenSetError as exc:
            raise CommandError(str(exc)) from None
        except Collection.DoesNotExist:
            raise CommandError(f"No collection {name!r}; ingest the help centre first (make run does).") from None
        run = open_run(EvaluationKind.ANSWERS, str(dataset), collection, resume=options["resume"])
        finished = finished_results(run)
        if finished:
            self.stderr.write(f"Resuming run {run.pk}: {len(finished)} questions already done.")
        bar = tqdm(total=len(questions), unit="question", disable=not sys.stderr.isatty())

        def progress(result: QuestionResult, new: bool) -> None:
            if new:
                save_result(run, result)  # kept at once: an interrupted run resumes from here
            bar.update(1)

        try:
            evaluation = evaluate_answers(
                questions, collection, default_services(), progress=progress, finished=finished
            )
        except KeyboardInterrupt:
            raise CommandError(f"Interrupted; run {run.pk} keeps what was done. Resume with --resume.") from None
        finally:
            bar.close()
        sections, plots = answers_report(evaluation)
        stages = self._stages(questions, collection)
        stage_section, stage_plots = stages_report(stages)
        sections.insert(1, stage_section)
        plots |= stage_plots
        summary = evaluation.summary | {"stages": stages}
        close_run(run, summary, plots)
        self.stdout.write(
            f"run {run.pk}: {summary['questions']} questions ({summary['answerable']} answerable, "
            f"{summary['unanswerable']} not) on {name}"
        )
        for key in (
            "recall@3",
            "mrr",
            "answer_correct",
            "answer_precision",
            "reached",
            "confident_wrong",
            "unanswerable_answered",
            "abstention_correct",
            "audience_leaks",
            "unsupported_shipped",
            "faithfulness",
            "citation_validity",
            "referral_rate",
        ):
            self.stdout.write(f"  {key:<20} {summary[key]}")
        self.stdout.write(f"  failure tree: {summary['failure_tree']}")
        for group, kinds in summary["kinds"].items():
            self.stdout.write(f"  {group:<13} " + " · ".join(f"{kind} {n}" for kind, n in kinds.items()))
        self.stdout.write("  retrieval by stage (nDCG@10 · recall@3 · recall@20):")
        for stage, figures in stages.items():
            self.stdout.write(
                f"    {stage:<18} {figures['ndcg@10']:.3f} · {figures['recall@3']:.3f} · {figures['recall@20']:.3f}"
            )
        for category, figures in summary["by_category"].items():
            kinds = " · ".join(f"{kind} {figures[kind]}" for kind in KINDS)
            self.stdout.write(
                f"  {category:<13} {figures['correct']}/{figures['questions']} right, "
                f"{figures['reached']}/{figures['questions']} reached ({kinds})"
            )
        if options["json"]:
            document = {**evaluation.as_json(), "stages": stages}
            _write_report(options["json"], json.dumps(document, indent=2, default=str))
        if options["report"]:
            index = write_report(options["report"], f"Answer evaluation, run {run.pk}", sections, plots)
            self.stdout.write(f"report: {index}")

    def _injection(self, options: dict[str, Any]) -> None:
        """The golden questions on the clean collection and on a poisoned copy (lab/injection_evaluation.py)."""
        try:
            questions = read_golden_set(options["dataset"] or GOLDEN_SET)[: options["limit"]]
            attacks = read_attacks(options["attacks"])
            clean = Collection.objects.get(name=options["collection"] or "helpcentre")
            poisoned = prepare_poisoned(
                options["poisoned_collection"],
                Path(settings.BASE_DIR) / "var" / options["poisoned_collection"],
                attacks,
                source=settings.SAMPLE_HELP_CENTRE,
                glossary=settings.SAMPLE_HELP_CENTRE.parent / "glossary.tsv",
                policy=Path(settings.BASE_DIR) / "conversations" / "sample" / "policy.md",
                signals=Path(settings.BASE_DIR) / "conversations" / "sample" / "helpcentre_signals.json",
            )
            services = services_for(options["provider"], default_services(), attacks)
        except (GoldenSetError, AttackSetError, InjectionSetupError) as exc:
            raise CommandError(str(exc)) from None
        except Collection.DoesNotExist:
            raise CommandError("No clean collection; ingest the help centre first (make run does).") from None
        bar = tqdm(total=2 * len(questions), unit="question", disable=not sys.stderr.isatty())
        evaluation = evaluate_injection(questions, clean, poisoned, services, attacks, progress=lambda: bar.update(1))
        bar.close()
        self.stdout.write(f"provider {options['provider']} · {clean.name} vs {poisoned.name}")
        for line in report_lines(evaluation.summary):
            self.stdout.write(line)
        if options["json"]:
            _write_report(options["json"], json.dumps(evaluation.as_json(), indent=2, ensure_ascii=False))

    def _stages(self, questions: list[GoldenQuestion], collection: Collection) -> dict[str, dict[str, float]]:
        bar = tqdm(total=sum(q.answerable for q in questions), unit="question", disable=not sys.stderr.isatty())
        bar.set_description("retrieval by stage")
        try:
            return golden_stage_figures(
                questions,
                collection,
                config=default_config(),
                embedder=default_services().embedder,
                reranker=default_services().reranker,
                progress=lambda question: bar.update(1),
            )
        finally:
            bar.close()

    def handle(self, *args: Any, **options: Any) -> None:
        if options["limit"] is not None and options["limit"] < 1:
            raise CommandError("--limit must be a positive number.")
        if options["what"] == "answers":
            self._answers(options)
            return
        if options["what"] == "kinds":
            self._kinds(options)
            return
        if options["what"] == "injection":
            self._injection(options)
            return
        if options["what"] == "pii":
            self._pii(options)
            return
        if options["what"] == "asides":
            try:
                for line in asides_report():
                    self.stdout.write(line)
            except AsideDataError as exc:
                raise CommandError(str(exc)) from None
            return
        if options["what"] == "detector":
            try:
                attacks = [(a.split, a.text) for a in read_attacks(options["attacks"])]
                lines = detector_report(shipped_model(), Path(settings.SAMPLE_HELP_CENTRE), attacks)
            except (AttackSetError, InjectionSetupError) as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write("\n".join(lines))
            return
        if options["what"] == "gaps":
            self._gaps(options)
            return
        if options["dataset"] is None:
            raise CommandError(f"evaluate {options['what']} needs --dataset DIR.")
        if options["what"] == "grounding":
            self._grounding(options)
            return
        dataset: Path = options["dataset"]
        if not (dataset / "corpus.jsonl").exists():
            raise CommandError(f"No corpus.jsonl in {dataset}.")
        name = options["collection"] or f"eval-{dataset.name}".replace("_", "-")
        embedder = default_embedder()
        strategy, bounds = configured_chunking()
        try:
            queries = read_queries(dataset, options["split"])[: options["limit"]]
            report = ingest(
                name,
                read_beir_corpus(dataset),
                embedder=embedder,
                secondary=secondary_embedder(),
                strategy=strategy,
                bounds=bounds,
                retire_missing=False,
                detect_boilerplate=False,
            )
            self.stderr.write(f"{name}: {report.summary()}")
            # The collection's own fitted fusion, when it has one, is what its searches use.
            config = self._config(options, Collection.objects.get(name=name))
            bar = tqdm(total=len(queries), unit="query", disable=not sys.stderr.isatty())
            if options["fusion_grid"]:
                grid = fusion_grid(
                    Collection.objects.get(name=name),
                    queries,
                    embedder=embedder,
                    progress=lambda done, total: bar.update(1),
                )
                bar.close()
                self.stdout.write(f"{dataset.name} ({options['split']}, {len(queries)} queries): nDCG@10")
                for setting, ndcg in grid.items():
                    self.stdout.write(f"  {setting:<40} {ndcg}")
                return
            if options["final_only"]:
                final = evaluate_search(
                    Collection.objects.get(name=name),
                    queries,
                    embedder=embedder,
                    config=config,
                    progress=lambda done, total: bar.update(1),
                )
                figures: dict[str, dict[str, float]] = {Stage.FINAL: final}
            else:
                figures = evaluate_retrieval(
                    Collection.objects.get(name=name),
                    queries,
                    embedder=embedder,
                    config=config,
                    reranker=default_reranker(),
                    with_rerank=options["with_rerank"],
                    progress=lambda done, total: bar.update(1),
                )
            bar.close()
        except KnowledgeError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"{dataset.name} ({options['split']}, {len(queries)} queries) · stages {','.join(config.stages)} · "
            f"fusion {config.fusion} (k={config.rrf_k}, depth {config.depth}, "
            f"weights { ({str(k): v for k, v in config.weights.items()}) }, rerank blend {config.rerank_blend})"
        )
        columns = [
            "ndcg@10",
            "mrr@10",
            "recall@1",
            "recall@3",
            "recall@5",
            "recall@10",
            "recall@20",
            "recall@100",
            "p50_ms",
            "p95_ms",
        ]
        self.stdout.write(f"{'stage':<8}" + "".join(f"{c:>11}" for c in columns))
        for stage, values in figures.items():
            self.stdout.write(f"{stage:<8}" + "".join(f"{values.get(c, ''):>11}" for c in columns))
        if options["json"]:
            _write_report(
                options["json"],
                json.dumps(
                    {"dataset": str(dataset), "split": options["split"], "queries": len(queries), "stages": figures},
                    indent=2,
                ),
            )
