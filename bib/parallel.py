"""Ordered, streaming parallel map: local processes by default, a Dask cluster when given a scheduler.

Every long job (generation, rendering, scoring, simulations) goes through :func:`map_ordered`,
so it streams (a bounded number of tasks in flight, results yielded in input order) and behaves
the same for any worker count. Functions and items must be picklable (module-level functions).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

from bib.errors import BibInputError

T = TypeVar("T")
R = TypeVar("R")


_PR_SET_PDEATHSIG = 1

_LIVE: weakref.WeakSet[ProcessPoolExecutor] = weakref.WeakSet()
"""The pools of :func:`map_ordered` generators that have not finished (see :func:`stop_all`)."""


def stop_all() -> None:
    """Stop every pool a :func:`map_ordered` generator still holds: kill its processes, drop its queued tasks.

    A Ctrl-C or an error that lands in the *caller's* loop (not inside the generator) leaves the generator
    suspended, and its traceback's frames keep it alive until the exception is done with, so its own
    clean-up runs late (at interpreter exit, after the pool has finished the tasks in flight). The CLI calls
    this as a command ends, whatever ended it, so every command's pool is stopped at once
    (``tests/test_parallel.py``).
    """
    for pool in list(_LIVE):
        _stop(pool)


def die_with_parent() -> None:
    """Have the kernel SIGKILL this process when its parent dies, whatever ends the parent (even SIGKILL).

    Linux only (``prctl(PR_SET_PDEATHSIG)``); a no-op elsewhere. Called in each worker process,
    and in the forkserver (see :mod:`bib._lifeline`), so
    that killing ``bib`` leaves no descendant behind (issue 17). The signal follows the parent
    *thread* that started the process, so pools are started from the main thread.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl
        return
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def _worker_init(setup: Callable[[], object] | None = None) -> None:
    die_with_parent()
    # Ctrl-C goes to the whole process group; the parent handles it and shuts the pool down.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if setup is not None:
        try:
            setup()
        except Exception:  # noqa: S110 - the first task repeats the setup and reports its error
            pass


def _ready() -> bool:
    """A pool task that returns once a worker has started (and run its setup)."""
    return True


def _context(preload: Sequence[str] = ()) -> multiprocessing.context.BaseContext:
    """forkserver on Linux from the main thread (children start from a clean process, no torch threads
    inherited), spawn elsewhere. The forkserver preloads :mod:`bib._lifeline`, which ties its life to
    this process, and ``preload`` (modules its children then have imported already; only effective
    when the forkserver is not running yet).
    """
    if sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["__main__", "bib._lifeline", *preload])
        return ctx
    return multiprocessing.get_context("spawn")


def start_forkserver(preload: Sequence[str] = ()) -> None:
    """Start the forkserver now, importing ``preload`` there, and return at once (no-op where pools spawn,
    or when it runs already).

    Called before this process does its own slow set-up (a torch import, a checkpoint load), so that
    the forkserver's imports run on another core meanwhile and pool processes forked from it later
    start with them done: a worker's start-up is then a fork, not a torch import (issue 19).
    """
    _ensure_forkserver(_context(preload))


def _ensure_forkserver(ctx: multiprocessing.context.BaseContext) -> None:
    """Start ``ctx``'s forkserver unless it runs already (no-op for a context that spawns)."""
    if ctx.get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


