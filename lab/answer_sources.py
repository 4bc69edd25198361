"""Build the answer model's data (lab/datasets/answers/) from public sets with statement-level answer labels.

Reads bare git snapshots of public repositories (as `fetch` brings them, under /work/.mirror/owner+name/repo)
at recorded commits and writes JSON lines, one question a line, one file per split and source
(`train-selqa.jsonl`, …):

    {"source", "page", "question", "heading", "statements": [[heading, text], ...], "answers": [index, ...]}

Every statement of a line sits on the same page (a Wikipedia section, a hotel's or restaurant's FAQs and
reviews): the negatives are on-topic statements that do not answer, which is what a help centre's reader
has to tell apart. Pages are split train / dev / test by a hash of the page, so no page is in two splits.
See lab/datasets/answers/SOURCES.md.

    python -m lab.answer_sources --mirrors /work/.mirror     # also the collections of lab.answer_collections
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

OUT = Path(__file__).resolve().parent / "datasets" / "answers"
Row = dict[str, object]

SELQA = ("emorynlp/selqa", "fef3d6ac6944e2d4237165d90e5f859c71676bdd")
DSTC9 = ("alexa/alexa-with-dstc9-track1-dataset", "7ebb4c767b64826c1ac0f8bae409c0fab9cc0ae4")
DSTC11 = ("alexa/dstc11-track5", "1419e96d613870703399309c46c7e33cba558199")

# Negatives kept per question: enough on-topic statements to learn from, few enough to train in minutes.
MAX_NEGATIVES = 12
SPLITS = ("train", "dev", "test")
# The order the sources are read in, and their files' names (split_file).
SOURCE_NAMES = ("selqa", "dstc9", "dstc11")
# DSTC9's FAQ titles are templates repeated across hundreds of entities; a sample of them is enough.
MAX_FAQ_QUESTIONS = 3000


def show_at_commit(mirrors: Path, repo: tuple[str, str], path: str) -> bytes:
    git_dir = mirrors / repo[0].replace("/", "+") / "repo"
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{repo[1]}:{path}"], check=True, capture_output=True
    ).stdout


def split_of(page: str) -> str:
    """train (80 %), dev (10 %) or test (10 %), fixed by the page alone."""
    bucket = int(hashlib.sha256(page.encode()).hexdigest(), 16) % 10
    return "dev" if bucket == 0 else "test" if bucket == 1 else "train"


def selqa(mirrors: Path) -> Iterator[Row]:
    """SelQA answer-sentence selection: a question written about one Wikipedia section, every sentence of
    the section a candidate, the answering ones marked. Split by article."""
    for part in ("ass/selqa-ass-dev.json", "ass/selqa-ass-test.json"):
        for item in json.loads(show_at_commit(mirrors, SELQA, part)):
            if not item["answers"]:
                continue
            heading = f"{item['article']} › {item['section']}"
            yield {
                "source": f"{SELQA[0]}:{part}",
                "page": f"selqa:{item['article']}",
                "question": item["question"],
                "statements": [[heading, s] for s in item["candidates"]],
                "answers": sorted(item["answers"]),
            }


def _entity_page(domain: str, name: str | None) -> str:
    return f"dstc:{domain}:{(name or domain).lower()}"


def dstc9_faqs(mirrors: Path) -> Iterator[Row]:
    """DSTC9 track 1's FAQ knowledge: the FAQ's question asked, its answer the answering statement, the
    entity's other FAQ answers under the entity's name as on-topic statements that do not answer. The
    question heading is left out, or it would give the answer away."""
    rows: list[Row] = []
    seen: set[tuple[str, str]] = set()
    for part in ("data/knowledge.json", "data_eval/knowledge.json"):
        for domain, entities in json.loads(show_at_commit(mirrors, DSTC9, part)).items():
            for entity in entities.values():
                name = entity["name"] or domain
                docs = list(entity["docs"].values())
                for i, doc in enumerate(docs):
                    if (name, doc["title"]) in seen:
                        continue
                    seen.add((name, doc["title"]))
                    rows.append(
                        {
                            "source": f"{DSTC9[0]}:{part}",
                            "page": _entity_page(domain, entity["name"]),
                            "question": doc["title"],
                            "statements": [[name, d["body"]] for d in docs],
                            "answers": [i],
                        }
                    )
    random.Random(9).shuffle(rows)
    yield from rows[:MAX_FAQ_QUESTIONS]


def dstc11_turns(mirrors: Path) -> Iterator[Row]:
    """DSTC11 track 5 validation: a customer's turn in a booking dialogue, answered from an entity's FAQs
    (under their question heading) and its reviews' sentences; the labelled items answer, the entity's other
    items do not."""
    knowledge = json.loads(show_at_commit(mirrors, DSTC11, "data/knowledge.json"))
    logs = json.loads(show_at_commit(mirrors, DSTC11, "data/val/logs.json"))
    labels = json.loads(show_at_commit(mirrors, DSTC11, "data/val/labels.json"))
    for log, label in zip(logs, labels, strict=True):
        if not label["target"]:
            continue
        refs = label["knowledge"]
        domain, entity_id = refs[0]["domain"], str(refs[0]["entity_id"])
        if any(r["domain"] != domain or str(r["entity_id"]) != entity_id for r in refs):
            continue
        entity = knowledge[domain][entity_id]
        name = entity["name"]
        items: list[tuple[tuple[str, str, str], list[str]]] = []
        for doc_id, faq in entity["faqs"].items():
            items.append((("faq", doc_id, ""), [f"{name} › {faq['question']}", faq["answer"]]))
        for doc_id, review in entity["reviews"].items():
            for sent_id, sentence in review["sentences"].items():
                items.append((("review", doc_id, sent_id), [f"{name} › Reviews", sentence]))
        wanted = {(r["doc_type"], str(r["doc_id"]), "" if r["doc_type"] == "faq" else str(r["sent_id"])) for r in refs}
        positives = [statement for key, statement in items if key in wanted]
        negatives = [statement for key, statement in items if key not in wanted]
        question = next(turn["text"] for turn in reversed(log) if turn["speaker"] == "U")
        statements = positives + negatives
        order = list(range(len(statements)))
        random.Random(question + name).shuffle(order)
        yield {
            "source": f"{DSTC11[0]}:data/val",
            "page": _entity_page(domain, name),
            "question": question,
            "statements": [statements[i] for i in order],
            "answers": sorted(order.index(i) for i in range(len(positives))),
        }


def capped(row: Row) -> Row:
    """The row with its answers and at most MAX_NEGATIVES other statements (a fixed sample), in page order."""
    statements = list(row["statements"])  # type: ignore[call-overload]
    answers = set(row["answers"])  # type: ignore[call-overload]
    others = [i for i in range(len(statements)) if i not in answers]
    random.Random(str(row["question"]) + str(row["page"])).shuffle(others)
    kept = sorted([*answers, *others[:MAX_NEGATIVES]])
    return {**row, "statements": [statements[i] for i in kept], "answers": [kept.index(i) for i in sorted(answers)]}


def split_file(split: str, source: str) -> str:
    """One file per split and source: each source's rows stay under its own licence (share-alike licences
    of different terms never meet in one file)."""
    return f"{split}-{source}.jsonl"


def build(mirrors: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    OUT.mkdir(parents=True, exist_ok=True)
    for source, reader in zip(SOURCE_NAMES, (selqa, dstc9_faqs, dstc11_turns), strict=True):
        splits: dict[str, list[Row]] = {split: [] for split in SPLITS}
        for row in reader(mirrors):
            splits[split_of(str(row["page"]))].append(capped(row))
        for split, rows in splits.items():
            with (OUT / split_file(split, source)).open("w", encoding="utf-8") as out:
                for row in rows:
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
            counts[split] = counts.get(split, 0) + len(rows)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    mirrors = parser.parse_args().mirrors
    print(build(mirrors))
    # The collections are built from the held-out pages of these splits (imported here: they import this).
    from lab.answer_collections import build as build_collections

    print(build_collections(mirrors))


if __name__ == "__main__":
    main()
