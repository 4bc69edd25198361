"""Dense retrieval: pgvector HNSW cosine search over one collection, audience filter inside the SQL."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db import connection, transaction
from pgvector.django import CosineDistance

from knowledge.models import Audience, Chunk, Collection, VersionStatus

VISIBLE_AUDIENCES: dict[str, tuple[str, ...]] = {
    Audience.PUBLIC: (Audience.PUBLIC,),
    Audience.MEMBER: (Audience.PUBLIC, Audience.MEMBER),
    Audience.STAFF: (Audience.PUBLIC, Audience.MEMBER, Audience.STAFF),
}


@dataclass(frozen=True)
class DenseHit:
    chunk: Chunk
    rank: int
    similarity: float


def dense_search(
    collection: Collection, query_vector: np.ndarray, *, audience: str, k: int = 10, ef_search: int = 100
) -> list[DenseHit]:
    """Top-k current chunks by cosine similarity that the audience may see.

    pgvector filters after the HNSW scan; iterative scan keeps searching until k rows pass the filter.
    """
    if audience not in VISIBLE_AUDIENCES:
        raise ValueError(f"unknown audience {audience!r}")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.ef_search = %s", [ef_search])
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        rows = list(
            Chunk.objects.filter(
                version__article__collection=collection,
                version__article__retired_at__isnull=True,
                version__status=VersionStatus.PUBLISHED,
                version__audience__in=VISIBLE_AUDIENCES[audience],
            )
            .select_related("version__article")
            .annotate(distance=CosineDistance("embedding", query_vector))
            .order_by("distance")[:k]
        )
    return [DenseHit(chunk, rank, 1.0 - float(chunk.distance)) for rank, chunk in enumerate(rows, start=1)]
