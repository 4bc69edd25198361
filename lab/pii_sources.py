"""Personal-data evaluation sets converted from public labelled text that others wrote and annotated.

The synthetic set of lab.pii_set is written by us, so a masker tuned on it can learn our own phrasings;
these sets measure it on other people's text and labels instead. Two sources, read from GitHub
snapshots fetched as bare git directories (see lab/datasets/pii/SOURCES.md for licences and commits):

- microsoft/presidio-research data/synth_dataset_v2.json: template sentences filled with fake PII,
  character spans labelled (PERSON, STREET_ADDRESS, PHONE_NUMBER, CREDIT_CARD, IBAN_CODE, US_SSN, ...).
- leondz/emerging_entities_17 (WNUT-17): tokenised tweets, Reddit, YouTube and Stack Overflow text
  with BIO tags; only person names count as personal data here.

Each record is split into dev or test by a hash of its group key (the presidio template, the WNUT
sentence), so both splits hold both sources and no presidio template appears in both.

    python -m lab.pii_sources --presidio /work/.mirror/microsoft+presidio-research/repo \
        --wnut /work/.mirror/leondz+emerging_entities_17/repo --out lab/datasets/pii
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

from lab.pii_set import KEPT_KINDS, PERSONAL_KINDS

PRESIDIO_COMMIT = "7622dec1e5f7d25dc60b57c28c39f4c4af197018"
PRESIDIO_FILE = "data/synth_dataset_v2.json"
WNUT_COMMIT = "e52a2d2a71ac1a051ca2d532eef28653c5c02603"
# The official dev file and the gold-annotated test file; both are pooled and re-split by our hash.
WNUT_FILES = ("emerging.dev.conll", "emerging.test.annotated")
MAX_CHARS = 1000

# Presidio labels that are personal data in our sense; GPE, ZIP_CODE, ORGANIZATION, TITLE, AGE, NRP,
# DOMAIN_NAME and IP_ADDRESS are dropped: city, country or job title alone does not identify anyone.
PRESIDIO_PERSONAL = {
    "PERSON": "PERSON",
    "PHONE_NUMBER": "PHONE_NUMBER",
    "CREDIT_CARD": "CREDIT_CARD",
    "EMAIL_ADDRESS": "EMAIL_ADDRESS",
    "IBAN_CODE": "IBAN_CODE",
    "US_SSN": "NATIONAL_ID",
    "US_DRIVER_LICENSE": "NATIONAL_ID",  # a government-issued personal number, like a passport number
}
PRESIDIO_KEPT = {"DATE_TIME": "DATE"}
# Where the street part of a presidio address ends: at a comma (except "PSC 1234, Box 56") or at a line
# break that does not lead to a secondary unit ("Apt. 864", "Suite 510").
# Some templates quote the address with "> " or "??? " before each line; those marks are skipped too.
ADDRESS_END = re.compile(r",(?! Box\b)|\n(?![\s>?]*(?:Apt|Suite|Unit|Box)\b)")
GAP = re.compile(r"[\s>?]*")
SECONDARY = re.compile(r"(?:Apt|Suite|Unit|Box)\b")


class Span(TypedDict):
    kind: str
    start: int
    end: int
    value: str


Record = dict[str, Any]  # text, personal and kept spans, template: a line of lab/datasets/pii/*.jsonl


def git_show(git_dir: Path, commit: str, path: str) -> str:
    """A file of a bare mirror at a pinned commit, so the rebuild does not drift with the snapshot."""
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def span(text: str, kind: str, start: int, end: int) -> Span:
    return {"kind": kind, "start": start, "end": end, "value": text[start:end]}


def street_spans(text: str, raw: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Presidio's address spans cut down to street, number and unit, as our labels define an address.

    Presidio labels some addresses whole (street, city, country and postcode in one span) and others in
    pieces ("41086", "Kiannonkatu 98", "Suite 464", ..., "80896"); pieces split only by spaces, or by a
    line break before a unit, are one address, and a piece without a letter (a lone postcode) is dropped.
    """
    merged: list[tuple[int, int]] = []
    for start, end in sorted(raw):
        gap = text[merged[-1][1] : start] if merged else "x"
        if GAP.fullmatch(gap) and ("\n" not in gap or SECONDARY.match(text, start)):
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    result = []
    for start, end in merged:
        cut = ADDRESS_END.search(text, start, end)
        end = cut.start() if cut else end
        while end > start and text[end - 1].isspace():
            end -= 1
        if any(ch.isalpha() for ch in text[start:end]):
            result.append((start, end))
    return result