def map_ordered(
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    workers: int = 1,
    scheduler: str | None = None,
    in_flight: int | None = None,
    local: bool = False,
    setup: Callable[[], object] | None = None,
    preload: Sequence[str] = (),
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
        local: with ``workers > 1``, this process works through items too, beside ``workers - 1``
            pool processes: whenever the next result to yield is not ready it runs the next item
            itself. For jobs whose workers pay a long start-up (a torch import and a model load)
            that this process has already paid, so its share starts at once. No item is handed to
            the pool before one of its processes has started and run ``setup``: until then this
            process runs every item, so a late pool never holds up the first results.
        setup: a picklable callable each pool process runs once at its start (e.g. loading a model);
            an error there is ignored (the items' own calls meet it again and report it).
        preload: modules the forkserver imports when it starts (see :func:`start_forkserver`).

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
    ctx = _context(preload)
    pool = ProcessPoolExecutor(max_workers=workers - local, mp_context=ctx, initializer=_worker_init, initargs=(setup,))
    _LIVE.add(pool)
    started: list[Future] = []
    try:
        if local:
            _start_in_background(pool, ctx, workers - 1, started)
            yield from _drain_local(pool.submit, fn, items, limit, 2 * (workers - 1),
                                    lambda: any(f.done() for f in started))
        else:
            yield from _drain(pool.submit, fn, items, limit)
    except BaseException:
        # An error, Ctrl-C or an abandoned generator: stop now instead of finishing the tasks in flight.
        _stop(pool)
        raise
    if local and (len(started) < workers - 1 or not all(f.done() for f in started)):
        # this process did everything: do not wait for a pool still starting
        _stop(pool)
    else:
        pool.shutdown()
    _LIVE.discard(pool)


def _start_in_background(pool: ProcessPoolExecutor, ctx: multiprocessing.context.BaseContext, n: int,
                         started: list[Future]) -> None:
    """Start the pool's ``n`` processes now without waiting for them: a thread submits one :func:`_ready`
    task per process (appended to ``started``). Starting a process waits for the forkserver, which
    may still be importing its preloaded modules; this process scores meanwhile. The forkserver
    itself is started here, from this (main) thread, as its death signal follows the thread that
    started it.

    The thread first waits for the forkserver with a process of its own (:func:`_wait_for_forkserver`),
    holding no lock of the pool: a pool's submit holds the pool's lock while it starts a process, so a
    submit waiting there for the forkserver's imports (torch) would make :func:`_stop` (Ctrl-C, an error)
    wait for them too.
    """
    _ensure_forkserver(ctx)

    def submit() -> None:
        try:
            _wait_for_forkserver(ctx)
            for _ in range(n):
                started.append(pool.submit(_ready))
        except Exception:  # noqa: S110 - shut down or broken meanwhile: this process scores alone
            pass

    threading.Thread(target=submit, name="bib-pool-start", daemon=True).start()


def _wait_for_forkserver(ctx: multiprocessing.context.BaseContext) -> None:
    """Return once ``ctx``'s forkserver forks processes (it has imported its preload): start a process that
    does nothing and reap it (one fork once the forkserver is ready). No-op for a context that spawns."""
    if ctx.get_start_method() == "forkserver":
        probe = ctx.Process(target=_ready, name="bib-forkserver-ready", daemon=True)
        probe.start()
        probe.join()


def _stop(pool: ProcessPoolExecutor) -> None:
    _LIVE.discard(pool)
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.is_alive():
            p.kill()
    for p in processes:
        p.join(timeout=5)


def _drain(submit: Callable[..., Any], fn: Callable[[T], R], items: Iterable[T], limit: int) -> Iterator[R]:
    pending: deque[Future] = deque()
    for item in items:
        pending.append(submit(fn, item))
        if len(pending) >= limit:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


class _Ready:
    """A result computed in this process, queued beside the pool's futures."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def done(self) -> bool:
        return True

    def result(self) -> Any:
        return self.value


def _drain_local(submit: Callable[..., Any], fn: Callable[[T], R], items: Iterable[T], limit: int,
                 pool_limit: int, pool_ready: Callable[[], bool] = lambda: True) -> Iterator[R]:
    """:func:`_drain` where this process also runs items: once ``pool_ready()``, up to ``pool_limit`` pool
    tasks in flight; while the oldest result is not ready, the next item runs here. Results are
    yielded in order."""
    pending: deque[Any] = deque()
    it = iter(items)
    more = True

    def take() -> bool:
        nonlocal more, item
        if more:
            try:
                item = next(it)
            except StopIteration:
                more = False
        return more

    item: Any = None
    ready = False
    while True:
        ready = ready or pool_ready()
        while (ready and len(pending) < limit and sum(not isinstance(p, _Ready) for p in pending) < pool_limit
               and take()):
            pending.append(submit(fn, item))
        if not pending:  # nothing in flight: the next item (if any) runs here
            if not take():
                return
            pending.append(_Ready(fn(item)))
            continue
        if not pending[0].done() and len(pending) < limit and take():
            pending.append(_Ready(fn(item)))
            continue
        yield pending.popleft().result()


def check_scheduler(scheduler: str | None, timeout: float = 10.0) -> None:
    """The preflight of ``--scheduler``, before a command writes anything: the dask extra is
    installed and, for a ``tcp://HOST:PORT`` (or ``HOST:PORT``) address, a TCP connection opens
    within ``timeout`` seconds. Nothing to check for None.

    Raises:
        BibInputError: one line naming the option and what is missing.
    """
    if not scheduler:
        return
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise BibInputError("--scheduler needs the dask extra: pip install 'bib-voe[dask]'") from None
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(scheduler if "://" in scheduler else f"tcp://{scheduler}")
    if parts.scheme != "tcp":
        return  # tls://, inproc://, ...: dask checks them when it connects
    try:
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise BibInputError(f"--scheduler {scheduler}: {exc}") from None
    if not host or port is None:
        raise BibInputError(f"--scheduler {scheduler}: expected tcp://HOST:PORT")
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        raise BibInputError(f"--scheduler {scheduler}: cannot connect ({exc.strerror or exc})") from None


def _map_dask(fn: Callable[[T], R], items: Iterable[T], scheduler: str, limit: int) -> Iterator[R]:
    check_scheduler(scheduler)
    from dask.distributed import Client

    try:
        client = Client(scheduler, timeout="10s")
    except OSError as exc:
        raise BibInputError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
    try:
        yield from _drain(lambda f, x: client.submit(f, x, pure=False), fn, items, limit)
    finally:
        client.close()
