"""The statements of two public help centres, as the reader would quote them, for labelling which are
boilerplate (an invitation to get in touch, a greeting or sign-off, a marketing aside, navigation text)
and which say something a customer could be answered with (lab/datasets/boilerplate/).

Reads bare git snapshots (as `fetch` brings them, under /work/.mirror/owner+name/repo); each page goes
through ingestion's own reading (front matter, site markup, chunking by headings) and the reader's own
statements. Writes {"id", "source", "page", "heading_path", "text", "kind", "first", "last"} rows; the
labels are written apart (labels.jsonl), by hand, as the data card says.

    python -m lab.boilerplate_sources --mirrors /work/.mirror
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
from datetime import date
from pathlib import Path

from knowledge.chunking import HEADING_SEPARATOR, join_units, parse_sections
from knowledge.cleaning import clean_markdown
from knowledge.sources import parse_page
from knowledge.statements import passage_statements

OUT = Path(__file__).resolve().parent / "datasets" / "boilerplate"
# (repository, commit, folder of pages): Plausible's docs to fit the rule on, Wagtail's editor guide to test it.
SOURCES = {
    "plausible": ("plausible/docs", "208d58cab715dffc0ab4e3bd100b2ed0c0e7a0c0", "docs/"),
    "wagtail": ("wagtail/guide", "2739292a70749906e4a3023207ab889d896ee180", "prompts/content/en/"),
}
PAGES_PER_SOURCE = 30


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(repo), *args], check=True, capture_output=True).stdout


def page_rows(source: str, name: str, raw: bytes) -> list[dict[str, object]]:
    read = parse_page(name, name, raw, kind="markdown", max_bytes=1_000_000, today=date(2026, 1, 1))
    if read.document is None:
        return []
    sections = parse_sections(clean_markdown(read.document.body), lambda text: len(text.split()))
    statements = [
        (HEADING_SEPARATOR.join(section.heading_path), s)
        for section in sections
        for s in passage_statements(join_units(section.units))
    ]
    rows = []
    for i, (heading_path, s) in enumerate(statements):
        key = hashlib.sha256(f"{source}|{name}|{i}|{s.text}".encode()).hexdigest()[:12]
        rows.append(
            {
                "id": key,
                "source": source,
                "page": name,
                "heading_path": heading_path,
                "text": s.text,
                "kind": s.kind,
                "first": i == 0,
                "last": i == len(statements) - 1,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for source, (repo, commit, folder) in SOURCES.items():
        git_dir = args.mirrors / repo.replace("/", "+") / "repo"
        names = sorted(
            n
            for n in _git(git_dir, "ls-tree", "-r", "--name-only", commit, folder).decode().splitlines()
            if n.endswith((".md", ".mdx")) and "/releases/" not in n
        )
        # Every page in a stable spread over the source, not only the first ones alphabetically.
        step = max(1, len(names) // PAGES_PER_SOURCE)
        chosen = names[::step][:PAGES_PER_SOURCE]
        rows = [r for n in chosen for r in page_rows(source, n, _git(git_dir, "show", f"{commit}:{n}"))]
        with (OUT / f"statements_{source}.jsonl").open("w") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"{source}: {len(rows)} statements from {len(chosen)} pages")


if __name__ == "__main__":
    main()
