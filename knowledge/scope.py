"""Which chunks a query may see: collection, audience and version rules, as one SQL WHERE clause.

Every retrieval stage puts this clause inside its own query, so the rules hold at every stage and no
later step (a prompt, a reranker) can widen them. Pure: builds SQL text and parameters, runs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

VersionPolicy = Literal["current", "prefer_latest", "as_of"]
VERSION_POLICIES: tuple[VersionPolicy, ...] = ("current", "prefer_latest", "as_of")

# Who sees what: public sees public; members also see member articles; staff see everything.
VISIBLE_AUDIENCES: dict[str, tuple[str, ...]] = {
    "public": ("public",),
    "member": ("public", "member"),
    "staff": ("public", "member", "staff"),
}

# The tables a stage must join, aliased as the clause expects: c (chunk), v (version), a (article).
FROM_CHUNKS = """
    knowledge_chunk c
    JOIN knowledge_articleversion v ON v.id = c.version_id
    JOIN knowledge_article a ON a.id = v.article_id
"""


@dataclass(frozen=True)
class Scope:
    collection_id: int
    audience: str
    version_policy: VersionPolicy = "current"
    as_of: date | None = None

    def __post_init__(self) -> None:
        if self.audience not in VISIBLE_AUDIENCES:
            raise ValueError(f"unknown audience {self.audience!r} (expected one of: {', '.join(VISIBLE_AUDIENCES)})")
        if self.version_policy not in VERSION_POLICIES:
            raise ValueError(f"unknown version policy {self.version_policy!r}")
        if (self.version_policy == "as_of") != (self.as_of is not None):
            raise ValueError("as_of is given exactly when the version policy is 'as_of'")

    def where(self, *, of_chunks: bool = True) -> tuple[str, dict[str, Any]]:
        """The WHERE clause (without the keyword) and its named parameters, all prefixed scope_. Over chunks
        it names the chunk's own collection column, which each collection's partial vector indexes match
        (knowledge/vector_indexes.py); `of_chunks=False` is for a query of versions and articles alone."""
        params: dict[str, Any] = {
            "scope_collection": self.collection_id,
            "scope_audiences": list(VISIBLE_AUDIENCES[self.audience]),
        }
        clauses = [
            f"{'c' if of_chunks else 'a'}.collection_id = %(scope_collection)s",
            "a.retired_at IS NULL",
            "v.audience = ANY(%(scope_audiences)s)",
        ]
        if self.version_policy == "current":
            clauses.append("v.status = 'published'")
        elif self.version_policy == "prefer_latest":
            clauses.append("v.status IN ('published', 'superseded')")
        else:
            params["scope_as_of"] = self.as_of
            # The version in force on that date: the latest one that had taken effect by then.
            clauses.append(
                """v.status IN ('published', 'superseded') AND v.effective_date <= %(scope_as_of)s
                AND NOT EXISTS (
                    SELECT 1 FROM knowledge_articleversion later
                    WHERE later.article_id = v.article_id
                      AND later.status IN ('published', 'superseded')
                      AND later.effective_date <= %(scope_as_of)s
                      AND later.effective_date > v.effective_date
                )"""
            )
        return " AND ".join(clauses), params
