"""Asides, measured: how the reader's shape rule (knowledge/statements.py, aside_kind) tells a help centre's
asides (an invitation to get in touch, a greeting or cheer, a marketing aside, navigation text) from its
statements, against labels written by hand over two public help centres (lab/datasets/boilerplate/). The
rule was written looking at Plausible's statements (dev); Wagtail's (test) were not looked at until it was."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from knowledge.statements import aside_kind
from lab.errors import AsideDataError
from lab.jsonl import json_lines

DATA = Path(__file__).resolve().parent / "datasets" / "boilerplate"
SPLITS = {"plausible": "dev", "wagtail": "test"}


def asides_report(folder: Path = DATA) -> list[str]:
    lines = [
        "source (split): statements, labelled asides, flagged, precision, recall; recall per labelled kind; "
        "statements the rule would keep from the reader wrongly"
    ]
    for source, split in SPLITS.items():
        statements = {row["id"]: row for row, _ in json_lines(folder / f"statements_{source}.jsonl", AsideDataError)}
        labels = {row["id"]: row for row, _ in json_lines(folder / f"labels_{source}.jsonl", AsideDataError)}
        if set(labels) != set(statements):
            raise AsideDataError(
                f"labels_{source}.jsonl does not label exactly the statements of statements_{source}.jsonl"
            )
        flagged = {key for key, row in statements.items() if aside_kind(str(row["text"])) is not None}
        asides = {key for key, row in labels.items() if row["label"] == 1}
        hit = flagged & asides
        precision = len(hit) / len(flagged) if flagged else 1.0
        recall = len(hit) / len(asides) if asides else 1.0
        kinds = Counter(str(labels[k]["kind"]) for k in asides)
        found = Counter(str(labels[k]["kind"]) for k in hit)
        per_kind = ", ".join(f"{kind} {found[kind]}/{n}" for kind, n in sorted(kinds.items()))
        lines.append(
            f"{source} ({split}): {len(statements)} statements, {len(asides)} asides, {len(flagged)} flagged, "
            f"precision {precision:.2f}, recall {recall:.2f}; {per_kind}"
        )
        for key in sorted(flagged - asides, key=lambda k: str(statements[k]["text"])):
            lines.append(f"  wrongly flagged ({aside_kind(str(statements[key]['text']))}): {statements[key]['text']}")
    return lines
