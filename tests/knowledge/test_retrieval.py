"""Retrieval in SQL: BM25 as its formula says, audience and version rules at every stage, the right chunk ranked
first."""

from datetime import date

import pytest
from django.db import connection, transaction

from knowledge.dense import dense_search, vector_literal
from knowledge.embeddings import embed_query
from knowledge.errors import QueryError
from knowledge.fuzzy import find_typos, fuzzy_search
from knowledge.models import Chunk, Collection, GlossaryEntry, Posting, TermStatistic
from knowledge.retrieval import RetrievalConfig, search
from knowledge.scope import Scope
from knowledge.sparse import BM25Parameters, CorpusStatistics, bm25_score, bm25_search
from tests.knowledge.helpers import sync_folder

pytestmark = pytest.mark.django_db
PARAMS = BM25Parameters()


def stats_of(collection: Collection) -> CorpusStatistics:
    return CorpusStatistics(collection.chunk_count, collection.average_chunk_length)


def slugs_and_paths(hits) -> list[tuple[str, str]]:
    return [(h.chunk.version.article.slug, h.heading_path) for h in hits]


def test_bm25_in_sql_matches_the_reference_formula(helpcentre: Collection):
    query = "refund card business days bank"
    scope = Scope(helpcentre.pk, "staff")
    hits = bm25_search(scope, query, stats=stats_of(helpcentre), k=10, params=PARAMS)
    assert len(hits) == 10
    with connection.cursor() as cursor:
        cursor.execute("SELECT tsvector_to_array(to_tsvector('english', %s))", [query])
        terms = cursor.fetchone()[0]
    frequencies = dict(TermStatistic.objects.filter(collection=helpcentre).values_list("lexeme", "document_frequency"))
    for hit in hits:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT u.lexeme, cardinality(u.positions) FROM knowledge_chunk c, unnest(c.search_vector) u "
                "WHERE c.id = %s",
                [hit.chunk_id],
            )
            tf = dict(cursor.fetchall())
        length = Chunk.objects.get(pk=hit.chunk_id).sparse_length
        assert length == sum(tf.values())
        expected = bm25_score(
            tf, length, terms, frequencies, helpcentre.chunk_count, helpcentre.average_chunk_length, PARAMS
        )
        assert hit.score == pytest.approx(expected, rel=1e-9)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_corpus_statistics_follow_the_chunks(helpcentre: Collection):
    assert helpcentre.chunk_count == Chunk.objects.filter(version__article__collection=helpcentre).count()
    refund = TermStatistic.objects.get(collection=helpcentre, lexeme="refund")
    assert refund.document_frequency == Chunk.objects.filter(search_vector="refund").count()


def test_a_staff_chunk_never_reaches_a_public_query_at_any_stage(helpcentre: Collection, embedder):
    secret = Chunk.objects.filter(version__audience="staff", text__contains="Ledger").first()
    query = secret.text[:300]
    public, staff = Scope(helpcentre.pk, "public"), Scope(helpcentre.pk, "staff")
    stats = stats_of(helpcentre)
    vector = embed_query(helpcentre, query, embedder)
    typo = "Ledgr goodwil escalatoin"

    # Word for word, the staff chunk is every stage's first answer for staff...
    assert bm25_search(staff, query, k=5, params=PARAMS, stats=stats)[0].chunk_id == secret.pk
    assert dense_search(staff, vector, k=5)[0].chunk_id == secret.pk
    assert any(h.chunk_id in staff_ids(helpcentre) for h in fuzzy_search(staff, typo, k=5, stats=stats, params=PARAMS))
    # ...and never comes back for the public, at any stage or after fusion.
    forbidden = staff_ids(helpcentre)
    for hits in (
        bm25_search(public, query, k=100, params=PARAMS, stats=stats),
        dense_search(public, vector, k=100),
        fuzzy_search(public, typo, k=100, stats=stats, params=PARAMS),
        fuzzy_search(public, query, k=100, stats=stats, params=PARAMS),
    ):
        assert not {h.chunk_id for h in hits} & forbidden
    for q in (query, typo):
        fused = search(q, collection=helpcentre, audience="public", k=100)
        assert fused and not {h.chunk.pk for h in fused} & forbidden
        members = search(q, collection=helpcentre, audience="member", k=100)
        assert not {h.chunk.pk for h in members} & forbidden


def staff_ids(collection: Collection) -> set[int]:
    return set(
        Chunk.objects.filter(version__article__collection=collection, version__audience="staff").values_list(
            "id", flat=True
        )
    )


