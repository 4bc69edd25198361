"""Labelled questions we wrote over public help centres, as `calibrate` and `evaluate kinds` read them: each
question's page becomes the article id `ingest` gives that page (lab/datasets/helpcentre_questions/).

    python -m lab.helpcentre_questions WRITTEN.jsonl PAGES_FOLDER OUT.jsonl
"""

from __future__ import annotations

import argparse
import json
from datetime import date
from pathlib import Path

from knowledge.sources import parse_page


def article_ids(folder: Path) -> dict[str, str]:
    """Each page's path in the folder, and the article id ingest gives it."""
    ids = {}
    for path in sorted(folder.rglob("*")):
        if path.suffix.lower() in (".md", ".mdx", ".markdown") and path.is_file():
            relative = path.relative_to(folder).as_posix()
            read = parse_page(
                str(path), relative, path.read_bytes(), kind="markdown", max_bytes=10**7, today=date.today()
            )
            if read.document is not None:
                ids[relative] = read.document.slug
    return ids


def convert(written: Path, folder: Path, out: Path) -> int:
    ids = article_ids(folder)
    rows = []
    for number, line in enumerate(written.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        page = row.get("page")
        if page is not None and page not in ids:
            raise SystemExit(f"{written}:{number}: no page {page!r} in {folder}")
        rows.append(
            {
                "question": row["question"],
                "audience": row["audience"],
                "answerable": row["answerable"],
                "article": ids[page] if page is not None else None,
                "answer": row["answer"],
                "shape": row["shape"],
            }
        )
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("written", type=Path)
    parser.add_argument("folder", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    print(f"{convert(args.written, args.folder, args.out)} questions written to {args.out}")


if __name__ == "__main__":
    main()
