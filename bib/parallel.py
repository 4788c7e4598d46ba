"""Ordered, streaming parallel map: local processes by default, a Dask cluster when given a scheduler.

Every long job (generation, rendering, scoring, simulations) goes through :func:`map_ordered`,
so it streams (a bounded number of tasks in flight, results yielded in input order) and behaves
the same for any worker count. Functions and items must be picklable (module-level functions).
"""

from __future__ import annotations

import multiprocessing
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

from bib.errors import BibInputError

T = TypeVar("T")
R = TypeVar("R")


def _context() -> multiprocessing.context.BaseContext:
    # forkserver children start from a clean process (no torch threads inherited); spawn elsewhere.
    method = "forkserver" if sys.platform.startswith("linux") else "spawn"
    return multiprocessing.get_context(method)


def map_ordered(
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    workers: int = 1,
    scheduler: str | None = None,
    in_flight: int | None = None,
) -> Iterator[R]:
    """Apply ``fn`` to every item, yielding results in the order of ``items``.

    Args:
        fn: a picklable (module-level) function.
        items: any iterable; it is consumed lazily.
        workers: local worker processes; 1 runs in this process with no pool.
        scheduler: ``tcp://HOST:PORT`` of a Dask scheduler (needs the ``dask`` extra); when given,
            ``workers`` only bounds the number of tasks in flight.
        in_flight: tasks submitted ahead of the one being yielded (default ``4 * workers``), which
            bounds memory whatever the number of items.

    Raises:
        BibInputError: for ``workers < 1`` or a scheduler that cannot be used.
    """
    if workers < 1:
        raise BibInputError(f"--workers must be >= 1, got {workers}")
    limit = in_flight or 4 * workers
    if scheduler:
        yield from _map_dask(fn, items, scheduler, limit)
        return
    if workers == 1:
        for item in items:
            yield fn(item)
        return
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        yield from _drain(pool.submit, fn, items, limit)


def _drain(submit: Callable[..., Any], fn: Callable[[T], R], items: Iterable[T], limit: int) -> Iterator[R]:
    pending: deque[Future] = deque()
    for item in items:
        pending.append(submit(fn, item))
        if len(pending) >= limit:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def _map_dask(fn: Callable[[T], R], items: Iterable[T], scheduler: str, limit: int) -> Iterator[R]:
    try:
        from dask.distributed import Client
    except ImportError:
        raise BibInputError("--scheduler needs the dask extra: pip install 'bib-voe[dask]'") from None
    try:
        client = Client(scheduler, timeout="10s")
    except OSError as exc:
        raise BibInputError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
    try:
        yield from _drain(lambda f, x: client.submit(f, x, pure=False), fn, items, limit)
    finally:
        client.close()
