"""Fusion fitted to a collection: the grid, the cached rerank, the choice, and the command that stores it."""

import json
from io import StringIO
from pathlib import Path
from types import MappingProxyType

import pytest
from django.core.management import CommandError, call_command

from knowledge.models import Collection
from knowledge.retrieval import RetrievalConfig, default_config, search
from knowledge.sparse import StageHit
from knowledge.stages import SEARCH_STAGES, Stage
from lab.fusion_fitting import (
    MIN_GAIN,
    Observation,
    fit,
    grid,
    ndcg_by_setting,
    setting_of,
    sign_test,
)

BASE = RetrievalConfig(
    stages=SEARCH_STAGES,
    fusion="weighted",
    weights=MappingProxyType({Stage.BM25: 0.4, Stage.DENSE: 0.3, Stage.DENSE_SECONDARY: 0.3, Stage.FUZZY: 0.1}),
    rerank=True,
    rerank_blend=0.5,
)


def hits(*chunk_ids: int) -> list[StageHit]:
    return [StageHit(c, rank, 1.0 - rank / 10) for rank, c in enumerate(chunk_ids, start=1)]


def test_the_grid_names_every_stage_and_sums_the_ranking_weights_to_one():
    settings = grid(SEARCH_STAGES)
    assert len(settings) == 66 * 2 * 5
    for setting in settings:
        assert set(setting.weights) == set(SEARCH_STAGES)  # a stage left out would weigh 1
        assert sum(w for s, w in setting.weights.items() if s != Stage.FUZZY) == pytest.approx(1.0)
    assert len({s.name for s in settings}) == len(settings)


def test_a_collection_whose_questions_only_dense_answers_gets_dense_weights():
    # BM25 always ranks a wrong chunk (2) first; both dense models rank the right one (1) first, and the
    # reranker prefers the wrong one. The fit must lean on dense retrieval and trust the reranker less.
    observations = [
        Observation(
            {
                Stage.BM25: hits(2, 3, 1),
                Stage.DENSE: hits(1, 3, 2),
                Stage.DENSE_SECONDARY: hits(1, 2, 3),
                Stage.FUZZY: hits(2),
            },
            {1: 0.0, 2: 5.0, 3: 1.0},
            {"right": 1},
        )
        for _ in range(20)
    ]
    document_of = {1: "right", 2: "wrong", 3: "other"}
    result = fit(observations, BASE, document_of)
    assert result.ndcg[result.default.name] < 1.0
    assert result.ndcg[result.chosen.name] == 1.0 and result.gain > MIN_GAIN
    assert result.chosen.weights[Stage.BM25] < 0.5 and result.chosen.blend < 0.5


def test_the_default_stays_when_nothing_beats_it():
    observations = [
        Observation(
            {Stage.BM25: hits(1, 2), Stage.DENSE: hits(1, 2), Stage.DENSE_SECONDARY: hits(1, 2), Stage.FUZZY: []},
            {1: 3.0, 2: 1.0},
            {"right": 1},
        )
    ]
    result = fit(observations, BASE, {1: "right", 2: "wrong"})
    assert result.chosen == setting_of(BASE) and result.gain == 0
    assert ndcg_by_setting(observations, [setting_of(BASE)], BASE, {1: "right", 2: "wrong"}) == {
        setting_of(BASE).name: 1.0
    }


