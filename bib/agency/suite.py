"""The three suites (``navigation``, ``perturbations``, ``keys``): jobs, parallel rollouts, results on disk.

A job is one grid (regenerated from ``(task, index, seed)``) with its variants (``base``, the
transforms, or ``no-key``); each variant gets ``rollouts`` rollouts from its own seeded stream,
so results are the same for any worker count. Local agents run in worker processes
(:func:`bib.parallel.map_ordered`); the endpoint agent runs in threads sharing one client (its
semaphore bounds the requests in flight).

Outputs under ``out``: ``grids.csv`` (one row per grid variant, :func:`bib.agency.metrics.grid_metrics`
plus key columns), ``rollouts.jsonl`` (every rollout: actions, cells, step kinds, invalid reasons),
``run.json`` (command, settings, invalid-answer summary) and the tables of :mod:`bib.agency.tables`.
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bib.agency.agents import AgentSpec, check_spec, make_agents
from bib.agency.env import Grid, action_names, load_grid, run_rollouts, with_layout
from bib.agency.keys import KEY_TASKS, jaccard, key_columns, visited
from bib.agency.metrics import grid_metrics
from bib.agency.transforms import TRANSFORMS, transform
from bib.errors import BibInputError
from bib.io import atomic_write_text, ensure_dir, frame_csv
from bib.parallel import map_ordered
from bib.progress import track
from bib.registry import Registry

if TYPE_CHECKING:  # pandas (and so the tables module) is imported only when a suite runs
    from bib.agency.tables import AgencyTables

SUITES: Registry[tuple[int, int]] = Registry("suite")
"""Suite -> default (grids, rollouts): grids per (size, density) cell for navigation suites, per task for keys."""
SUITES.register("navigation", (10, 10))
SUITES.register("perturbations", (10, 10))
SUITES.register("keys", (100, 1))


@dataclass(frozen=True)
class Job:
    """One grid and its variants, for one agent."""

    task: str
    index: int
    seed: int
    variants: tuple[str, ...]
    rollouts: int
    spec: AgentSpec
    meg: bool = True


def jobs_for(suite: str, spec: AgentSpec, grids: int | None = None, rollouts: int | None = None,
             seed: int = 0, meg: bool = True) -> list[Job]:
    """The jobs of a suite (``grids``/``rollouts`` default to the suite's entry in :data:`SUITES`)."""
    g, r = SUITES[suite]
    g, r = grids or g, rollouts or r
    if g < 1 or r < 1:
        raise BibInputError(f"--grids and --rollouts must be >= 1, got {g} and {r}")
    if suite == "keys":
        return [Job(task, i, seed, ("base", "no-key") if task == "two-path-key" else ("base",), r, spec, meg)
                for task in KEY_TASKS for i in range(g)]
    variants = ("base",) if suite == "navigation" else ("base", *TRANSFORMS)
    return [Job("navigation", i, seed, variants, r, spec, meg) for i in range(30 * g)]


def _variant(grid: Grid, name: str) -> Grid:
    if name == "base":
        return grid
    if name == "no-key":
        return with_layout(grid, replace(grid.layout, key=None), name)
    return with_layout(grid, transform(grid.layout, name), name)


def _rollout_record(grid: Grid, r: int, ro) -> dict:
    return {"grid": grid.id, "rollout": r, "success": ro.success, "actions": action_names(ro.actions),
            "cells": [list(c) for c in ro.cells], "kinds": ro.kinds,
            "reasons": [x for x in ro.reasons if x]}


def run_job(job: Job) -> tuple[list[dict], list[dict]]:
    """Roll out every variant of one grid: ``(rows, rollout records)``."""
    base = load_grid(job.task, job.index, job.seed)
    key_cell = base.layout.key
    rows, records, cells = [], [], {}
    for v, name in enumerate(job.variants):
        grid = _variant(base, name)
        stream = np.random.default_rng([job.seed, zlib.crc32(job.task.encode()), job.index, v])
        agents = make_agents(job.spec, job.rollouts, stream, tag=grid.id)
        rollouts = run_rollouts(agents, grid)
        row = grid_metrics(grid, rollouts, meg=job.meg)
        kc = key_cell if name in ("base", "no-key") else None
        row.update(key_columns(grid, rollouts, kc))
        reasons = Counter(x for ro in rollouts for x in ro.reasons if x)
        row["invalid_reasons"] = ";".join(f"{k}={n}" for k, n in sorted(reasons.items()))
        cells[name] = visited(rollouts)
        rows.append(row)
        records += [_rollout_record(grid, i, ro) for i, ro in enumerate(rollouts)]
    if "no-key" in cells:
        rows[0]["jaccard_no_key"] = jaccard(cells["base"], cells["no-key"])
    return rows, records


def run_suite(
    suite: str,
    spec: AgentSpec,
    out: str | Path,
    *,
    grids: int | None = None,
    rollouts: int | None = None,
    seed: int = 0,
    workers: int = 1,
    meg: bool = True,
    command: str = "",
) -> AgencyTables:
    """Run a suite and write its results under ``out``; returns its tables (what ``tables.md`` shows).

    The per-grid rows are in ``out/grids.csv`` (:func:`bib.agency.tables.read_run` reads them).

    Args:
        suite: ``navigation``, ``perturbations`` or ``keys``.
        spec: the agent.
        out: output folder.
        grids: grids per design cell (navigation suites) or per key task.
        rollouts: rollouts per grid variant.
        seed: base seed of the grids and rollouts.
        workers: processes (local agents) or threads (endpoint agent).
        meg: also compute MEG (the slowest metric).
        command: the command line, recorded in ``run.json``.

    Returns:
        The :class:`bib.agency.tables.AgencyTables` of the run, as written to ``tables.md`` and ``tables/``.
    """
    check_spec(spec)
    if workers < 1:
        raise BibInputError(f"--workers must be >= 1, got {workers}")
    jobs = jobs_for(suite, spec, grids, rollouts, seed, meg)
    out = ensure_dir(out)
    if spec.name == "endpoint":
        from bib.agency.text import shared_client

        before = dict(shared_client(spec).stats)  # the client is shared per process: report this run's part
        pool = ThreadPoolExecutor(max_workers=workers)
        results = pool.map(run_job, jobs)
    else:
        pool = None
        results = map_ordered(run_job, jobs, workers=workers)
    rows: list[dict] = []
    lines: list[str] = []
    try:
        for job_rows, records in track(results, total=len(jobs), description=f"agency {suite}"):
            rows += job_rows
            lines += [json.dumps(r, separators=(",", ":")) for r in records]
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    import pandas as pd

    from bib.agency.tables import write_tables

    frame = pd.DataFrame(rows)
    atomic_write_text(out / "grids.csv", frame_csv(frame, index=False))
    atomic_write_text(out / "rollouts.jsonl", "\n".join(lines) + "\n")
    steps = sum(len(json.loads(x)["kinds"]) for x in lines)
    reasons: Counter[str] = Counter()
    for x in lines:
        reasons.update(json.loads(x)["reasons"])
    meta = {
        "command": command,
        "suite": suite,
        "agent": spec.label,
        "spec": {k: v for k, v in asdict(spec).items() if k != "options"},
        "seed": seed,
        "grids": len({r["grid"].split("/")[0] for r in rows}),
        "rollouts": len(lines),
        "steps": steps,
        "invalid_steps": int(sum(reasons.values())),
        "invalid_reasons": dict(sorted(reasons.items())),
    }
    if spec.name == "endpoint":
        after = shared_client(spec).stats
        meta["endpoint"] = {"url": spec.endpoint, "model": spec.model,
                            **{k: after[k] - before.get(k, 0) for k in after}}
    atomic_write_text(out / "run.json", json.dumps(meta, indent=2) + "\n")
    return write_tables(out)
