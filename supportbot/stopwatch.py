"""Per-stage wall-clock timing, for benchmarks and for the latency recorded with each chat turn."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Stopwatch:
    laps_ms: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def lap(self, name: str) -> Iterator[None]:
        """Time the block; a name timed twice accumulates."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.laps_ms[name] = self.laps_ms.get(name, 0.0) + (time.perf_counter() - started) * 1000
