"""manage.py calibrate: the abstention decision fitted on labelled questions and stored for the collection."""

import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from answering.decide.abstention import (
    ANSWER_MAX_WRONG,
    DEFAULT_MODEL,
    PROBABILITY,
    SIGNALS,
    SUGGEST_REACH,
    cut_within_each,
    fit,
    rates_at,
    read_model,
    roc_auc,
    tradeoff,
    with_cuts,
)
from answering.errors import AbstentionModelError
from answering.services import default_services
from conversations.models import AbstentionThreshold
from conversations.records.turns import answer_model, stored_decision
from knowledge.models import Collection
from knowledge.rerank import PACKAGED_RERANKER
from knowledge.sync import DEMO_COLLECTION
from lab.calibration import SAMPLE_SETS, Asked, LabelledQuestion, calibrate, labelled_set, pairs_of
from lab.errors import CalibrationError


class Command(BaseCommand):
    help = (
        "Fit the abstention decision on labelled questions (answerable vs related-but-unanswerable; the "
        "decision learns which ones the reader answers right): prints how the decision in force does on them, "
        "each signal's ROC AUC, and the fitted model's trade-off table, then stores the model for the collection."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dataset",
            action="append",
            default=None,
            metavar="FILE[@COLLECTION]",
            help="JSON lines of labelled questions (default: the sample's three calibration sets: English, Hinglish, "
            "conversational); "
            "repeat to fit on several, each asked of its own collection after '@' (default: --collection)",
        )
        parser.add_argument("--collection", default="helpcentre")
        parser.add_argument("--dry-run", action="store_true", help="Print the tables, store nothing")
        parser.add_argument("--if-missing", action="store_true", help="Do nothing if a decision is stored already")
        parser.add_argument(
            "--max-wrong",
            type=float,
            default=ANSWER_MAX_WRONG,
            metavar="SHARE",
            help="The answer cut: the most questions answered right while at most this share (0–1) of the others "
            f"(unanswerable, or replied to without their fact) are answered (default {ANSWER_MAX_WRONG})",
        )
        parser.add_argument(
            "--suggest-reach",
            type=float,
            default=SUGGEST_REACH,
            metavar="SHARE",
            help="The suggest cut: the strictest that still answers or suggests this share (0–1) of the answerable "
            f"questions (default {SUGGEST_REACH})",
        )
        parser.add_argument(
            "--save-model",
            type=Path,
            default=None,
            metavar="FILE",
            help=f"Write the fitted model to FILE instead of storing it (the shipped default is {DEFAULT_MODEL})",
        )
        parser.add_argument(
            "--decision",
            type=Path,
            default=None,
            metavar="FILE",
            help="Report how this model file does on the questions instead of the decision in force",
        )
        parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="Write every question's signals")
        parser.add_argument(
            "--signals",
            type=Path,
            default=None,
            metavar="FILE",
            help="Fit on signals an earlier --json wrote instead of asking the questions again (the decision is "
            "stored for --collection)",
        )

    def _sets(self, options: dict[str, Any]) -> list[tuple[str, list[LabelledQuestion], Collection]]:
        if not options["dataset"] and options["collection"] != DEMO_COLLECTION:
            # The sample sets ask about the demo shop: fitted on another collection they would teach it nothing.
            raise CommandError(
                f"--dataset FILE is needed for {options['collection']!r}: the default questions are about the demo "
                f"shop ({DEMO_COLLECTION!r}). Label questions about your own articles (docs/own-help-centre.md)."
            )
        try:
            return [
                labelled_set(spec, options["collection"])
                for spec in options["dataset"] or [str(path) for path in SAMPLE_SETS]
            ]
        except CalibrationError as exc:
            raise CommandError(str(exc)) from None

    def _collection(self, options: dict[str, Any]) -> Collection:
        try:
            return Collection.objects.get(name=options["collection"])
        except Collection.DoesNotExist:
            raise CommandError(f"No collection {options['collection']!r}; ingest it first.") from None

    def _ask(self, sets: list[tuple[str, list[LabelledQuestion], Collection]]) -> list[tuple[str, str, list[Asked]]]:
        services = default_services()
        asked = []
        for path, questions, collection in sets:
            with tqdm(total=len(questions), unit="question", disable=not sys.stderr.isatty()) as bar:
                asked.append((path, collection.name, calibrate(questions, collection, services, progress=_ticker(bar))))
        return asked

    def _read_signals(self, path: Path) -> tuple[list[tuple[str, str, list[Asked]]], str]:
        """Signals written by an earlier --json (fitting again costs no question asked), and the cross-encoder
        whose scores they hold (a file written before that was recorded holds the packaged reranker's)."""
        try:
            records = json.loads(path.read_text(encoding="utf-8"))
            by_set: dict[tuple[str, str], list[Asked]] = {}
            scored_with = {str(record.get("scored_with", PACKAGED_RERANKER)) for record in records}
            for record in records:
                signals = {name: float(record["signals"][name]) for name in SIGNALS}
                key = (str(record["dataset"]), str(record["collection"]))
                answerable = bool(record["answerable"])
                if "right" not in record:
                    raise CommandError(
                        f"--signals {path}: written before calibrate read each reply (no 'right' field); "
                        "run calibrate --json again to record it."
                    )
                by_set.setdefault(key, []).append(Asked(signals, answerable, bool(record["right"])))
        except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CommandError(f"--signals {path}: not signals written by calibrate --json ({exc})") from None
        if len(scored_with) != 1:
            raise CommandError(
                f"--signals {path}: holds the scores of several models ({', '.join(sorted(scored_with))})."
            )
        for _, name in by_set:
            if not Collection.objects.filter(name=name).exists():
                raise CommandError(f"--signals {path}: no collection {name!r}.")
        return [(dataset, name, found) for (dataset, name), found in by_set.items()], scored_with.pop()

    def handle(self, *args: Any, **options: Any) -> None:
        for option in ("max_wrong", "suggest_reach"):
            if not 0 <= options[option] <= 1:
                raise CommandError(f"--{option.replace('_', '-')} must be a share between 0 and 1, e.g. 0.1.")
        sets = [] if options["signals"] else self._sets(options)
        target = sets[0][2] if sets else self._collection(options)
        read, scored_with = (
            self._read_signals(options["signals"]) if options["signals"] else ([], settings.RERANK_MODEL)
        )
        stores = options["save_model"] is None and not options["dry_run"]
        # A decision decides only with the cross-encoder whose scores it was fitted on.
        if stores and scored_with != settings.RERANK_MODEL:
            message = (
                f"{target.name}: the signals were scored by {scored_with}, not by RERANK_MODEL="
                f"{settings.RERANK_MODEL}, so a decision fitted on them would never decide; calibrate with "
                "--dataset to read the questions with the model in force."
            )
            if options["if_missing"]:
                self.stdout.write(message + " Nothing stored.")
                return
            raise CommandError(message)
        if options["if_missing"] and stores and stored_decision(target, scored_with) is not None:
            self.stdout.write(f"{target.name}: abstention decision already calibrated for {scored_with}.")
            return
        try:
            given = read_model(options["decision"]) if options["decision"] is not None else None
        except AbstentionModelError as exc:
            raise CommandError(f"--decision: {exc}") from None
        asked = read if options["signals"] else self._ask(sets)
        rows: list[Asked] = []
        groups: list[str] = []
        for path, name, found in asked:
            answerable = sum(a.answerable for a in found)
            in_force = given or answer_model(Collection.objects.get(name=name))
            now = rates_at([(in_force.probability(a.signals), a.answerable) for a in found], in_force.cut)
            wrong = sum(in_force.probability(a.signals) >= in_force.cut and not a.right for a in found)
            self.stdout.write(
                f"{path} on {name}: {answerable} answerable ({sum(a.right for a in found)} read right), "
                f"{len(found) - answerable} unanswerable; the decision {'given' if given else 'in force'} "
                f"({in_force.fitted_on}, cut {in_force.cut:.3f}) answers {now.answered:.1%} of answerable and "
                f"{now.wrongly_answered:.1%} of unanswerable questions, {wrong} of {len(found)} answered wrong"
            )
            rows.extend(found)
            groups.extend([name] * len(found))
        if options["json"] is not None:
            options["json"].write_text(
                json.dumps(
                    [
                        {
                            "dataset": path,
                            "collection": name,
                            "signals": a.signals,
                            "answerable": a.answerable,
                            "right": a.right,
                            "scored_with": scored_with,
                        }
                        for path, name, found in asked
                        for a in found
                    ],
                    indent=1,
                )
            )
        for signal in SIGNALS:
            self.stdout.write(f"  {signal:<20} ROC AUC {roc_auc(pairs_of(rows, signal)):.3f}")
        try:
            # Each collection weighs the same in the fit, whatever the size of its labelled set.
            model = fit(
                [(a.signals, a.right) for a in rows],
                groups=groups,
                fitted_on=" + ".join(f"{path}@{name}" for path, name, _ in asked),
                scored_with=scored_with,
            )
        except AbstentionModelError as exc:
            raise CommandError(str(exc)) from None
        scores = [(model.probability(a.signals), a.right) for a in rows]
        reach = [(model.probability(a.signals), a.answerable) for a in rows]
        table = tradeoff(scores)
        model = with_cuts(
            model,
            table,
            max_wrongly_answered=options["max_wrong"],
            suggest_reach=options["suggest_reach"],
            reach_rows=tradeoff(reach),
        )
        if len(set(groups)) > 1:
            # With several collections, the answer cut holds the bound on each of them.
            cut = cut_within_each(
                [(p, a.right, g) for (p, _), a, g in zip(scores, rows, groups, strict=True)], options["max_wrong"]
            )
            model = replace(model, cut=cut, suggest_cut=min(model.suggests_from, cut))
        chosen = rates_at(scores, model.cut)
        suggested = rates_at(reach, model.suggests_from)
        for name in dict.fromkeys(groups):
            mine = [(p, a.right) for (p, _), a, g in zip(scores, rows, groups, strict=True) if g == name]
            at = rates_at(mine, model.cut)
            self.stdout.write(
                f"  at the answer cut, {name}: {at.answered:.0%} of those read right answered, "
                f"{at.wrongly_answered:.0%} of the others"
            )
        self.stdout.write(f"\nfitted probability: ROC AUC {roc_auc(scores):.3f} (on the questions it was fitted on)")
        self.stdout.write(f"  {'cut':>10} {'at or above it: read right':>27} {'others':>13}")
        step = max(1, len(table) // 15)
        marks = {
            id(chosen): "  ← answer cut",
            id(at_suggest := rates_at(scores, model.suggests_from)): "  ← suggest cut",
        }
        for row in sorted([*table[::step], chosen, at_suggest], key=lambda r: r.threshold):
            self.stdout.write(
                f"  {row.threshold:>10.3f} {row.answered:>27.0%} {row.wrongly_answered:>13.0%}{marks.get(id(row), '')}"
            )
        self.stdout.write(
            "  weights: " + ", ".join(f"{f} {w:+.2f}" for f, w in zip(model.features, model.weights, strict=True))
        )
        if options["save_model"] is not None:
            options["save_model"].write_text(json.dumps(model.as_json(), indent=2) + "\n", encoding="utf-8")
            self.stdout.write(f"\nWrote the fitted decision to {options['save_model']}.")
            return
        if options["dry_run"]:
            self.stdout.write(f"\n--dry-run: the decision (cut {model.cut:.3f}) was not stored.")
            return
        AbstentionThreshold.objects.create(
            collection=target,
            signal=PROBABILITY,
            threshold=model.cut,
            model=model.as_json(),
            answered_rate=chosen.answered,
            wrongly_answered_rate=chosen.wrongly_answered,
            dataset=model.fitted_on,
        )
        self.stdout.write(
            f"\nStored for {target.name}: answer at a probability of {model.cut:.3f} or more (answers "
            f"{chosen.answered:.0%} of those read right, {chosen.wrongly_answered:.0%} of the others), suggest "
            f"the section from {model.suggests_from:.3f} (answers or suggests {suggested.answered:.0%} of answerable, "
            f"{suggested.wrongly_answered:.0%} of unanswerable), below that say so."
        )


def _ticker(bar: tqdm) -> Callable[[int, int], None]:
    return lambda done, total: bar.update(1)
