"""The one timing helper of the benchmark scripts."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_time(
    fn: Callable[[], object], repeats: int, clock=time.perf_counter, warmup: bool = False
) -> float:
    """Median of ``repeats`` timings of ``fn()`` by ``clock`` (after one untimed call
    with ``warmup``)."""
    if warmup:
        fn()
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times)
