"""Progress bars for long jobs, on stderr so stdout stays clean for tables and JSON."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

T = TypeVar("T")


def track(items: Iterable[T], *, total: int | None = None, description: str = "working") -> Iterator[T]:
    """Yield ``items`` while showing a progress bar on stderr.

    Set ``BIB_NO_PROGRESS=1`` to silence it (tests do); on a non-terminal stderr rich draws
    only the final state.
    """
    if os.environ.get("BIB_NO_PROGRESS"):
        yield from items
        return
    import sys

    # bib.cli filters stderr for a terminal (bib.io.PrintableStream); the bar's own escape sequences
    # go to the stream beneath (the description is bib's text, not the user's)
    console = Console(file=getattr(sys.stderr, "unfiltered", sys.stderr))
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(description, total=total)
        for item in items:
            yield item
            progress.advance(task)
