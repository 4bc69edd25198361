"""The abstention decision alone: its signals, the logistic regression, and the model file."""

import json
import random

import pytest

from answering.decide.abstention import (
    SIGNALS,
    AnswerModel,
    BestStatements,
    HitSignals,
    coverage,
    default_model,
    fit,
    holds_asked,
    read_model,
    signals_of,
    unknown_codes,
)
from answering.errors import AbstentionModelError


def test_signals_read_every_stage_and_agreement():
    hits = [
        HitSignals(
            "Refunds › When the money arrives\n\nCard refunds take 5 to 10 days.",
            {"bm25": (1, 9.0), "dense": (1, 0.71), "dense_secondary": (2, 0.80), "rerank": (1, 6.2)},
        ),
        HitSignals(
            "Returns\n\nReturn within 30 days.",
            {"bm25": (2, 4.0), "dense": (2, 0.50), "dense_secondary": (1, 0.83), "rerank": (2, 1.0)},
        ),
    ]
    best = BestStatements(5.5, "Card refunds take 5 to 10 days.", False, 1.5)
    signals = signals_of("how long do card refunds take?", hits, best)
    assert set(signals) == set(SIGNALS)
    assert signals["sentence_top"] == 5.5 and signals["passage_top"] == 6.2
    assert signals["dense_top"] == 0.71 and signals["dense_secondary_top"] == 0.83
    assert signals["agreement"] == 0.75  # three of four stages put the first hit first
    assert signals["coverage"] == 0.75  # "long", "card", "refund(s)" and "take" asked; "long" is not there
    assert signals["sentence_margin"] == 4.0  # the best statement over the best of another passage
    assert signals["asked_for"] == 1.0 and signals["numbers_agree"] == 1.0
    nothing = signals_of("anything", [], None)
    assert nothing["sentence_top"] < -10 and nothing["agreement"] == 0.0 and nothing["coverage"] == 0.0
    assert nothing["asked_for"] == 0.0 and nothing["numbers_agree"] == 0.0
    beside = BestStatements(5.5, "Refunds go back to the card you paid with.", False, None)
    off = signals_of("how long do card refunds take for an order over 200?", hits, beside)
    assert off["asked_for"] == 0.0  # a duration is asked, the best statement holds none
    assert off["numbers_agree"] == 0.0  # "200" is not in the top passage
    assert off["sentence_margin"] == 8.0  # no other passage scored: one section answers


@pytest.mark.parametrize(
    ("question", "statement", "procedure", "holds"),
    [
        ("how many days until my parcel arrives", "Parcels arrive in 3 to 5 business days.", False, True),
        ("how many days until my parcel arrives", "Parcels are sent by tracked courier.", False, False),
        ("what does express cost", "Express is $12 per order.", False, True),
        ("how much is the membership", "Membership includes free returns.", False, True),
        ("how much is the membership", "Members get early access.", False, False),
        ("when is the shop open", "We open at 9am on weekdays.", False, True),
        ("how do I close my account", "To close your account:", True, True),
        ("how do I close my account", "Closed accounts cannot be reopened.", False, False),
        ("is gift wrap available", "Gift wrap is not available.", False, True),
    ],
)
def test_what_a_question_asks_for_is_read_from_its_question_word(question, statement, procedure, holds):
    assert holds_asked(question, statement, procedure=procedure) is holds


def test_coverage_compares_stems():
    assert coverage("refunding cards", "Card refunds take 5 days.") == 1.0
    assert coverage("gift wrapping", "Card refunds take 5 days.") == 0.0


def test_a_code_the_articles_do_not_name_is_unknown_only_where_they_name_codes_of_its_kind():
    table = "Payment errors › Error codes\n\n| E-4012 | Card declined |\n| E-4021 | Timed out |"
    assert unknown_codes("Checkout says E-4031, what is it?", [table]) == {"E-4031"}
    assert unknown_codes("what does e4012 mean", [table]) == set()  # the other spelling of a listed code
    assert unknown_codes("my order LO-2048173 is late", [table]) == set()  # no LO- codes here: not a code list
    assert unknown_codes("how long do refunds take?", [table]) == set()


def synthetic(n: int, seed: int) -> list[tuple[dict[str, float], bool]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        answerable = i % 4 != 0  # three answerable to one unanswerable
        shift = 1.0 if answerable else -1.0
        rows.append(({s: rng.gauss(shift, 1.0) for s in SIGNALS}, answerable))
    return rows


def test_the_fitted_probability_separates_and_does_not_lean_on_the_class_mix():
    model = fit(synthetic(400, 1))
    test = synthetic(400, 2)
    answered = [model.answers(s) for s, a in test if a]
    wrong = [model.answers(s) for s, a in test if not a]
    assert sum(answered) / len(answered) > 0.9 and sum(wrong) / len(wrong) < 0.1
    # Both classes weigh the same: a question halfway between them is a coin toss, whatever the mix.
    assert model.probability(dict.fromkeys(SIGNALS, 0.0)) == pytest.approx(0.5, abs=0.1)
    assert all(w > 0 for w in model.weights)


def test_fitting_refuses_one_class_only():
    with pytest.raises(AbstentionModelError, match="both answerable and unanswerable"):
        fit([(dict.fromkeys(SIGNALS, 1.0), True)] * 3)


def test_a_model_file_is_checked(tmp_path):
    model = fit(synthetic(100, 3), fitted_on="synthetic")
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model.as_json()))
    assert read_model(path) == model
    path.write_text(json.dumps({**model.as_json(), "features": ["shoe_size", *SIGNALS[1:]]}))
    with pytest.raises(AbstentionModelError, match="one mean, scale and weight per signal"):
        read_model(path)
    path.write_text(json.dumps({**model.as_json(), "cut": 3}))
    with pytest.raises(AbstentionModelError, match="the cut must be a probability"):
        read_model(path)
    with pytest.raises(AbstentionModelError, match="not an abstention model"):
        AnswerModel.from_json({"features": []})


def test_the_shipped_default_is_a_fitted_model():
    model = default_model()
    assert set(model.features) <= set(SIGNALS) and 0 < model.cut < 1 and model.fitted_on
    assert any(w != 0 for w in model.weights)
