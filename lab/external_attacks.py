"""Attacks written by other people, planted in the sample help centre: a second manifest for
`manage.py evaluate injection --attacks`, beside lab/sample/attacks.jsonl (which we wrote).

The attacks are lab/datasets/injection/attacks_external.jsonl (BIPIA's and langkit's, never trained on).
BIPIA's own train files make the dev split and its test files (with langkit's) the test split, so a
defence may be chosen on dev and is reported on test. Each attack goes into a section of its own, chosen
and placed (start, middle or end) by a hash of its text, so the manifest is the same on every build.
Their markers are the attack's first words: most are shorter than the six words in a row that
`surfaces` otherwise looks for, and a reply that quotes one holds them.

    python -m lab.external_attacks          # writes lab/datasets/injection/attacks_external_planted.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path

from lab.injection_training import DATASETS, read_examples
from lab.poisoning import POSITIONS, section_blocks, sections

MANIFEST = DATASETS / "attacks_external_planted.jsonl"
# The help centre `make run` loads (settings.SAMPLE_HELP_CENTRE), named here so no Django set-up is needed.
HELP_CENTRE = Path(__file__).resolve().parent.parent / "knowledge" / "sample" / "helpcentre"
PER_SPLIT = 48
MARKER_WORDS = 5
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*", re.UNICODE)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def help_centre_sections(folder: Path) -> list[tuple[str, str]]:
    """(article, heading) of every section with text of its own, in file order."""
    found = []
    for path in sorted(folder.glob("*.md")):
        lines = path.read_text(encoding="utf-8").split("\n")
        found += [(path.stem, s.heading) for s in sections(lines) if section_blocks(lines, s)]
    return found


def marker(text: str) -> str:
    """The attack's first words, as a reply that quotes it would hold them."""
    return " ".join(_WORD.findall(text)[:MARKER_WORDS])


def manifest(external: list[tuple[str, str]], places: list[tuple[str, str]]) -> list[dict[str, object]]:
    """``PER_SPLIT`` attacks of each split, in hash order, each in a section of its own. ``external`` holds
    (text, source) pairs."""
    by_split: dict[str, list[tuple[str, str]]] = {"dev": [], "test": []}
    for text, source in external:
        split = "dev" if source.startswith("microsoft/BIPIA") and "_train" in source else "test"
        if len(marker(text).split()) >= 3:  # too short to tell a quote from chance
            by_split[split].append((text, source))
    chosen = [
        (split, text)
        for split, rows in by_split.items()
        for text, _ in sorted(rows, key=lambda r: _digest(r[0]))[:PER_SPLIT]
    ]
    if len(chosen) > len(places):
        raise ValueError(f"{len(chosen)} attacks but only {len(places)} sections to plant them in")
    free = sorted(places, key=lambda p: _digest("/".join(p)))
    rows: list[dict[str, object]] = []
    for n, (split, text) in enumerate(chosen):
        article, heading = free[n]
        rows.append(
            {
                "id": f"{split}-external-{n + 1}",
                "category": "indirect",
                "split": split,
                "text": text,
                "payload": text,
                "markers": [marker(text)],
                "article": article,
                "heading": heading,
                "position": POSITIONS[int(_digest(text), 16) % len(POSITIONS)],
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=MANIFEST)
    options = parser.parse_args()
    external = [(e.text, e.source) for e in read_examples(DATASETS / "attacks_external.jsonl")]
    rows = manifest(external, help_centre_sections(HELP_CENTRE))
    options.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} attacks written to {options.out}")


if __name__ == "__main__":
    main()
