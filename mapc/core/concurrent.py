"""A map over threads that keeps input order: the RLViz validator checks many runs at once
with it (each run is a subprocess, so threads suffice)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Callable, Iterable, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def ordered_map(fn: Callable[[T], R], items: Iterable[T], jobs: int,
                on_done: Callable[[int, int, R], None] | None = None) -> list[R]:
    """``[fn(item) for item in items]`` on ``jobs`` threads; ``on_done(done, total, result)``
    is called as each finishes (from the calling thread)."""
    items = list(items)
    if jobs <= 1 or len(items) <= 1:
        out = []
        for done, item in enumerate(items, 1):
            out.append(fn(item))
            if on_done is not None:
                on_done(done, len(items), out[-1])
        return out
    results: list[Any] = [None] * len(items)
    with ThreadPoolExecutor(max_workers=min(jobs, len(items))) as pool:
        futures = {pool.submit(fn, item): n for n, item in enumerate(items)}
        try:
            for done, future in enumerate(as_completed(futures), 1):
                results[futures[future]] = future.result()
                if on_done is not None:
                    on_done(done, len(items), results[futures[future]])
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return results
