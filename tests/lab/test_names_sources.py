"""The name-tagger data converter's pure steps: label mapping, BIO repair, GUM names, split and sample."""

from lab.names_sources import (
    WNUT_TYPES,
    Mention,
    Sentence,
    capped,
    conll_sentences,
    gum_document,
    gum_licence,
    gum_spans,
    map_tag,
    repair_bio,
    split_of,
)


def test_it_maps_tags_and_drops_other_types():
    assert [map_tag(t, WNUT_TYPES) for t in ("B-person", "I-location", "B-group", "I-corporation")] == [
        "B-PER",
        "I-LOC",
        "B-ORG",
        "I-ORG",
    ]
    assert [map_tag(t, WNUT_TYPES) for t in ("B-product", "I-creative-work", "O", "")] == ["O"] * 4


def test_it_repairs_io_tags_to_bio():
    assert repair_bio(["I-PER", "I-PER", "O", "I-LOC", "I-ORG", "B-ORG", "I-ORG"]) == [
        "B-PER",
        "I-PER",
        "O",
        "B-LOC",
        "B-ORG",
        "B-ORG",
        "I-ORG",
    ]


def test_it_reads_wnut_sentences_split_by_a_lone_tab():
    text = "Hi\tO\nAnna\tB-person\n\t\nin\tO\nOslo\tB-location\n"
    assert list(conll_sentences(text)) == [[("Hi", "O"), ("Anna", "B-person")], [("in", "O"), ("Oslo", "B-location")]]


def test_it_splits_by_document_about_eighty_ten_ten():
    keys = [f"wnut17:train:{i}" for i in range(2000)]
    splits = [split_of(k) for k in keys]
    assert splits == [split_of(k) for k in keys]  # stable
    assert 1500 < splits.count("train") < 1700 and 150 < splits.count("dev") < 250


def test_it_samples_whole_documents_up_to_the_limit():
    sentences = [Sentence("crossner", f"d{i // 3}", ["x"], ["O"]) for i in range(30)]
    kept = capped(sentences, 10)
    assert len(kept) == 9  # three whole documents of three; a fourth would pass the limit
    assert all(sum(s.doc == d for s in kept) == 3 for d in {s.doc for s in kept})
    assert kept == capped(sentences, 10)


def test_it_takes_names_from_gum_proper_noun_runs():
    tokens = ["Biologist", "Nick", "Bos", "of", "the", "University", "of", "Helsinki", "told", "them"]
    xpos = ["NN", "NNP", "NNP", "IN", "DT", "NNP", "IN", "NNP", "VBD", "PRP"]
    mentions = [
        Mention(0, 7, "person"),  # "Biologist Nick Bos of the University of Helsinki"
        Mention(4, 7, "organization"),
        Mention(7, 7, "place"),
        Mention(9, 9, "person"),  # "them": a mention, but no name
    ]
    assert gum_spans(tokens, xpos, mentions) == [(1, 2, "PER"), (5, 7, "ORG")]


def test_it_cuts_titles_off_gum_person_names():
    tokens = ["President", "Obama", "and", "Counsel", "met", "on", "Tuesday"]
    xpos = ["NNP", "NNP", "CC", "NNP", "VBD", "IN", "NNP"]
    mentions = [Mention(0, 1, "person"), Mention(3, 3, "person"), Mention(6, 6, "time")]
    assert gum_spans(tokens, xpos, mentions) == [(1, 1, "PER")]


def test_it_reads_gum_entity_brackets():
    conllu = "\n".join(
        [
            "# sent_id = d-1",
            "1\tNick\tNick\tPROPN\tNNP\t_\t2\tnsubj\t_\tEntity=(1-person-new-x-cf1-1-coref",
            "2\tBos\tBos\tPROPN\tNNP\t_\t0\troot\t_\tEntity=1)",
            "3\tvisits\tvisit\tVERB\tVBZ\t_\t0\troot\t_\t_",
            "4\tMérida\tMérida\tPROPN\tNNP\t_\t3\tobj\t_\tEntity=(2-place-new-x-cf1-1-coref-Mérida%2C_Yucatán)",
            "",
        ]
    )
    [sentence] = gum_document("d", conllu)
    assert sentence.tags == ["B-PER", "I-PER", "O", "B-LOC"]


def test_it_keeps_only_permissively_licensed_gum_documents():
    assert gum_licence("GUM_news_afghan", "https://en.wikinews.org/wiki/X") == "CC BY 2.5"
    assert gum_licence("GUM_academic_art", "https://dh2017.adho.org/abstracts/333/333.pdf") == "CC BY 4.0"
    assert gum_licence("GUM_academic_eegimaa", "http://hdl.handle.net/10125/24652") is None
    assert gum_licence("GUM_whow_basil", "https://www.wikihow.com/x") is None
    assert gum_licence("GUM_reddit_card", "") is None
    assert gum_licence("GUM_vlog_london", "https://www.youtube.com/x") is None
    assert gum_licence("GUM_court_carpet", "https://www.linguistics.ucsb.edu/x") is None
    assert gum_licence("GENTLE_poetry_raven", "") is None


def test_a_held_out_sentence_becomes_a_personal_data_record_of_its_persons_only():
    from lab.names_sources import as_pii_record

    sentence = Sentence(
        "gum",
        "doc1",
        ["Ask", "Ama", "Owusu", "in", "Accra", "or", "Kofi"],
        ["O", "B-PER", "I-PER", "O", "B-LOC", "O", "B-PER"],
    )
    record = as_pii_record(sentence, 3)
    assert record["text"] == "Ask Ama Owusu in Accra or Kofi"
    assert [(p["value"], p["start"], p["end"]) for p in record["personal"]] == [("Ama Owusu", 4, 13), ("Kofi", 26, 30)]  # type: ignore[attr-defined]
    assert record["template"] == "gum:doc1:3" and record["kept"] == []
