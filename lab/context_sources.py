"""Sections of documentation written by others, with attacks planted into some of them: the data of the
off-subject experiment (lab/off_subject.py).

The sections are those of the task-switch data's help-centre-like manuals (wagtail's guide, the jitsi
handbook, Microsoft's Office and Outlook support articles; `lab/task_switch_sources.DOCS`, same commits),
split the way ingestion reads an article (lab.off_subject.section_statements). Each section
gives up to three rows that judge one of its own statements (label 0) and one row that judges an attack
planted into it (label 1), at a place chosen by hash. Attacks come from the detector's own training files
on the same side of the split (train.jsonl and task_switch_train.jsonl for train, the dev files for dev);
documents are split by path: a tenth held out as test (documentation only), a fifth of the rest as dev.

    python -m lab.context_sources --mirrors /work/.mirror   # writes lab/datasets/injection/context_*.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

from lab.injection_training import DATASETS, read_examples
from lab.off_subject import SectionStatements, section_statements
from lab.task_switch_sources import DOCS, files, show

SPLITS = ("train", "dev", "test")
# Sections of a sensible size: one statement says nothing about a subject; very long ones are pages of
# reference tables.
MIN_STATEMENTS, MAX_STATEMENTS = 2, 16
BENIGN_PER_SECTION = 3
# Attack texts a section could hold: the long jailbreak prompts of the training files are whole pages.
MAX_ATTACK_CHARS = 300
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)


def _hash(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16)


def split_of(document: str) -> str:
    bucket = _hash(document) % 10
    return "test" if bucket == 0 else "dev" if bucket <= 2 else "train"


def doc_sections(mirrors: Path) -> Iterator[tuple[str, SectionStatements]]:
    """(document, section) of every manual page, in path order."""
    for repo, commit, prefix in DOCS:
        for path in files(mirrors, repo, commit, prefix):
            if not path.endswith(".md") or "release" in path.lower():
                continue
            text = _FRONT_MATTER.sub("", show(mirrors, repo, commit, path))
            for section in section_statements(text):
                if MIN_STATEMENTS <= len(section.statements) <= MAX_STATEMENTS:
                    yield f"{repo}:{path}", section


def attack_pool(split: str) -> list[tuple[str, str]]:
    """(text, source) of the attacks a section of ``split`` may have planted, in hash order."""
    names = {"train": ("train.jsonl", "task_switch_train.jsonl"), "dev": ("dev.jsonl", "task_switch_dev.jsonl")}
    found = {
        e.text: e.source
        for name in names[split]
        for e in read_examples(DATASETS / name)
        if e.label == 1 and len(e.text) <= MAX_ATTACK_CHARS
    }
    return sorted(found.items(), key=lambda pair: _hash(pair[0]))


def rows_of(
    section_id: str, section: SectionStatements, split: str, attacks: list[tuple[str, str]]
) -> list[dict[str, object]]:
    """A section's rows: some of its statements judged as they stand, and (outside test) one attack planted."""
    count = len(section.statements)
    order = sorted(range(count), key=lambda i: _hash(f"{section_id}#{i}"))
    rows: list[dict[str, object]] = [
        {"section": section_id, "index": i, "attack": None, "label": 0} for i in sorted(order[:BENIGN_PER_SECTION])
    ]
    if split != "test":
        key = _hash(section_id)
        attack, source = attacks[key % len(attacks)]
        rows.append(
            {"section": section_id, "index": key % (count + 1), "attack": attack, "attack_source": source, "label": 1}
        )
    return rows


def build(mirrors: Path, out: Path) -> dict[str, int]:
    pools = {split: attack_pool(split) for split in ("train", "dev")}
    sections: list[str] = []
    rows: dict[str, list[dict[str, object]]] = {split: [] for split in SPLITS}
    seen: set[tuple[str, ...]] = set()
    for document, section in doc_sections(mirrors):
        if section.statements in seen:  # shared boilerplate sections of several pages
            continue
        seen.add(section.statements)
        section_id = f"{document}#{len(sections)}"
        split = split_of(document)
        sections.append(
            json.dumps(
                {"id": section_id, "split": split, "heading": section.heading, "statements": section.statements},
                ensure_ascii=False,
            )
        )
        rows[split] += rows_of(section_id, section, split, pools.get(split, []))
    (out / "context_sections.jsonl").write_text("\n".join(sections) + "\n", encoding="utf-8")
    for split, found in rows.items():
        (out / f"context_{split}.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in found), encoding="utf-8"
        )
    return {"sections": len(sections), **{split: len(found) for split, found in rows.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True, help="folder of fetched git mirrors (owner+name)")
    parser.add_argument("--out", type=Path, default=DATASETS)
    options = parser.parse_args()
    print(build(options.mirrors, options.out))


if __name__ == "__main__":
    main()