def presidio_records(git_dir: Path) -> Iterator[tuple[str, Record]]:
    for index, item in enumerate(json.loads(git_show(git_dir, PRESIDIO_COMMIT, PRESIDIO_FILE))):
        text: str = item["full_text"]
        personal, kept, addresses = [], [], []
        for s in item["spans"]:
            label, start, end = s["entity_type"], s["start_position"], s["end_position"]
            if label == "STREET_ADDRESS":
                addresses.append((start, end))
            elif label in PRESIDIO_PERSONAL:
                personal.append(span(text, PRESIDIO_PERSONAL[label], start, end))
            elif label in PRESIDIO_KEPT:
                kept.append(span(text, PRESIDIO_KEPT[label], start, end))
        personal += [span(text, "STREET_ADDRESS", s, e) for s, e in street_spans(text, addresses)]
        group = f"presidio-synth:t{item['template_id']}"
        yield group, {"text": text, "personal": personal, "kept": kept, "template": f"{group}:{index}"}


def wnut_records(git_dir: Path) -> Iterator[tuple[str, Record]]:
    """One record per WNUT sentence, tokens joined by single spaces (the corpus ships only tokens)."""
    for name in WNUT_FILES:
        for number, block in enumerate(git_show(git_dir, WNUT_COMMIT, name).strip().split("\n\n")):
            text, personal, open_start = "", [], -1
            for line in block.splitlines():
                token, _, tag = line.partition("\t")
                if open_start >= 0 and tag != "I-person":  # a person name ends where its I- tags do
                    personal.append(span(text, "PERSON", open_start, len(text)))
                    open_start = -1
                text += (" " if text else "") + token
                if tag == "B-person":
                    open_start = len(text) - len(token)
            if open_start >= 0:
                personal.append(span(text, "PERSON", open_start, len(text)))
            group = f"wnut17:{name}:{number}"
            yield group, {"text": text, "personal": personal, "kept": [], "template": group}


def chunks(record: Record) -> Iterator[Record]:
    """Records cut below MAX_CHARS at line or sentence ends that no labelled span crosses."""
    text: str = record["text"]
    spans: list[Span] = [*record["personal"], *record["kept"]]
    offset, part = 0, 0
    while offset < len(text):
        end = len(text)
        if end - offset > MAX_CHARS:
            cuts = [m.end() for m in re.finditer(r"\n|[.!?] ", text[offset : offset + MAX_CHARS])]
            cuts = [offset + c for c in cuts if not any(s["start"] < offset + c < s["end"] for s in spans)]
            end = cuts[-1] if cuts else offset + MAX_CHARS
        piece = text[offset:end]

        def inside(kind_key: str, lo: int = offset, hi: int = end, piece: str = piece) -> list[Span]:
            return [
                span(piece, s["kind"], s["start"] - lo, s["end"] - lo)
                for s in record[kind_key]
                if lo <= s["start"] and s["end"] <= hi
            ]

        suffix = f"#{part}" if offset or end < len(text) else ""
        yield {"text": piece, "personal": inside("personal"), "kept": inside("kept"),
               "template": f"{record['template']}{suffix}"}  # fmt: skip
        offset, part = end, part + 1


def check(record: Record) -> None:
    """Every value must equal its text slice, as lab.pii_evaluation.read_pii_set demands."""
    text: str = record["text"]
    for key, allowed in (("personal", PERSONAL_KINDS), ("kept", KEPT_KINDS)):
        for s in record[key]:
            assert s["kind"] in allowed and 0 <= s["start"] < s["end"] <= len(text), s
            assert text[s["start"] : s["end"]] == s["value"], (record["template"], s)


def split_of(group: str) -> str:
    """dev or test from a stable hash of the group key: deterministic, about half each."""
    return "dev" if hashlib.sha256(group.encode()).digest()[0] % 2 == 0 else "test"


def build(presidio: Path, wnut: Path, out: Path) -> dict[str, Counter[str]]:
    """Write dev.jsonl and test.jsonl under out; returns the counts per split of records and kinds."""
    out.mkdir(parents=True, exist_ok=True)
    splits: dict[str, list[Record]] = {"dev": [], "test": []}
    counts: dict[str, Counter[str]] = {"dev": Counter(), "test": Counter()}
    for group, record in [*presidio_records(presidio), *wnut_records(wnut)]:
        for piece in chunks(record):
            check(piece)
            name = split_of(group)
            splits[name].append(piece)
            source = group.split(":")[0]
            counts[name][f"records {source}"] += 1
            for key in ("personal", "kept"):
                counts[name].update(f"{key} {s['kind']} {source}" for s in piece[key])
    for name, records in splits.items():
        lines = (json.dumps(r, ensure_ascii=False) for r in records)
        (out / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presidio", type=Path, required=True, help="bare git dir of microsoft/presidio-research")
    parser.add_argument("--wnut", type=Path, required=True, help="bare git dir of leondz/emerging_entities_17")
    parser.add_argument("--out", type=Path, default=Path("lab/datasets/pii"))
    args = parser.parse_args()
    for name, counter in build(args.presidio, args.wnut, args.out).items():
        print(name)
        for key, value in sorted(counter.items()):
            print(f"  {key}: {value}")


if __name__ == "__main__":
    main()
