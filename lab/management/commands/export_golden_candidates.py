"""manage.py export_golden_candidates: golden-set candidates staff made from real turns, as JSON lines."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lab.golden_candidates import golden_jsonl
from lab.models import GoldenCandidate


class Command(BaseCommand):
    help = (
        "Write every golden-set candidate staff made from real turns to a JSON-lines file in the golden set's "
        "format (lab/sample/GOLDEN.md), for `manage.py evaluate answers --dataset FILE` or to merge into it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", type=Path, required=True, help="The file to write (replaced if it exists).")

    def handle(self, *args: Any, **options: Any) -> None:
        out: Path = options["out"]
        if not out.parent.is_dir():
            raise CommandError(f"{out.parent}: no such folder")
        candidates = list(GoldenCandidate.objects.all())
        out.write_text(golden_jsonl(candidates), encoding="utf-8")
        self.stdout.write(f"Wrote {len(candidates)} candidate(s) to {out}.")
