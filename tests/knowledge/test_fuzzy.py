"""Typo correction: a misspelt word becomes the word the articles use."""

from knowledge.fuzzy import Correction, Typos, corrected

TEXTS = ["Refunds reach your card in 5 to 10 business days.", "Cancelling an order is free before it ships."]


def typos(*pairs: tuple[str, str]) -> Typos:
    return Typos(tuple(Correction(word, lexeme, 0.6, 3) for word, lexeme in pairs), ())


def test_a_misspelt_word_becomes_the_word_the_texts_use():
    assert corrected("how long do refnds take", typos(("refnds", "refund")), TEXTS) == "how long do refunds take"


def test_several_corrections_each_take_their_own_spelling():
    query = corrected("cancleing and refnd", typos(("cancleing", "cancel"), ("refnd", "refund")), TEXTS)
    assert query == "cancelling and refunds"


def test_a_correction_no_text_spells_is_appended_as_its_stem():
    assert corrected("warrenty", typos(("warrenty", "warranti")), TEXTS) == "warrenty warranti"


def test_without_corrections_the_query_is_unchanged():
    assert corrected("Refunds?", typos(), TEXTS) == "Refunds?"
