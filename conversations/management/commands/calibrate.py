import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from conversations.calibration import (
    SAMPLE_SET,
    SIGNALS,
    CalibrationError,
    best_row,
    calibrate,
    most_answered_within,
    read_calibration_set,
    roc_auc,
    tradeoff,
)
from conversations.models import AbstentionThreshold
from conversations.turns import default_services
from knowledge.models import Collection


class Command(BaseCommand):
    help = (
        "Choose the abstention threshold on labelled questions (answerable vs related-but-unanswerable): prints "
        "each signal's ROC AUC and trade-off table (threshold → answered, wrongly answered) and stores the "
        "threshold of the signal the assistant abstains on."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", type=Path, default=SAMPLE_SET, help="JSON lines (default: the sample set)")
        parser.add_argument("--collection", default="helpcentre")
        parser.add_argument("--dry-run", action="store_true", help="Print the tables, store nothing")
        parser.add_argument("--if-missing", action="store_true", help="Do nothing if a threshold is stored already")
        parser.add_argument(
            "--max-wrong",
            type=float,
            default=None,
            metavar="SHARE",
            help="Answer as many answerable questions as possible while wrongly answering at most this share "
            "(0–1) of the unanswerable ones (default: the best answered − wrongly answered)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["max_wrong"] is not None and not 0 <= options["max_wrong"] <= 1:
            raise CommandError("--max-wrong must be a share between 0 and 1, e.g. 0.1.")
        try:
            questions = read_calibration_set(options["dataset"])
            collection = Collection.objects.get(name=options["collection"])
        except CalibrationError as exc:
            raise CommandError(str(exc)) from None
        except Collection.DoesNotExist:
            raise CommandError(f"No collection {options['collection']!r}; ingest it first.") from None
        stored = AbstentionThreshold.objects.filter(collection=collection).order_by("-created_at").first()
        if options["if_missing"] and stored is not None:
            self.stdout.write(f"{collection.name}: abstention threshold already calibrated ({stored}).")
            return
        bar = tqdm(total=len(questions), unit="question", disable=not sys.stderr.isatty())
        pairs = calibrate(questions, collection, default_services(), progress=lambda done, total: bar.update(1))
        bar.close()
        answerable = sum(q.answerable for q in questions)
        self.stdout.write(
            f"{options['dataset']}: {answerable} answerable, {len(questions) - answerable} unanswerable questions"
        )
        chosen = {}
        for signal in SIGNALS:
            rows = tradeoff(pairs[signal])
            best = chosen[signal] = (
                best_row(rows) if options["max_wrong"] is None else most_answered_within(rows, options["max_wrong"])
            )
            self.stdout.write(f"\n{signal}: ROC AUC {roc_auc(pairs[signal]):.3f}")
            self.stdout.write(f"  {'threshold':>10} {'answered':>9} {'wrongly answered':>17}")
            step = max(1, len(rows) // 15)
            for row in rows[::step] + ([best] if best not in rows[::step] else []):
                mark = "  ← chosen" if row == best else ""
                self.stdout.write(f"  {row.threshold:>10.3f} {row.answered:>9.0%} {row.wrongly_answered:>17.0%}{mark}")
        used = SIGNALS[0]
        best = chosen[used]
        if options["dry_run"]:
            self.stdout.write(f"\n--dry-run: {used} ≥ {best.threshold:.3f} not stored.")
            return
        AbstentionThreshold.objects.create(
            collection=collection,
            signal=used,
            threshold=best.threshold,
            answered_rate=best.answered,
            wrongly_answered_rate=best.wrongly_answered,
            dataset=str(options["dataset"]),
        )
        self.stdout.write(
            f"\nStored for {collection.name}: abstain when {used} < {best.threshold:.3f} "
            f"(answers {best.answered:.0%} of answerable, {best.wrongly_answered:.0%} of unanswerable)."
        )
