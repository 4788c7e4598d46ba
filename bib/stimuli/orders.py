"""Counterbalanced presentation orders for lab studies (``orders.csv``).

Design (one session = every pair of the set, task by task):

* each pair is shown as its 8 familiarization trials (shared by the expected and unexpected
  episodes), then both test outcomes, one after the other;
* in order ``o`` (0-based) and pair ``p`` (0-based within its task), the expected outcome comes
  first when ``o + p`` is even, so every pair is shown expected-first in exactly half the
  orders, and within one order the first outcome alternates from pair to pair;
* the task blocks' order comes from the spec's ``[orders] scheme`` (:data:`SCHEMES`), one row of
  task orders per two orders (order ``o`` takes row ``(o // 2) mod R``):

  - ``rotation`` (the default): row ``r`` starts with task ``r mod T`` and keeps the spec's
    cyclic order (``R = T``; a cyclic Latin square);
  - ``latin``: a balanced Latin square (Williams 1949): each task is in each position once per
    ``R`` rows and follows each other task exactly once (``R = T`` for an even number of tasks,
    ``2 T`` for an odd one, the square and its mirror);
  - ``random``: each row a permutation of the tasks, and each task's pairs shuffled, drawn from
    ``numpy.random.default_rng([seed, row])`` (the spec's seed; ``R = n_orders / 2``).

  With ``n_orders`` a multiple of ``2 R`` (``rotation``, ``latin``) every task is in every position
  equally often, and within the orders of a row each pair is shown expected-first and
  unexpected-first equally often.

``bib experiment``'s page suggests to each new family the order with the fewest sessions so far
(docs/experiment.md, Counterbalancing).

Columns of ``orders.csv``: ``order`` (1-based), ``position`` (1-based presentation index in the
session), ``task``, ``pair_id``, ``phase`` (familiarization / test), ``trial`` (trial index in
the episode, 0-8), ``outcome`` (expected / unexpected on test rows, empty otherwise),
``test_position`` (1 or 2 on test rows), ``episode_id`` and ``video_path`` (the per-trial video
``videos/trials/<episode>-trial<k>.<ext>`` relative to the set folder, empty when per-trial
videos were not rendered), then the trial's timing in its video: ``fps``, ``video_frames`` (frames
of the trial's video) and ``outcome_frame`` (0-based index of the first frame with the agent at its
goal, :func:`bib.render.frames.outcome_frame`; the outcome ``bib experiment`` can measure looking
from). Sets generated before these three columns existed are read with them empty.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bib.episode import Episode, Trial, load_episode
from bib.errors import BibInputError
from bib.guard import set_path, text_lines
from bib.io import atomic_write_text, csv_dict_writer
from bib.render.frames import RenderSettings, frame_count, outcome_frame

ORDERS = "orders.csv"
#: How task blocks are ordered across orders (``[orders] scheme``; module doc).
SCHEMES: tuple[str, ...] = ("rotation", "latin", "random")
ORDER_COLUMNS = [
    "order", "position", "task", "pair_id", "phase", "trial", "outcome", "test_position", "episode_id", "video_path",
    "fps", "video_frames", "outcome_frame",
]
#: The columns before the trial timing was recorded (such a set's orders are read with the timing empty).
LEGACY_COLUMNS = ORDER_COLUMNS[:10]


def _pairs_by_task(rows: Sequence[dict[str, str]], tasks: Sequence[str]) -> dict[str, list[dict[str, dict[str, str]]]]:
    out: dict[str, dict[str, dict[str, dict[str, str]]]] = {t: {} for t in tasks}
    for row in rows:
        if row["task"] in out and row["pair_id"]:
            out[row["task"]].setdefault(row["pair_id"], {})[row["outcome"]] = row
    result = {}
    for task, pairs in out.items():
        for pair_id, members in pairs.items():
            if set(members) != {"expected", "unexpected"}:
                raise BibInputError(f"orders: pair {pair_id} lacks its expected or unexpected episode")
        result[task] = [pairs[k] for k in sorted(pairs)]
    return result


def _pair_episodes(root: Path, pair: dict[str, dict[str, str]]) -> dict[str, Episode]:
    """The pair's two episodes, checked to share their familiarization trials."""
    e = load_episode(root / pair["expected"]["episode_path"])
    u = load_episode(root / pair["unexpected"]["episode_path"])
    if e.familiarization != u.familiarization:
        raise BibInputError(
            f"orders: pair {e.pair_id} ({e.condition}): expected and unexpected familiarization differ, "
            "so both outcomes cannot follow one familiarization"
        )
    return {"expected": e, "unexpected": u}


def trial_timing(trial: Trial, settings: RenderSettings | None) -> dict[str, object]:
    """The ``fps``, ``video_frames`` and ``outcome_frame`` columns of a trial (empty without settings)."""
    if settings is None:
        return {"fps": "", "video_frames": "", "outcome_frame": ""}
    return {"fps": settings.fps, "video_frames": frame_count(trial, settings), "outcome_frame": outcome_frame(trial, settings)}


def williams(n: int) -> list[list[int]]:
    """A balanced Latin square (Williams design) over ``n`` conditions: ``n`` rows for even ``n``,
    ``2 n`` (the square and its rows reversed) for odd ``n``; every condition is in every position
    equally often and follows every other condition equally often."""
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    rows = [[(c + r) % n for c in first] for r in range(n)]
    return rows if n % 2 == 0 else rows + [row[::-1] for row in rows]


