"""Help-centre-like collections built from others' writing, for fitting and checking the answer decision on
documents nobody here wrote: SelQA's held-out Wikipedia pages (the answer model's dev and test splits, never
trained on) as Markdown articles, one section per SelQA section, with labelled questions in calibrate's format.

Of each split's pages, about seven in ten are written as articles; the questions about them are answerable,
their fact the sentence SelQA marks as the answer. The questions about the other pages, of the same topics
(countries, films, sports …), are asked of the same collection: related, and not answerable from it.

    python -m lab.answer_sources --mirrors /work/.mirror     # also writes lab/datasets/answers/collections/
    manage.py ingest lab/datasets/answers/collections/selqa-dev --collection selqa-dev
    manage.py calibrate --dataset lab/datasets/answers/collections/selqa-dev.jsonl@selqa-dev --dry-run
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path

from lab.answer_sources import OUT, SELQA, show_at_commit, split_of

COLLECTIONS = OUT / "collections"
# Share of a split's pages written as articles; questions about the rest are the unanswerable ones.
WRITTEN_SHARE = 7


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _written(page: str) -> bool:
    return int(hashlib.sha256(f"written:{page}".encode()).hexdigest(), 16) % 10 < WRITTEN_SHARE


def build(mirrors: Path) -> dict[str, dict[str, int]]:
    items = [
        item
        for part in ("ass/selqa-ass-dev.json", "ass/selqa-ass-test.json")
        for item in json.loads(show_at_commit(mirrors, SELQA, part))
        if item["answers"]
    ]
    counts: dict[str, dict[str, int]] = {}
    for split in ("dev", "test"):
        name = f"selqa-{split}"
        mine = [i for i in items if split_of(f"selqa:{i['article']}") == split]
        sections: dict[str, dict[str, list[str]]] = defaultdict(dict)
        for item in mine:
            if _written(item["article"]):
                sections[item["article"]].setdefault(item["section"], item["candidates"])
        folder = COLLECTIONS / name
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.md"):
            old.unlink()
        for article, by_section in sorted(sections.items()):
            body = "".join(f"## {section}\n\n{' '.join(text)}\n\n" for section, text in by_section.items())
            (folder / f"{_slug(article)}.md").write_text(
                f"---\nid: {_slug(article)}\ntitle: {json.dumps(article)}\nversion: '1'\n"
                f"effective_date: 2026-01-01\naudience: public\n---\n\n# {article}\n\n{body}",
                encoding="utf-8",
            )
        with (COLLECTIONS / f"{name}.jsonl").open("w", encoding="utf-8") as out:
            for item in mine:
                written = item["article"] in sections
                out.write(
                    json.dumps(
                        {
                            "question": item["question"],
                            "audience": "public",
                            "answerable": written,
                            "article": _slug(item["article"]) if written else None,
                            "answer": item["candidates"][item["answers"][0]] if written else None,
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
        answerable = sum(1 for i in mine if i["article"] in sections)
        counts[name] = {"articles": len(sections), "answerable": answerable, "unanswerable": len(mine) - answerable}
    return counts
