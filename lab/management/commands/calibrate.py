"""manage.py calibrate: the abstention decision fitted on labelled questions and stored for the collection."""

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from answering.decide.abstention import (
    ANSWER_MAX_WRONG,
    DEFAULT_MODEL,
    PROBABILITY,
    SIGNALS,
    SUGGEST_REACH,
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
from conversations.records.turns import answer_model
from knowledge.models import Collection
from lab.calibration import SAMPLE_SETS, LabelledQuestion, calibrate, labelled_set, pairs_of
from lab.errors import CalibrationError

Signals = list[tuple[dict[str, float], bool]]


class Command(BaseCommand):
    help = (
        "Fit the abstention decision on labelled questions (answerable vs related-but-unanswerable): prints "
        "how the decision in force does on them, each signal's ROC AUC, and the fitted model's trade-off "
        "table, then stores the model for the collection."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dataset",
            action="append",
            default=None,
            metavar="FILE[@COLLECTION]",
            help="JSON lines of labelled questions (default: the sample calibration sets, English and Hinglish); "
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
            help="The answer cut: the most answerable questions answered while at most this share (0–1) of the "
            f"unanswerable ones are (default {ANSWER_MAX_WRONG})",
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

    def _ask(self, sets: list[tuple[str, list[LabelledQuestion], Collection]]) -> list[tuple[str, str, Signals]]:
        services = default_services()
        asked = []
        for path, questions, collection in sets:
            with tqdm(total=len(questions), unit="question", disable=not sys.stderr.isatty()) as bar:
                asked.append((path, collection.name, calibrate(questions, collection, services, progress=_ticker(bar))))
        return asked

    def _read_signals(self, path: Path) -> list[tuple[str, str, Signals]]:
        """Signals written by an earlier --json: fitting again costs no question asked."""
        try:
            records = json.loads(path.read_text(encoding="utf-8"))
            by_set: dict[tuple[str, str], Signals] = {}
            for record in records:
                signals = {name: float(record["signals"][name]) for name in SIGNALS}
                key = (str(record["dataset"]), str(record["collection"]))
                by_set.setdefault(key, []).append((signals, bool(record["answerable"])))
        except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise CommandError(f"--signals {path}: not signals written by calibrate --json ({exc})") from None
        for _, name in by_set:
            if not Collection.objects.filter(name=name).exists():
                raise CommandError(f"--signals {path}: no collection {name!r}.")
        return [(dataset, name, found) for (dataset, name), found in by_set.items()]

    def handle(self, *args: Any, **options: Any) -> None:
        for option in ("max_wrong", "suggest_reach"):
            if not 0 <= options[option] <= 1:
                raise CommandError(f"--{option.replace('_', '-')} must be a share between 0 and 1, e.g. 0.1.")
        sets = [] if options["signals"] else self._sets(options)
        target = sets[0][2] if sets else self._collection(options)
        stored = AbstentionThreshold.objects.filter(collection=target, signal=PROBABILITY).first()
        if options["if_missing"] and stored is not None and options["save_model"] is None:
            self.stdout.write(f"{target.name}: abstention decision already calibrated ({stored}).")
            return
        try:
            given = read_model(options["decision"]) if options["decision"] is not None else None
        except AbstentionModelError as exc:
            raise CommandError(f"--decision: {exc}") from None
        asked = self._read_signals(options["signals"]) if options["signals"] else self._ask(sets)
        rows: Signals = []
        groups: list[str] = []
        for path, name, found in asked:
            answerable = sum(a for _, a in found)
            in_force = given or answer_model(Collection.objects.get(name=name))
            now = rates_at([(in_force.probability(s), a) for s, a in found], in_force.cut)
            self.stdout.write(
                f"{path} on {name}: {answerable} answerable, {len(found) - answerable} unanswerable; "
                f"the decision {'given' if given else 'in force'} ({in_force.fitted_on}, cut {in_force.cut:.3f}) "
                f"answers {now.answered:.1%} of answerable and {now.wrongly_answered:.1%} of unanswerable questions"
            )
            rows.extend(found)
            groups.extend([name] * len(found))
        if options["json"] is not None:
            options["json"].write_text(
                json.dumps(
                    [
                        {"dataset": path, "collection": name, "signals": s, "answerable": a}
                        for path, name, found in asked
                        for s, a in found
                    ],
                    indent=1,
                )
            )
        for signal in SIGNALS:
            self.stdout.write(f"  {signal:<20} ROC AUC {roc_auc(pairs_of(rows, signal)):.3f}")
        try:
            # Each collection weighs the same in the fit, whatever the size of its labelled set.
            model = fit(rows, groups=groups, fitted_on=" + ".join(f"{path}@{name}" for path, name, _ in asked))
        except AbstentionModelError as exc:
            raise CommandError(str(exc)) from None
        scores = [(model.probability(s), a) for s, a in rows]
        table = tradeoff(scores)
        model = with_cuts(
            model, table, max_wrongly_answered=options["max_wrong"], suggest_reach=options["suggest_reach"]
        )
        chosen = rates_at(scores, model.cut)
        suggested = rates_at(scores, model.suggests_from)
        self.stdout.write(f"\nfitted probability: ROC AUC {roc_auc(scores):.3f} (on the questions it was fitted on)")
        self.stdout.write(f"  {'cut':>10} {'at or above it: answerable':>27} {'unanswerable':>13}")
        step = max(1, len(table) // 15)
        marks = {id(chosen): "  ← answer cut", id(suggested): "  ← suggest cut"}
        for row in sorted([*table[::step], chosen, suggested], key=lambda r: r.threshold):
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
            f"{chosen.answered:.0%} of answerable, {chosen.wrongly_answered:.0%} of unanswerable questions), suggest "
            f"the section from {model.suggests_from:.3f} (answers or suggests {suggested.answered:.0%} of answerable, "
            f"{suggested.wrongly_answered:.0%} of unanswerable), below that say so."
        )


def _ticker(bar: tqdm) -> Callable[[int, int], None]:
    return lambda done, total: bar.update(1)