def test_members_see_member_articles_and_the_public_does_not(helpcentre: Collection):
    query = "Oak Circle points voucher"
    assert "loyalty-programme" in {
        s for s, _ in slugs_and_paths(search(query, collection=helpcentre, audience="member"))
    }
    assert "loyalty-programme" not in {
        s for s, _ in slugs_and_paths(search(query, collection=helpcentre, audience="public", k=50))
    }


def test_a_narrow_filter_still_returns_k_dense_results(helpcentre: Collection, embedder):
    # In force on 2025-06-01: only shipping v1 (under 10 % of the chunks).
    scope = Scope(helpcentre.pk, "public", "as_of", date(2025, 6, 1))
    visible = Chunk.objects.filter(version__article__slug="shipping", version__version_label="1").count()
    assert visible / Chunk.objects.count() < 0.1
    vector = embed_query(helpcentre, "how much does express delivery cost", embedder)
    with transaction.atomic(), connection.cursor() as cursor:
        # On a table this small the planner would rather filter first and sort exactly; forbidding the sort
        # forces the HNSW index scan that filtered queries on a large index get.
        cursor.execute("SET LOCAL enable_sort = off")
        where, params = scope.where()
        cursor.execute("SET LOCAL hnsw.ef_search = 5")
        cursor.execute(
            "SELECT c.id FROM knowledge_chunk c JOIN knowledge_articleversion v ON v.id = c.version_id "
            f"JOIN knowledge_article a ON a.id = v.article_id WHERE {where} "
            "ORDER BY c.embedding <=> %(vector)s::vector LIMIT 5",
            {**params, "vector": vector_literal(vector)},
        )
        without_iterative_scan = len(cursor.fetchall())
        hits = dense_search(scope, vector, k=5, ef_search=5)
    assert without_iterative_scan < 5  # the filter really does starve a plain HNSW scan
    assert len(hits) == 5
    assert {Chunk.objects.get(pk=h.chunk_id).version.version_label for h in hits} == {"1"}


def test_version_policies_on_the_superseded_shipping_article(helpcentre: Collection):
    query = "free standard shipping threshold"

    def shipping_versions(**kwargs) -> list[str]:
        hits = search(query, collection=helpcentre, audience="public", k=20, **kwargs)
        return [h.chunk.version.version_label for h in hits if h.chunk.version.article.slug == "shipping"]

    assert set(shipping_versions()) == {"2"}
    latest = shipping_versions(version_policy="prefer_latest")
    assert set(latest) == {"1", "2"}
    assert latest.index("2") < latest.index("1")
    assert set(shipping_versions(as_of=date(2025, 6, 1))) == {"1"}
    assert set(shipping_versions(as_of=date(2026, 7, 1))) == {"2"}
    assert shipping_versions(as_of=date(2024, 1, 1)) == []


def test_the_refund_timing_question_finds_when_the_money_arrives(helpcentre: Collection):
    hits = search("how long until my money back shows on my card", collection=helpcentre, audience="public")
    assert slugs_and_paths(hits)[0] == ("refunds", "Refunds › When the money arrives")


def test_an_error_code_ranks_its_own_section_above_its_neighbour(helpcentre: Collection):
    paths = [p for _, p in slugs_and_paths(search("E-4012", collection=helpcentre, audience="public", k=10))]
    assert "Payment errors › E-4012" in paths
    assert "Payment errors › E-4021" not in paths or paths.index("Payment errors › E-4012") < paths.index(
        "Payment errors › E-4021"
    )


@pytest.mark.parametrize(
    ("typo", "correction", "slug"),
    [("refnd", "refund", "refunds"), ("warrenty", "warranti", "warranty"), ("pasword", "password", "account-security")],
)
def test_a_typo_is_corrected_against_the_vocabulary_and_finds_its_chunk(helpcentre: Collection, typo, correction, slug):
    typos = find_typos(helpcentre.pk, f"my {typo} please")
    assert [(c.word, c.lexeme) for c in typos.corrections] == [(typo.lower(), correction)]
    fuzzy = fuzzy_search(Scope(helpcentre.pk, "public"), typo, k=3, stats=stats_of(helpcentre), params=PARAMS)
    assert fuzzy and Chunk.objects.get(pk=fuzzy[0].chunk_id).version.article.slug == slug
    assert search(typo, collection=helpcentre, audience="public", k=3)[0].chunk.version.article.slug == slug


@pytest.mark.parametrize("spelling", ["E4012", "e4012", "error E-4012"])
def test_an_identifier_is_found_however_it_is_spelt(helpcentre: Collection, spelling):
    paths = [h.heading_path for h in search(spelling, collection=helpcentre, audience="public", k=10)]
    # The overview table lists every code, so it may come first; the code's own section must follow it.
    assert "Payment errors › E-4012" in paths[:2]
    # A near-miss code may follow (the reranker reads only the fused top 3–5 and cannot push it lower), never lead.
    assert "Payment errors › E-4021" not in paths[:2]


