"""Table 1 per environment: the extended-environments library's own results file beside ours, cell by cell.

The paper prints only each agent's mean over the 50 environments. The numbers behind it are the library's
``extended_rl/experiments/result_table.csv`` (semitrivial/ExtendedEnvironments at e38e3dc): the total reward of
every (agent, environment, seed, length). ``published/reflection_table1_environments.csv`` keeps all of them
under bib's agent labels and environment names (made by ``baselines/reflection/published_environments.py``).
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bib.reflection.harness import Cell, summarise
from bib.resources import resource

#: The library's per-environment results of Table 1 (ten seeds' total rewards per agent, environment and length).
ENVIRONMENTS_CSV = "published/reflection_table1_environments.csv"
#: Where the file's numbers come from (repository, commit, path), as its header says.
SOURCE = ("semitrivial/ExtendedEnvironments", "e38e3dc560f56b9a39b83571b272f86e3b0cf2d6",
          "extended_rl/experiments/result_table.csv")
#: A cell agrees when ours is within this many of our standard errors (sd/sqrt seeds) of the published mean,
#: the test the Table 1 means pass (tests/test_reflection_harness.py); a cell with no spread must be equal.
TOLERANCE_SE = 3.0

#: (agent label, steps) -> environment -> one score per seed (total reward / steps), in seed order.
EnvironmentScores = Mapping[tuple[str, int], Mapping[str, Sequence[float]]]


def published_environments(path: str | Path | None = None) -> dict[tuple[str, int], dict[str, list[float]]]:
    """The library's results: ``(label, steps) -> environment -> [score of seed 0, ..., seed 9]``."""
    path = Path(path) if path is not None else resource(ENVIRONMENTS_CSV)
    with open(path, newline="", encoding="utf-8") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        seeds = [c for c in rows.fieldnames or [] if c.startswith("seed")]
        out: dict[tuple[str, int], dict[str, list[float]]] = {}
        for row in rows:
            steps = int(row["steps"])
            out.setdefault((row["agent"], steps), {})[row["environment"]] = [float(row[s]) / steps for s in seeds]
    return out


def table_means(scores: EnvironmentScores) -> dict[tuple[str, int], float]:
    """Each row's measure as Table 1 computes it: the mean over seeds of each seed's mean over the environments."""
    out = {}
    for key, envs in scores.items():
        per_seed = zip(*envs.values(), strict=True)
        out[key] = statistics.fmean(statistics.fmean(seed) for seed in per_seed)
    return out


def scores_by_environment(runs: Iterable[Iterable[Cell]]) -> dict[str, list[float]]:
    """Per-seed cell lists (``run_task``'s, one list per seed) -> environment -> scores in seed order.

    Raises:
        ValueError: a cell failed, so the row has no score to compare.
    """
    out: dict[str, list[float]] = {}
    for cells in runs:
        for c in cells:
            if c.score is None:
                raise ValueError(f"{c.environment}: failed ({c.error}); no score to compare")
            out.setdefault(c.environment, []).append(c.score)
    return out


def read_task_log(path: str | Path) -> dict[tuple[str, int], dict[str, list[float]]]:
    """Our scores from a task log of ``benchmarks/reflection_tasks.py run`` (JSON lines, ``.gz`` allowed): one
    record per (agent, length, seed) with the agent's and its reality check's cells, as ``bib reflect table``
    computes them. Returns ``(label, steps) -> environment -> scores`` in seed order."""
    path = Path(path)
    with gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8") as f:
        records = sorted((json.loads(line) for line in f if line.strip()), key=lambda r: (r["steps"], r["seed"]))
    out: dict[tuple[str, int], dict[str, list[float]]] = {}
    for r in records:
        for key, rc in (("plain", False), ("rc", True)):
            label = summarise(r["agent"], rc, r["steps"], []).label
            envs = scores_by_environment([[Cell(**c) for c in r["cells"][key]]])
            for env, values in envs.items():
                out.setdefault((label, r["steps"]), {}).setdefault(env, []).extend(values)
    return out


@dataclass(frozen=True)
class EnvironmentCell:
    """One (agent, length, environment) of Table 1: our mean and SE beside the library's."""

    label: str
    steps: int
    environment: str
    ours: float
    ours_se: float
    published: float
    published_se: float

    @property
    def difference(self) -> float:
        """Ours minus published."""
        return self.ours - self.published

    @property
    def z(self) -> float:
        """The difference in our standard errors (0 when both are equal, infinite when only ours has no spread)."""
        if self.ours_se > 0:
            return self.difference / self.ours_se
        return 0.0 if self.difference == 0 else math.copysign(math.inf, self.difference)

    @property
    def z_combined(self) -> float:
        """The difference in the combined standard error of the two means."""
        se = math.hypot(self.ours_se, self.published_se)
        if se > 0:
            return self.difference / se
        return 0.0 if self.difference == 0 else math.copysign(math.inf, self.difference)

    @property
    def agrees(self) -> bool:
        """Within :data:`TOLERANCE_SE` of our standard errors (equal, when ours has none)."""
        return abs(self.z) <= TOLERANCE_SE


def _mean_se(values: Sequence[float]) -> tuple[float, float]:
    mean = statistics.fmean(values)
    return mean, (statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0)


def compare_environments(ours: EnvironmentScores, published: EnvironmentScores | None = None) -> list[EnvironmentCell]:
    """Every (agent, length, environment) of ``ours`` beside the library's, in the published file's order.

    Raises:
        KeyError: a row or environment of ``ours`` that the published results do not have.
    """
    published = published if published is not None else published_environments()
    missing = [key for key in ours if key not in published]
    if missing:
        raise KeyError(f"no published results for {missing}")
    cells = []
    for (label, steps), theirs in published.items():
        for env, values in ours.get((label, steps), {}).items():
            mean, se = _mean_se(values)
            pub, pub_se = _mean_se(theirs[env])
            cells.append(EnvironmentCell(label, steps, env, mean, se, pub, pub_se))
    return cells


def format_comparison(cells: Sequence[EnvironmentCell]) -> str:
    """Markdown: per row, how many environments agree; then every cell that does not, largest first."""
    rows = list(dict.fromkeys((c.label, c.steps) for c in cells))
    lines = ["| Agent | Steps | environments within 3 of our SE | equal | beyond 3 combined SE |",
             "|---|---|---|---|---|"]
    for label, steps in rows:
        mine = [c for c in cells if (c.label, c.steps) == (label, steps)]
        ok = sum(c.agrees for c in mine)
        equal = sum(c.difference == 0 for c in mine)
        far = sum(abs(c.z_combined) > TOLERANCE_SE for c in mine)
        lines.append(f"| {label} | {steps} | {ok} of {len(mine)} | {equal} | {far} |")
    off = sorted((c for c in cells if not c.agrees), key=lambda c: (-abs(c.z), c.label, c.steps, c.environment))
    lines += ["", f"{len(off)} of {len(cells)} cells differ by more than {TOLERANCE_SE:g} of our SE (sd/sqrt seeds):", "",
              "| Agent | Steps | environment | ours +- SE | published +- SE | z (our SE) | z (combined SE) |",
              "|---|---|---|---|---|---|---|"]
    for c in off:
        lines.append(f"| {c.label} | {c.steps} | {c.environment} | {c.ours:+.4f} +- {c.ours_se:.4f} | "
                     f"{c.published:+.4f} +- {c.published_se:.4f} | {c.z:+.1f} | {c.z_combined:+.1f} |")
    return "\n".join(lines)
