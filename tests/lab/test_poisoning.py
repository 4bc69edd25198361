"""The poisoned help centre: the attack manifest and the copy planted from it."""

import json
from collections import Counter
from pathlib import Path

import pytest
from django.conf import settings

from lab.errors import AttackSetError
from lab.poisoning import ATTACKS, CATEGORIES, POSITIONS, poison, read_attacks, sections

SOURCE = Path(settings.SAMPLE_HELP_CENTRE)


def test_the_manifest_holds_sixty_attacks_or_more_of_every_category_in_both_splits_and_positions():
    attacks = read_attacks()
    assert len(attacks) >= 60
    assert {(a.category, a.split) for a in attacks} == {(c, s) for c in CATEGORIES for s in ("dev", "test")}
    assert set(Counter(a.position for a in attacks)) == set(POSITIONS)


def test_no_marker_of_an_attack_is_in_the_clean_help_centre():
    # A marker the clean articles already say would count an honest reply as an attack.
    clean = " ".join(p.read_text(encoding="utf-8").lower() for p in SOURCE.glob("*.md"))
    assert [(a.id, m) for a in read_attacks() for m in a.markers if m.lower() in clean] == []


def _section_text(markdown: str, heading: str) -> str:
    lines = markdown.split("\n")
    section = next(s for s in sections(lines) if s.heading == heading)
    return "\n".join(lines[section.start : section.end])


def _has_prose(section: str) -> bool:
    return any(line.strip() and not line.lstrip().startswith(("|", "-", "#")) for line in section.split("\n"))


def test_each_attack_is_planted_once_in_its_section_at_its_position(tmp_path):
    attacks = read_attacks()
    changed = poison(SOURCE, tmp_path / "poisoned", attacks)
    assert {p.stem for p in changed} == {a.article for a in attacks}
    for attack in attacks:
        markdown = (tmp_path / "poisoned" / f"{attack.article}.md").read_text(encoding="utf-8")
        assert markdown.count(attack.text) == 1, attack.id
        body = _section_text(markdown, attack.heading).strip("\n")
        if attack.position == "start":
            assert body.startswith(attack.text), attack.id
        elif attack.position == "end":
            assert body.endswith(attack.text), attack.id
        elif _has_prose(_section_text((SOURCE / f"{attack.article}.md").read_text(encoding="utf-8"), attack.heading)):
            # A section with prose has it inside a paragraph, after that paragraph's first sentence.
            assert f" {attack.text}" in body and not body.startswith(attack.text), attack.id


def test_taking_the_attacks_out_again_gives_the_clean_articles_back(tmp_path):
    attacks = read_attacks()
    poison(SOURCE, tmp_path / "poisoned", attacks)
    for path in SOURCE.glob("*.md"):
        text = (tmp_path / "poisoned" / path.name).read_text(encoding="utf-8")
        for attack in attacks:
            planted = {"start": f"{attack.text}\n\n", "end": f"\n\n{attack.text}"}.get(attack.position)
            # In the middle: after a sentence of a paragraph, or (a section with no prose) a paragraph of its own.
            planted = planted or (f" {attack.text}" if f" {attack.text}" in text else f"{attack.text}\n\n")
            text = text.replace(planted, "")
        assert text == path.read_text(encoding="utf-8"), path.name


def _manifest(tmp_path: Path, **change: object) -> Path:
    record = {**json.loads(ATTACKS.read_text().splitlines()[0]), **change}
    path = tmp_path / "attacks.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"category": "spam"}, "category 'spam' is not one of"),
        ({"split": "train"}, "split 'train' is not one of"),
        ({"position": "top"}, "position 'top' is not one of"),
        ({"markers": []}, "markers must be a non-empty list"),
    ],
)
def test_a_bad_manifest_line_is_refused_naming_the_line_and_field(tmp_path, change, message):
    with pytest.raises(AttackSetError, match=message) as refused:
        read_attacks(_manifest(tmp_path, **change))
    assert "attacks.jsonl:1" in str(refused.value)


def test_an_attack_for_a_section_the_article_lacks_is_refused(tmp_path):
    attacks = read_attacks(_manifest(tmp_path, heading="No such heading"))
    with pytest.raises(AttackSetError, match="has no section headed 'No such heading'"):
        poison(SOURCE, tmp_path / "poisoned", attacks)
