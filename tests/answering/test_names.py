"""The name tagger of our own: labelled words become entities, and the shipped model finds names however a
customer types them, in short messages and long ones."""

from __future__ import annotations

import pytest
from django.conf import settings

from answering.privacy.masking import mask_pii
from answering.privacy.names import LABELS, NameTagger, _Word, name_tagger, spans_of


def words(*labels: str) -> list[_Word]:
    """One word of three characters per label, a space between them."""
    return [_Word(4 * i, 4 * i + 3, LABELS.index(label), 0.9) for i, label in enumerate(labels)]


def test_bio_labels_become_entities_and_a_stray_inside_label_still_marks_one():
    found = spans_of(words("B-PER", "I-PER", "O", "B-LOC"))
    assert [(s.entity, s.start, s.end) for s in found] == [("PER", 0, 7), ("LOC", 12, 15)]
    assert [s.score for s in found] == pytest.approx([0.9, 0.9])
    # I- after O, and a change of type without B-, each start an entity of their own.
    assert [(s.entity, s.start, s.end) for s in spans_of(words("O", "I-ORG", "I-PER", "B-PER"))] == [
        ("ORG", 4, 7),
        ("PER", 8, 11),
        ("PER", 12, 15),
    ]
    assert spans_of(words("O", "O")) == []


@pytest.fixture(scope="module")
def tagger() -> NameTagger:
    return NameTagger(settings.BASE_DIR / "answering" / "privacy" / "name_tagger")


@pytest.mark.parametrize(
    "text, name",
    [
        ("my name is tomasz kowalczyk and my order is late", "tomasz kowalczyk"),
        ("hello, oluwaseun adeyemi here again about the refund", "oluwaseun adeyemi"),
        ("i spoke to ingrid yesterday about my refund", "ingrid"),
        ("can you ask Priyanka Raghunathan to call me back", "Priyanka Raghunathan"),
    ],
)
def test_the_shipped_tagger_finds_a_name_in_any_case_and_anywhere_in_a_message(tagger, text, name):
    found = [text[s.start : s.end] for s in tagger.tag(text) if s.entity == "PER"]
    assert name in found


def test_masking_takes_the_union_of_the_tagger_and_spacy(settings):
    text = "please pass this to siobhan in returns"
    try:
        assert mask_pii(text, kinds=["PERSON"]).text == "please pass this to <PERSON_1> in returns"
        settings.NAME_TAGGER = "off"
        name_tagger.cache_clear()
        assert mask_pii(text, kinds=["PERSON"]).text == text  # spaCy's model alone reads no name here
    finally:
        name_tagger.cache_clear()


def test_a_long_text_is_read_in_windows_and_a_name_past_the_first_is_found_in_place(tagger):
    filler = "The parcel was delivered to the front desk as agreed in the order notes. " * 40
    text = filler + "Please ask Henrietta Okonjo-Baptiste to sign for the next one."
    assert len(tagger._load()[1].encode(text).ids) > 2 * 256  # three windows at least
    found = [(s.entity, text[s.start : s.end]) for s in tagger.tag(text)]
    assert ("PER", "Henrietta Okonjo-Baptiste") in found
