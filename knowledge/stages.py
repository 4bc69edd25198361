"""The names of retrieval's stages, written once: the searches, their fusion, the cross-encoder's reading and
the final ranking. Used as rankings' keys, stopwatch laps, settings values and evaluation figures, and
stored in turns' candidate records, so a rename here is a rename everywhere (and of stored records)."""

from enum import StrEnum


class Stage(StrEnum):
    BM25 = "bm25"
    DENSE = "dense"
    DENSE_SECONDARY = "dense_secondary"
    FUZZY = "fuzzy"
    FUSED = "fused"
    RERANK = "rerank"
    FINAL = "final"


# The searches a configuration may run (RETRIEVAL_STAGES), in the order they run.
SEARCH_STAGES: tuple[Stage, ...] = (Stage.BM25, Stage.DENSE, Stage.DENSE_SECONDARY, Stage.FUZZY)
# The searches that rank every passage (fuzzy only finds misspelt words), whose agreement is a signal.
RANKING_STAGES: tuple[Stage, ...] = (Stage.BM25, Stage.DENSE, Stage.DENSE_SECONDARY)
