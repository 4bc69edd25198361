"""Stemming: English words stemmed, and threads stemming at once each get the right stems."""

from concurrent.futures import ThreadPoolExecutor

from knowledge.stemming import stem, stems

WORDS = ["refunds", "delivered", "cancelling", "warranties", "shipping", "addresses", "returned", "payments"] * 500


def test_stems_english_words():
    assert stems(["refunds", "cancelling", "delivered"]) == ["refund", "cancel", "deliv"]
    assert stem("warranties") == "warranti"


def test_threads_stemming_at_once_each_get_the_right_stems():
    # Chat turns run in worker threads: a stemmer shared between them garbled words or raised IndexError.
    expected = [stem(w) for w in WORDS]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: [stem(w) for w in WORDS], range(8)))
    assert all(r == expected for r in results)
