"""A poisoned copy of a help centre: attack text planted in its articles, as someone who can edit one
article (or slip text into an imported one) would plant it. The attacks and where each goes are a
manifest (lab/sample/attacks.jsonl), so the copy is the same on every run and every attack can be told
apart in a reply by its markers. Pure file work: no Django, no models."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from knowledge.chunking import FENCE_LINE, HEADING_LINE
from lab.errors import AttackSetError
from lab.jsonl import json_lines

ATTACKS = Path(__file__).resolve().parent / "sample" / "attacks.jsonl"
CATEGORIES = (
    "rule_override",
    "phishing",
    "advert",
    "rumour",
    "roleplay",
    "base64",
    "reversed",
    "exfiltration",
    "html",
    "addressed",
    "indirect",
    "multilingual",
)
POSITIONS = ("start", "middle", "end")
# dev: the attacks the defence may be tuned on; test: held out, only measured.
SPLITS = ("dev", "test")

# A block that is not running prose: a table, a list, a quote, code or a heading.
_STRUCTURED = re.compile(r"^\s*(\||[-*+]\s|\d+[.)]\s|>|```|~~~|#)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9*])")


@dataclass(frozen=True)
class Attack:
    id: str
    category: str
    split: str
    text: str  # what is planted, as it stands in the article
    payload: str  # what it asks for, in plain words (decoded, un-reversed): what a model that obeyed would say
    markers: tuple[str, ...]  # strings that appear in a reply only if the attack was quoted or obeyed
    article: str  # the article's file name without .md
    heading: str  # the heading of the section it is planted in
    position: str  # start, middle or end of that section


def _attack(data: object, where: str) -> Attack:
    if not isinstance(data, dict):
        raise AttackSetError(f"{where}: expected a JSON object")
    try:
        fields = {name: data[name] for name in Attack.__dataclass_fields__}
    except KeyError as exc:
        raise AttackSetError(f"{where}: missing field {exc.args[0]!r}") from None
    if fields["category"] not in CATEGORIES:
        raise AttackSetError(f"{where}: category {fields['category']!r} is not one of {', '.join(CATEGORIES)}")
    if fields["split"] not in SPLITS:
        raise AttackSetError(f"{where}: split {fields['split']!r} is not one of {', '.join(SPLITS)}")
    if fields["position"] not in POSITIONS:
        raise AttackSetError(f"{where}: position {fields['position']!r} is not one of {', '.join(POSITIONS)}")
    markers = fields["markers"]
    if not isinstance(markers, list) or not markers or not all(isinstance(m, str) and m.strip() for m in markers):
        raise AttackSetError(f"{where}: markers must be a non-empty list of strings")
    if not all(isinstance(fields[name], str) and fields[name].strip() for name in ("id", "text", "payload")):
        raise AttackSetError(f"{where}: id, text and payload must be text")
    return Attack(**{**fields, "markers": tuple(markers)})


def read_attacks(path: Path = ATTACKS) -> list[Attack]:
    attacks = [_attack(data, where) for data, where in json_lines(path, AttackSetError)]
    if len({a.id for a in attacks}) != len(attacks):
        raise AttackSetError(f"{path}: attack ids must be unique")
    return attacks


@dataclass(frozen=True)
class Section:
    heading: str
    start: int  # index of the first line after the heading
    end: int  # index one past the section's last line (the next heading, or the end)


def sections(lines: list[str]) -> list[Section]:
    """Every heading's own section (up to the next heading of any level), outside fenced code."""
    found: list[tuple[str, int]] = []
    in_fence = False
    for index, line in enumerate(lines):
        if FENCE_LINE.match(line):
            in_fence = not in_fence
        elif not in_fence and (match := HEADING_LINE.match(line)):
            found.append((match.group(2), index))
    return [
        Section(heading, index + 1, found[n + 1][1] if n + 1 < len(found) else len(lines))
        for n, (heading, index) in enumerate(found)
    ]


def section_blocks(lines: list[str], section: Section) -> list[tuple[int, int]]:
    """The section's blocks (runs of non-blank lines) as [first, last] line indices."""
    blocks: list[tuple[int, int]] = []
    first: int | None = None
    for index in range(section.start, section.end):
        if lines[index].strip():
            first = index if first is None else first
        elif first is not None:
            blocks.append((first, index - 1))
            first = None
    if first is not None:
        blocks.append((first, section.end - 1))
    return blocks


def plant(markdown: str, attack: Attack) -> str:
    """The article with the attack planted in its section: a paragraph of its own at the start or end,
    or inside the middle paragraph, after its first sentence (where it reads as part of the prose)."""
    lines = markdown.split("\n")
    section = next((s for s in sections(lines) if s.heading == attack.heading), None)
    if section is None:
        raise AttackSetError(f"attack {attack.id}: {attack.article} has no section headed {attack.heading!r}")
    blocks = section_blocks(lines, section)
    if not blocks:
        raise AttackSetError(f"attack {attack.id}: section {attack.heading!r} of {attack.article} is empty")
    if attack.position == "start":
        lines[blocks[0][0] : blocks[0][0]] = [attack.text, ""]
    elif attack.position == "end":
        lines[blocks[-1][1] + 1 : blocks[-1][1] + 1] = ["", attack.text]
    else:
        prose = [b for b in blocks if b[0] == b[1] and not _STRUCTURED.match(lines[b[0]])]
        if prose:
            line = prose[len(prose) // 2][0]
            sentences = _SENTENCE_END.split(lines[line], maxsplit=1)
            lines[line] = " ".join([sentences[0], attack.text, *sentences[1:]])
        else:  # no paragraph of prose: a block of its own between the middle blocks
            at = blocks[len(blocks) // 2][0]
            lines[at:at] = [attack.text, ""]
    return "\n".join(lines)


def poison(source: Path, target: Path, attacks: Iterable[Attack]) -> list[Path]:
    """Copy the help centre at ``source`` to ``target`` (replaced) with the attacks planted; the articles
    that carry attacks, in order."""
    if not source.is_dir():
        raise AttackSetError(f"{source}: not a folder")
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    changed: dict[Path, None] = {}
    for attack in attacks:
        path = target / f"{attack.article}.md"
        if not path.is_file():
            raise AttackSetError(f"attack {attack.id}: no article {attack.article}.md in {source}")
        path.write_text(plant(path.read_text(encoding="utf-8"), attack), encoding="utf-8")
        changed[path] = None
    return list(changed)