def scheme_rows(scheme: str, n_tasks: int, n_orders: int) -> int:
    """``R``, the number of distinct task orders a scheme uses (module doc)."""
    if scheme == "rotation":
        return n_tasks
    if scheme == "latin":
        return len(williams(n_tasks))
    return max(1, n_orders // 2)


def _task_rows(scheme: str, tasks: Sequence[str], n_orders: int, seed: int) -> list[list[int]]:
    n = len(tasks)
    if scheme == "rotation":
        return [[(r + c) % n for c in range(n)] for r in range(n)]
    if scheme == "latin":
        return williams(n)
    return [list(np.random.default_rng([seed, r]).permutation(n)) for r in range(scheme_rows(scheme, n, n_orders))]


def presentation_orders(
    root: str | os.PathLike[str],
    rows: Sequence[dict[str, str]],
    tasks: Sequence[str],
    n_orders: int,
    trial_video_ext: str | None,
    settings: RenderSettings | None = None,
    scheme: str = "rotation",
    seed: int = 0,
) -> list[dict[str, object]]:
    """The rows of ``orders.csv`` for the manifest ``rows`` of a set in ``root``.

    Args:
        root: the set folder (episodes are read to check the shared familiarization).
        rows: manifest rows.
        tasks: task ids in spec order (the order of blocks in order 1).
        n_orders: number of orders.
        trial_video_ext: extension of the per-trial videos (``.mp4``), or None when there are none.
        settings: the set's render settings, for the trial timing columns (empty without).
        scheme: how the task blocks are ordered (:data:`SCHEMES`).
        seed: the seed of the ``random`` scheme.
    """
    base = Path(root)
    by_task = _pairs_by_task(rows, tasks)
    episodes = {
        (task, i): _pair_episodes(base, pair)
        for task, pairs in by_task.items()
        for i, pair in enumerate(pairs)
    }
    timing = settings if trial_video_ext else None

    def video(episode_id: str, trial: int) -> str:
        return f"videos/trials/{episode_id}-trial{trial}{trial_video_ext}" if trial_video_ext else ""

    out: list[dict[str, object]] = []
    task_rows = _task_rows(scheme, tasks, n_orders, seed)
    for o in range(n_orders):
        row = (o // 2) % len(task_rows)
        position = 0
        for task in [tasks[i] for i in task_rows[row]]:
            shown = list(range(len(by_task[task])))  # pair indices in the order shown
            if scheme == "random":
                shown = [int(i) for i in np.random.default_rng([seed, row, tasks.index(task)]).permutation(len(shown))]
            for p in shown:  # p: the pair's index in its task (its episodes; expected first when o + p is even)
                pair = by_task[task][p]
                first = "expected" if (o + p) % 2 == 0 else "unexpected"
                second = "unexpected" if first == "expected" else "expected"
                fam_id = pair["expected"]["episode_id"]
                pair_id = pair["expected"]["pair_id"]
                eps = episodes[(task, p)]
                for k, trial in enumerate(eps["expected"].familiarization):
                    position += 1
                    out.append({"order": o + 1, "position": position, "task": task, "pair_id": pair_id,
                                "phase": "familiarization", "trial": k, "outcome": "", "test_position": "",
                                "episode_id": fam_id, "video_path": video(fam_id, k), **trial_timing(trial, timing)})
                for t, outcome in enumerate((first, second), start=1):
                    ep_id = pair[outcome]["episode_id"]
                    k = int(pair[outcome]["n_trials"]) - 1
                    position += 1
                    out.append({"order": o + 1, "position": position, "task": task, "pair_id": pair_id,
                                "phase": "test", "trial": k, "outcome": outcome, "test_position": t,
                                "episode_id": ep_id, "video_path": video(ep_id, k),
                                **trial_timing(eps[outcome].trials[k], timing)})
    return out


def write_orders(root: str | os.PathLike[str], order_rows: Sequence[dict[str, object]]) -> Path:
    """Write ``root/orders.csv`` atomically; return its path."""
    buf = io.StringIO()
    writer = csv_dict_writer(buf, ORDER_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(order_rows)
    path = Path(root) / ORDERS
    atomic_write_text(path, buf.getvalue())
    return path


def read_orders(root: str | os.PathLike[str]) -> list[dict[str, str]]:
    """Rows of ``root/orders.csv`` (``[]`` when the set has none), checked against :data:`ORDER_COLUMNS`.

    Raises:
        BibInputError: a header that is not the orders header, a row without an order or position, or a
            ``video_path`` that is not inside the set (:func:`bib.guard.set_path`).
    """
    path = Path(root) / ORDERS
    if not path.is_file():
        return []
    reader = csv.DictReader(text_lines(path))
    if reader.fieldnames not in (ORDER_COLUMNS, LEGACY_COLUMNS):
        raise BibInputError(f"{path}: header {reader.fieldnames} is not the orders header {ORDER_COLUMNS}")
    rows = [{**dict.fromkeys(ORDER_COLUMNS, ""), **r} if None not in r else r for r in reader]
    for i, row in enumerate(rows, start=2):
        if None in row or not str(row.get("order", "")).isdigit() or not str(row.get("position", "")).isdigit():
            raise BibInputError(f"{path}: row {i} is incomplete (order and position must be integers)")
        if row.get("video_path"):  # the experiment copies it: it must stay inside the set
            set_path(root, row["video_path"], f"{path}: row {i}: video_path")
    return rows