@pytest.mark.django_db
def test_a_stored_fit_is_what_every_search_of_that_collection_uses(helpcentre: Collection, tmp_path: Path, embedder):
    fitted = {"weights": {"bm25": 0.0, "dense": 1.0, "dense_secondary": 0.0, "fuzzy": 0.0}, "rerank_blend": 0.0}
    path = tmp_path / "fit.json"
    path.write_text(json.dumps(fitted))
    call_command("fit_fusion", "--collection", "helpcentre", "--load", str(path), stdout=StringIO())
    helpcentre.refresh_from_db()
    config = default_config(helpcentre)
    assert dict(config.weights) == fitted["weights"] and config.rerank_blend == 0.0 and config.fusion == "weighted"
    # Dense alone, no blend with the reranker: the order is the reranker's over dense's shortlist.
    found = search("how long does a refund take", collection=helpcentre, audience="public", k=3, embedder=embedder)
    assert set(found[0].stages) >= {Stage.DENSE, Stage.RERANK}
    other = Collection.objects.create(name="other", embedding_space=helpcentre.embedding_space)
    assert dict(default_config(other).weights) == dict(default_config().weights)
    call_command("fit_fusion", "--collection", "helpcentre", "--clear", stdout=StringIO())
    helpcentre.refresh_from_db()
    assert dict(default_config(helpcentre).weights) == dict(default_config().weights)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "--load"),
        ('{"weights": {"bm25": 1}}', "rerank_blend"),
        ('{"weights": {"keywords": 1}, "rerank_blend": 0.5}', "must map stages"),
        ('{"weights": {"bm25": -1}, "rerank_blend": 0.5}', "from 0 to 10"),
    ],
)
def test_a_bad_fit_file_is_refused_by_name(helpcentre, tmp_path: Path, content: str, message: str):
    path = tmp_path / "fit.json"
    path.write_text(content)
    with pytest.raises(CommandError, match=message):
        call_command("fit_fusion", "--collection", "helpcentre", "--load", str(path))
    helpcentre.refresh_from_db()
    assert helpcentre.fusion == {}


@pytest.mark.django_db
def test_fit_fusion_asks_the_labelled_questions_and_stores_what_wins(helpcentre: Collection, tmp_path: Path):
    out = StringIO()
    saved = tmp_path / "fit.json"
    call_command(
        "fit_fusion",
        "--collection",
        "helpcentre",
        "--labelled",
        "lab/sample/calibration.jsonl",
        "--limit",
        "8",
        "--save",
        str(saved),
        stdout=out,
    )
    assert "8 questions" in out.getvalue() and "← the default" in out.getvalue()
    helpcentre.refresh_from_db()
    assert helpcentre.fusion == json.loads(saved.read_text())
    fitted = helpcentre.fusion
    assert fitted["questions"] == 8 and fitted["fitted_on"] == "lab/sample/calibration.jsonl"
    kept_default = dict(fitted["weights"]) == dict(default_config().weights)
    assert kept_default or fitted["ndcg@10"] > fitted["default_ndcg@10"] + MIN_GAIN
    # make run's step: a collection fitted already is left as it is, and no question is read.
    call_command("fit_fusion", "--collection", "helpcentre", "--labelled", "missing.jsonl", "--if-missing", stdout=out)
    assert "already fitted" in out.getvalue()
    call_command("fit_fusion", "--collection", "helpcentre", "--clear", stdout=out)
    helpcentre.refresh_from_db()
    assert helpcentre.fusion == {}
    with pytest.raises(CommandError, match="--labelled FILE"):
        call_command("fit_fusion", "--collection", "helpcentre")


def test_a_gain_from_one_question_does_not_replace_the_default():
    # One question that only dense ranks right, nine that every setting ranks alike: the best setting is
    # better on the whole, but one question is no evidence (sign test p = 0.5).
    lucky = Observation(
        {Stage.BM25: hits(2, 1), Stage.DENSE: hits(1, 2), Stage.DENSE_SECONDARY: hits(2, 1), Stage.FUZZY: []},
        {1: 0.0, 2: 5.0},
        {"right": 1},
    )
    alike = Observation(
        {Stage.BM25: hits(1, 2), Stage.DENSE: hits(1, 2), Stage.DENSE_SECONDARY: hits(1, 2), Stage.FUZZY: []},
        {1: 5.0, 2: 0.0},
        {"right": 1},
    )
    result = fit([lucky, *[alike] * 9], BASE, {1: "right", 2: "wrong"})
    assert result.ndcg[result.best.name] > result.ndcg[result.default.name] + MIN_GAIN
    assert (result.wins, result.losses) == (1, 0) and result.p_value == 0.5
    assert result.chosen == result.default


def test_the_sign_test():
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 0) == pytest.approx(1 / 32)
    assert sign_test(3, 3) == pytest.approx(42 / 64)