def test_an_unknown_identifier_is_not_corrected_into_another_one(helpcentre: Collection):
    typos = find_typos(helpcentre.pk, "what is error E-4099")
    assert typos.corrections == ()


def test_each_hit_explains_its_stages(helpcentre: Collection):
    hits = search("refund to a gift card", collection=helpcentre, audience="public", k=5)
    assert all(h.stages for h in hits)
    assert {"bm25", "dense"} & set(hits[0].stages)
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]


def test_bad_queries_are_refused(helpcentre: Collection):
    with pytest.raises(QueryError, match="empty"):
        search(" \n\t ", collection=helpcentre, audience="public")
    with pytest.raises(QueryError, match="limit is 1000"):
        search("refund " * 300, collection=helpcentre, audience="public")
    with pytest.raises(QueryError, match="k must be between"):
        search("refund", collection=helpcentre, audience="public", k=0)
    with pytest.raises(ValueError, match="unknown audience"):
        search("refund", collection=helpcentre, audience="admin")
    with pytest.raises(ValueError, match="stages must be"):
        RetrievalConfig(stages=("bm25", "magic"))


def test_the_glossary_expands_queries_and_is_loaded_from_a_file(helpcentre: Collection, settings, tmp_path):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    # Known since one pass per turn: the first place goes to "Before you contact us"; the refunds sections follow.
    def refund_chunks_in_top_4() -> int:
        hits = search("I want my money back", collection=helpcentre, audience="public", k=4)
        return sum(h.chunk.version.article.slug == "refunds" for h in hits)

    without = refund_chunks_in_top_4()
    call_command("glossary", str(settings.BASE_DIR / "knowledge" / "sample" / "glossary.tsv"))
    assert GlossaryEntry.objects.get(collection=helpcentre, phrase="money back").meaning == "refund"
    assert refund_chunks_in_top_4() >= 2 > without

    bad = tmp_path / "bad.tsv"
    bad.write_text("phrase\tmeaning\nKCC\t\n")
    with pytest.raises(CommandError, match=r"bad\.tsv:2: meaning: This field cannot be blank"):
        call_command("glossary", str(bad))
    assert not GlossaryEntry.objects.filter(phrase="KCC").exists()


def test_glossary_phrases_match_whole_words_only():
    from knowledge.query import expand_with_glossary

    glossary = {"OC": "Oak Circle", "money back": "refund"}
    assert expand_with_glossary("is OC worth it", glossary) == "is OC worth it Oak Circle"
    assert expand_with_glossary("my clock broke", glossary) == "my clock broke"
    assert expand_with_glossary("MONEY BACK please", glossary) == "MONEY BACK please refund"
    assert expand_with_glossary("money back refund", glossary) == "money back refund"


def test_the_inverted_index_follows_every_chunk_write(helpcentre: Collection, sample_dir, embedder):
    def postings_expected() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM knowledge_chunk c CROSS JOIN unnest(c.search_vector) u "
                "JOIN knowledge_articleversion v ON v.id = c.version_id "
                "JOIN knowledge_article a ON a.id = v.article_id WHERE a.collection_id = %s",
                [helpcentre.pk],
            )
            return cursor.fetchone()[0]

    assert Posting.objects.filter(collection=helpcentre).count() == postings_expected() > 0
    refund = Posting.objects.filter(collection=helpcentre, lexeme="refund")
    assert refund.count() == TermStatistic.objects.get(collection=helpcentre, lexeme="refund").document_frequency

    (sample_dir / "refunds.md").unlink()  # retiring the article deletes its chunks, and their postings with them
    sync_folder(sample_dir, embedder)
    assert Posting.objects.filter(collection=helpcentre).count() == postings_expected()
    assert not Posting.objects.filter(chunk__version__article__slug="refunds").exists()


@pytest.mark.parametrize(
    "query", ["refund card business days bank", "express delivery cost Ireland", "E-4012 declined"]
)
def test_reading_postings_best_first_finds_the_exact_top_chunks(helpcentre: Collection, query: str):
    scope, stats = Scope(helpcentre.pk, "public"), stats_of(helpcentre)
    fast = bm25_search(scope, query, stats=stats, k=10, params=PARAMS)
    exact = bm25_search(scope, query, stats=stats, k=10, params=PARAMS, exact=True)
    assert [(h.chunk_id, round(h.score, 9)) for h in fast] == [(h.chunk_id, round(h.score, 9)) for h in exact]
