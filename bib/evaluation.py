"""VOE evaluation: episode sets, results files, surprise readout, pairwise accuracy, bootstrap CIs, leaderboard.

Scoring rule (BIB [P §4]): a trial's surprise is the max over its test steps (mean optional); a
pair is correct when surprise(expected) < surprise(unexpected); a tie counts 0.5. The original
``test_bc.py`` computed ``exp < unexp + 0.5 * (exp == unexp)``, which is True on a tie, so it gave
ties FULL credit; we give them half. Chance is 50%.
"""

from __future__ import annotations

import contextlib
import csv
import math
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from bib.agent_table import AGENT_TABLE, agent_board, read_agent_published
from bib.errors import BibInputError
from bib.guard import check_header, check_regular, load_json, read_text, text_lines
from bib.io import atomic_open, atomic_write_text, csv_cell, csv_dict_writer, csv_value
from bib.resources import resource
from bib.results import Result, markdown_table
from bib.stimuli.sets import EpisodeRef, EpisodeSet, find_episodes  # noqa: F401 (find_episodes: public here too)
from bib.tasks import conditions, families, table_order

if TYPE_CHECKING:
    from matplotlib.figure import Figure

READOUTS = ("max", "mean")
RESULTS_HEADER = ["episode_id", "surprise"]
N_BOOTSTRAP = 2000


# ---------------------------------------------------------------- episode sets: bib.stimuli.sets


# ---------------------------------------------------------------- results files


def write_results(path: str | os.PathLike[str], surprise: Mapping[str, float]) -> None:
    """Write a results file (CSV ``episode_id,surprise``, one row per episode) atomically."""
    lines = [",".join(RESULTS_HEADER)]
    for eid, value in surprise.items():
        lines.append(f"{_csv_field(csv_cell(eid))},{float(value)!r}")
    atomic_write_text(path, "\n".join(lines) + "\n")


def _csv_field(text: str) -> str:
    return f'"{text.replace(chr(34), chr(34) * 2)}"' if any(c in text for c in ',"\n') else text


def read_results(path: str | os.PathLike[str], episodes: EpisodeSet | None = None, complete: bool = True) -> dict[str, float]:
    """Read and validate a results file against an episode set (the one reader of results files).

    Every episode appears at most once with a finite surprise, and no id outside the set may appear;
    with ``complete`` (scoring and evaluation) every episode of the set must appear. Errors name the
    file and the rows (up to five problems in one line).

    Raises:
        BibInputError: on any problem.
    """
    p = Path(path)
    lines = text_lines(p)
    problems: list[str] = []
    out: dict[str, float] = {}
    first_row: dict[str, int] = {}
    mentioned: set[str] = set()
    known = episodes.ids() if episodes is not None else None
    with contextlib.closing(lines):
        reader = csv.reader(lines)
        header = next(reader, None)
        if header is None or [h.strip() for h in header] != RESULTS_HEADER:
            raise BibInputError(f"{p}: header must be 'episode_id,surprise', got {','.join(header or [])!r}")
        for row_no, row in enumerate(reader, start=2):
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != 2:
                problems.append(f"row {row_no}: expected 2 fields, got {len(row)}")
                continue
            eid, raw = row[0].strip(), row[1].strip()
            mentioned.add(eid)
            try:
                value = float(raw)
            except ValueError:
                problems.append(f"row {row_no}: surprise {raw!r} is not a number")
                continue
            if not math.isfinite(value):
                problems.append(f"row {row_no}: surprise of {eid!r} is {raw} (must be finite)")
                continue
            if eid in first_row:
                problems.append(f"row {row_no}: episode {eid!r} appears again (first at row {first_row[eid]})")
                continue
            if known is not None and eid not in known:
                problems.append(f"row {row_no}: unknown episode id {eid!r}")
                continue
            first_row[eid] = row_no
            out[eid] = value
    if known is not None and complete:
        missing = sorted(known - mentioned)
        if missing:
            shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
            problems.append(f"{len(missing)} episode(s) have no row: {shown}")
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise BibInputError(f"{p}: " + "; ".join(problems[:5]) + more)
    return out


def steps_path(results: str | os.PathLike[str]) -> Path:
    """Where the per-step surprise of a results file lives: ``results.csv -> results.steps.parquet``."""
    p = Path(results)
    return p.with_name(p.stem + ".steps.parquet")


def write_steps(path: str | os.PathLike[str], steps: Iterable[tuple[str, np.ndarray]]) -> None:
    """Write per-step surprise as Parquet (columns ``episode_id``, ``step`` from 1, ``surprise``), atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids: list[str] = []
    step: list[np.ndarray] = []
    values: list[np.ndarray] = []
    for eid, s in steps:
        s = np.asarray(s, dtype=np.float64)
        ids += [eid] * len(s)
        step.append(np.arange(1, len(s) + 1, dtype=np.int32))
        values.append(s)
    table = pa.table(
        {
            "episode_id": pa.array(ids, type=pa.string()),
            "step": pa.array(np.concatenate(step) if step else np.zeros(0, np.int32)),
            "surprise": pa.array(np.concatenate(values) if values else np.zeros(0)),
        }
    )
    with atomic_open(path, "wb") as fh:
        pq.write_table(table, fh)


STEPS_COLUMNS = {"episode_id": "a string", "step": "an integer", "surprise": "a floating-point number"}
"""The per-step Parquet's columns and their types (:func:`write_steps` writes them, :func:`read_steps` checks them)."""
STEPS_MAX = 10_000_000
"""Most rows of a per-step Parquet file read (a set of 10,000 episodes of 100 steps is 1,000,000)."""


def _steps_type_ok(column: str, kind: object) -> bool:
    import pyarrow as pa

    t = pa.types
    if column == "episode_id":
        return bool(t.is_string(kind) or t.is_large_string(kind))
    if column == "step":
        return bool(t.is_integer(kind))
    return bool(t.is_floating(kind))


def _check_steps_file(path: Path) -> None:
    """Refuse, before any column is read, a per-step Parquet that is not a regular file (a FIFO would hang
    the reader), is larger than bib reads, or whose footer claims more than :data:`STEPS_MAX` rows (issue
    39: a small file claiming 200 M rows took 4.5 GB)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bib.guard import TEXT_MAX, check_size, read_bytes

    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        read_bytes(path, 0)  # the one-line refusal of a FIFO or device, without waiting on it
    check_size(path, st.st_size, TEXT_MAX, "per-step file")
    try:
        rows = pq.ParquetFile(path).metadata.num_rows
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise BibInputError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0][:160] if str(exc) else exc!r})") from None
    if rows > STEPS_MAX:
        raise BibInputError(f"{path}: {rows:,} rows of per-step surprise; bib reads at most {STEPS_MAX:,}")


def read_steps(path: str | os.PathLike[str], episodes: EpisodeSet | None = None,
               n_steps: Mapping[str, int] | None = None) -> dict[str, np.ndarray]:
    """Read and validate a per-step Parquet (the one reader of them): per-step surprise by episode id, steps in order.

    The file must be a regular Parquet file of at most :data:`STEPS_MAX` rows (:func:`_check_steps_file`,
    from its footer) with the columns of :data:`STEPS_COLUMNS` in their types and no nulls; every surprise
    finite; each episode's steps 1, 2, ..., n, each once. With ``episodes``, no id outside the set; with
    ``n_steps`` (``{id: its test trial's steps}``), each episode has exactly as many steps as its test
    trial. The first problem is one line naming the file (and the row, from 1).

    Raises:
        BibInputError: on the first problem.
    """
    import pyarrow.parquet as pq

    _check_steps_file(Path(path))
    try:
        schema = pq.read_schema(path)
    except (OSError, ValueError) as exc:
        raise BibInputError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0] if str(exc) else exc!r})") from None
    for column, kind in STEPS_COLUMNS.items():
        if column not in schema.names:
            raise BibInputError(f"{path}: no column {column!r} (the columns are {', '.join(STEPS_COLUMNS)})")
        if not _steps_type_ok(column, schema.field(column).type):
            raise BibInputError(f"{path}: column {column!r} is {schema.field(column).type}, must be {kind}")
    try:
        table = pq.read_table(path, columns=list(STEPS_COLUMNS))
    except (OSError, ValueError, KeyError) as exc:
        raise BibInputError(f"{path}: cannot read per-step surprise ({exc})") from None
    for column in STEPS_COLUMNS:
        nulls = table.column(column).null_count
        if nulls:
            raise BibInputError(f"{path}: column {column!r} has {nulls} empty value(s)")
    ids = table.column("episode_id").to_pylist()
    step = table.column("step").to_numpy().astype(np.int64)
    value = table.column("surprise").to_numpy().astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(value))
    if bad.size:
        i = int(bad[0])
        raise BibInputError(f"{path}: row {i + 1}: surprise of {ids[i]!r} at step {step[i]} is {value[i]} (must be finite)")
    known = episodes.ids() if episodes is not None else None
    rows: dict[str, list[int]] = {}
    for i, eid in enumerate(ids):
        rows.setdefault(eid, []).append(i)
    out: dict[str, np.ndarray] = {}
    for eid, where in rows.items():
        if known is not None and eid not in known:
            raise BibInputError(f"{path}: row {where[0] + 1}: unknown episode id {eid!r}")
        order = sorted(where, key=lambda i: step[i])
        got = step[order]
        if not np.array_equal(got, np.arange(1, len(got) + 1)):
            raise BibInputError(f"{path}: episode {eid!r}: steps must be 1..{len(got)}, each once "
                                f"(got {', '.join(str(int(s)) for s in got[:6])}{', ...' if len(got) > 6 else ''})")
        if n_steps is not None and eid in n_steps and len(got) != n_steps[eid]:
            raise BibInputError(f"{path}: episode {eid!r} has {len(got)} steps; its test trial has {n_steps[eid]}")
        out[eid] = value[order]
    return out


def check_steps_agree(results_path: str | os.PathLike[str], per_episode: Mapping[str, float],
                      steps: Mapping[str, np.ndarray]) -> None:
    """Refuse (BibInputError) per-step surprise that misses an episode of the results file, or whose max is not
    the file's surprise (``bib score`` writes the max readout beside the steps: the two must say the same)."""
    steps_file = steps_path(results_path)
    missing = [eid for eid in per_episode if eid not in steps]
    if missing:
        raise BibInputError(f"{steps_file}: no per-step surprise for {len(missing)} episode(s), e.g. {missing[0]}")
    for eid, value in per_episode.items():
        top = readout(steps[eid], "max")
        if top != value:
            raise BibInputError(f"{steps_file}: episode {eid!r}: the max of its steps is {top}, but "
                                f"{Path(results_path).name} says {value!r}")


# ---------------------------------------------------------------- accuracy


def readout(values: Sequence[float] | np.ndarray, how: str = "max") -> float:
    """Reduce per-step surprise to one number per trial: ``max`` (BIB's choice) or ``mean``.

    An empty test trial (no steps) reads as 0.
    """
    if how not in READOUTS:
        raise BibInputError(f"--readout must be one of {', '.join(READOUTS)}, got {how!r}")
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return 0.0
    return float(arr.max() if how == "max" else arr.mean())


def pair_score(expected: float, unexpected: float) -> float:
    """1 when expected < unexpected, 0.5 on a tie, 0 otherwise (the original code gave ties 1)."""
    if expected < unexpected:
        return 1.0
    return 0.5 if expected == unexpected else 0.0


def bootstrap_ci(scores: Sequence[float] | np.ndarray, n_boot: int = N_BOOTSTRAP, seed: int = 0) -> tuple[float, float]:
    """Percentile 95% bootstrap interval of the mean pair score (pairs resampled with replacement, seeded)."""
    arr = np.asarray(scores, dtype=np.float64)
    if arr.size == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = arr[rng.integers(0, arr.size, size=(n_boot, arr.size))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return (float(lo), float(hi))


@dataclass(frozen=True)
class ConditionResult:
    """Pairwise accuracy of one condition."""

    condition: str
    accuracy: float
    ci_low: float
    ci_high: float
    n_pairs: int
    n_ties: int


def pair_up(refs: Sequence[EpisodeRef]) -> dict[str, list[tuple[str, str]]]:
    """``{condition: [(expected id, unexpected id)]}`` from the paired episodes (``outcome`` none is skipped).

    Raises:
        BibInputError: a pair without exactly one expected and one unexpected episode, or whose
            episodes disagree on the condition.
    """
    by_pair: dict[str, dict[str, EpisodeRef]] = {}
    for r in refs:
        if r.outcome not in ("expected", "unexpected"):
            continue
        if not r.pair_id:
            raise BibInputError(f"{r.path}: {r.outcome} episode {r.id!r} has no pair_id")
        side = by_pair.setdefault(r.pair_id, {})
        if r.outcome in side:
            raise BibInputError(f"pair {r.pair_id!r} has two {r.outcome} episodes: {side[r.outcome].id}, {r.id}")
        side[r.outcome] = r
    out: dict[str, list[tuple[str, str]]] = {}
    for pid in sorted(by_pair):
        side = by_pair[pid]
        if len(side) != 2:
            have = next(iter(side.values()))
            lacking = "unexpected" if "expected" in side else "expected"
            raise BibInputError(f"pair {pid!r} has no {lacking} episode (only {have.id} at {have.path})")
        e, u = side["expected"], side["unexpected"]
        if e.condition != u.condition:
            raise BibInputError(f"pair {pid!r}: conditions differ ({e.condition} vs {u.condition})")
        out.setdefault(e.condition, []).append((e.id, u.id))
    return out


def order_conditions(names: Iterable[str]) -> list[str]:
    """``names`` in BIB's table order (registered conditions first, then the others sorted)."""
    have = set(names)
    known = conditions()
    return [c for c in known if c in have] + sorted(have - set(known))


def evaluate(
    refs: Sequence[EpisodeRef], surprise: Mapping[str, float], seed: int = 0, n_boot: int = N_BOOTSTRAP
) -> dict[str, ConditionResult]:
    """Pairwise accuracy with a bootstrap 95% CI per condition (BIB's conditions first, in table order)."""
    pairs = pair_up(refs)
    out = {}
    for cond in order_conditions(pairs):
        scores = np.array([pair_score(surprise[e], surprise[u]) for e, u in pairs[cond]])
        lo, hi = bootstrap_ci(scores, n_boot=n_boot, seed=seed)
        out[cond] = ConditionResult(cond, float(scores.mean()), lo, hi, int(scores.size), int((scores == 0.5).sum()))
    return out


# ---------------------------------------------------------------- difficulty bins

EVIDENCE_EDGES: tuple[float, ...] = (-math.inf, 0.0, 1.0, 2.0, 4.0, 8.0, 16.0, math.inf)
"""Bin edges of a pair's evidence (manifest column ``evidence``, nats; :func:`bib.tasks.difficulty.pair_evidence`):
below 0 (the pair misleads even the generator's own agent model), then octaves from 1 nat
(a likelihood factor e, e^2, e^4, ...): ``[-inf, 0), [0, 1), [1, 2), [2, 4), [4, 8), [8, 16), [16, inf)``.
Fixed by the measure's scale, not by any run, so curves of observers and sets line up; a larger
evidence is an easier pair (the accuracy of an observer that understands agents rises)."""

EXCESS_EDGES: tuple[float, ...] = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, math.inf)
"""Bin edges of a pair's excess cost (manifest column ``difficulty``: the size of its deviation, in
cells), the generator's grading: ``[0, 0.5), [0.5, 1), ..., [3, 5), [5, inf)``."""

MEASURES: dict[str, tuple[tuple[float, ...], str]] = {
    "evidence": (EVIDENCE_EDGES, "evidence of the pair under the generator's agent (nats; smaller is harder)"),
    "excess": (EXCESS_EDGES, "generator's grading: the deviation's excess path cost, cost-reward's decisive margin gap "
                             "(cells; smaller is harder)"),
}
"""Difficulty measures a curve can bin on: ``{name: (edges, axis label)}``. ``evidence`` is the
difficulty ``bib evaluate`` and ``bib audit`` report; ``excess`` (the manifest's ``difficulty`` column, the generator's
grading) is ``bib evaluate --difficulty excess``'s."""

DIFFICULTY_EDGES = EVIDENCE_EDGES
"""The edges of the difficulty curve ``bib evaluate`` reports (the evidence's)."""


def difficulty_label(lo: float, hi: float) -> str:
    """``"0.5-1"`` for the bin [0.5, 1), ``">=5"`` for [5, inf), ``"<0"`` for [-inf, 0)."""
    if math.isinf(lo):
        return f"<{hi:g}"
    return f">={lo:g}" if math.isinf(hi) else f"{lo:g}-{hi:g}"


def bin_labels(measure: str = "evidence") -> tuple[str, ...]:
    """The bin labels of ``measure`` in order."""
    edges = _edges(measure)
    return tuple(difficulty_label(lo, hi) for lo, hi in zip(edges, edges[1:]))


def _edges(measure: str) -> tuple[float, ...]:
    if measure not in MEASURES:
        raise ValueError(f"difficulty measure must be one of {', '.join(MEASURES)}, got {measure!r}")
    return MEASURES[measure][0]


DIFFICULTY_BINS: tuple[str, ...] = bin_labels("evidence")
"""Bin labels of the difficulty curve in order."""


def difficulty_bin(value: float, measure: str = "evidence") -> str:
    """The label of the bin of ``measure`` holding ``value`` (values below the first edge go to the first bin)."""
    edges, labels = _edges(measure), bin_labels(measure)
    for lo, hi, label in zip(edges[1:-1], edges[2:], labels[1:]):
        if lo <= value < hi:
            return label
    return labels[0] if value < edges[1] else labels[-1]


def pair_difficulties(refs: Sequence[EpisodeRef], measure: str = "evidence") -> dict[tuple[str, str], float]:
    """``{(expected id, unexpected id): value}`` of ``measure`` (``evidence`` or ``excess``, the
    ``difficulty`` column) for the pairs that have one (the unexpected row's, else the expected's)."""
    _edges(measure)
    by_id = {r.id: r for r in refs}

    def value_of(r: EpisodeRef) -> float | None:
        return r.evidence if measure == "evidence" else r.difficulty

    out = {}
    for pairs in pair_up(refs).values():
        for e, u in pairs:
            value = value_of(by_id[u]) if value_of(by_id[u]) is not None else value_of(by_id[e])
            if value is not None:
                out[(e, u)] = value
    return out


def evaluate_difficulty(
    refs: Sequence[EpisodeRef], surprise: Mapping[str, float], seed: int = 0, n_boot: int = N_BOOTSTRAP,
    measure: str = "evidence",
) -> dict[str, dict[str, ConditionResult]]:
    """Pairwise accuracy per difficulty bin: ``{"all": {bin: result}, condition: {bin: result}, ...}``.

    ``measure`` is what is binned (:data:`MEASURES`: the pair's evidence by default, or the
    excess cost of its deviation). Only pairs with a value count; only bins holding pairs appear,
    in bin order. ``all`` pools the conditions (each pair once). Empty when no pair has a value.
    """
    diff = pair_difficulties(refs, measure)
    if not diff:
        return {}
    cond_of = {(e, u): c for c, pairs in pair_up(refs).items() for e, u in pairs}
    groups: dict[str, dict[str, list[float]]] = {}
    for (e, u), value in diff.items():
        score = pair_score(surprise[e], surprise[u])
        label = difficulty_bin(value, measure)
        for key in ("all", cond_of[(e, u)]):
            groups.setdefault(key, {}).setdefault(label, []).append(score)
    order = ["all", *order_conditions(set(groups) - {"all"})]
    out: dict[str, dict[str, ConditionResult]] = {}
    for key in order:
        out[key] = {}
        for label in bin_labels(measure):
            if label in groups[key]:
                scores = np.asarray(groups[key][label])
                lo, hi = bootstrap_ci(scores, n_boot=n_boot, seed=seed)
                out[key][label] = ConditionResult(key, float(scores.mean()), lo, hi, int(scores.size),
                                                  int((scores == 0.5).sum()))
    return out


def _result_json(r: ConditionResult) -> dict[str, object]:
    return {"accuracy": r.accuracy, "ci_low": r.ci_low, "ci_high": r.ci_high, "n_pairs": r.n_pairs, "n_ties": r.n_ties}


def difficulty_json(by_bin: Mapping[str, Mapping[str, ConditionResult]], measure: str = "evidence") -> dict[str, object]:
    """``{"measure", "edges", "bins", "groups": {"all" | condition: {bin: {"accuracy", "ci_low", "ci_high", "n_pairs",
    "n_ties"}}}}``; infinite edges are written as None."""
    return {
        "measure": measure,
        "edges": [e if math.isfinite(e) else None for e in _edges(measure)],
        "bins": list(bin_labels(measure)),
        "groups": {k: {b: _result_json(r) for b, r in v.items()} for k, v in by_bin.items()},
    }


@dataclass
class DifficultyCurve(Result):
    """Pairwise accuracy per difficulty bin of one observer on one set (``difficulty.{json,md,png,svg}``).

    Attributes:
        groups: ``{"all" | condition: {bin: ConditionResult}}`` from :func:`evaluate_difficulty`.
        title: the figure's title (e.g. the observer and the set).
        measure: what the bins are of (:data:`MEASURES`).
    """

    name: ClassVar[str] = "difficulty"
    groups: dict[str, dict[str, ConditionResult]]
    title: str = ""
    measure: str = "evidence"

    def to_json(self) -> dict[str, object]:
        """The :func:`difficulty_json` object (``measure``, ``edges``, ``bins``, ``groups``)."""
        return difficulty_json(self.groups, self.measure)

    def to_markdown(self) -> str:
        """Accuracy (%) per bin: all conditions pooled, then each condition, with pairs per bin."""
        bins = [b for b in bin_labels(self.measure) if any(b in g for g in self.groups.values())]
        rows = [[key, *(f"{100 * g[b].accuracy:.1f} ({g[b].n_pairs})" if b in g else "-" for b in bins)]
                for key, g in self.groups.items()]
        note = (f"Accuracy % (pairs) per difficulty bin: the {MEASURES[self.measure][1]}; "
                "`all` pools the conditions.")
        return note + "\n\n" + markdown_table(["conditions", *bins], rows)

    def plot(self) -> Figure:
        """All conditions pooled (black, 95% CI bars) and each condition, accuracy against the bin; chance dashed."""
        from matplotlib.figure import Figure  # lazy: matplotlib is only needed to draw

        fig = Figure(figsize=(6.4, 4.0))
        ax = fig.add_subplot()
        bins = list(bin_labels(self.measure))
        for key, per_bin in self.groups.items():
            xs = [bins.index(b) for b in per_bin]
            ys = np.array([100 * r.accuracy for r in per_bin.values()])
            if key == "all":
                lo = np.array([100 * r.ci_low for r in per_bin.values()])
                hi = np.array([100 * r.ci_high for r in per_bin.values()])
                ax.errorbar(xs, ys, yerr=np.vstack([ys - lo, hi - ys]), color="black", linewidth=2.2, marker="o",
                            capsize=3, label="all conditions (95% CI)", zorder=3)
            else:
                ax.plot(xs, ys, marker=".", linewidth=1, alpha=0.8, label=key)
        ax.axhline(50, color="grey", linestyle="--", linewidth=1)
        ax.set_xticks(range(len(bins)), bins)
        ax.set_xlim(-0.5, len(bins) - 0.5)
        ax.set_ylim(0, 102)
        ax.set_xlabel(f"difficulty: {MEASURES[self.measure][1]}")
        ax.set_ylabel("pairwise accuracy (%)")
        if self.title:
            ax.set_title(self.title, fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
        fig.tight_layout()
        return fig


def family_averages(results: Mapping[str, ConditionResult]) -> dict[str, float]:
    """Unweighted mean accuracy of each family whose three conditions are all present (as BIB's tables)."""
    return {
        fam: float(np.mean([results[c].accuracy for c in conds]))
        for fam, conds in families().items()
        if all(c in results for c in conds)
    }


SCHEMA = "bib.evaluation/2"
"""``schema`` of ``evaluation.json``: version 2 added ``schema``, ``bib_version``, ``model``, ``set`` and ``overall``
(version 1, without a ``schema`` field, had ``readout``, ``tie_rule``, ``conditions``, ``averages`` and ``sets``)."""


def overall(results: Mapping[str, ConditionResult]) -> dict[str, float | None]:
    """The overall numbers, as BIB reports them: ``mean`` (the unweighted mean accuracy over the conditions
    evaluated) and ``<family>_average`` (``efficiency_average``, ``instrumental_average``: the unweighted mean of
    the family's conditions, None unless all of them were evaluated)."""
    fams = family_averages(results)
    return {"mean": float(np.mean([r.accuracy for r in results.values()])) if results else None,
            **{f"{fam}_average": fams.get(fam) for fam in families()}}


def set_summary(refs: Sequence[EpisodeRef], sets: Sequence[Mapping[str, object]]) -> dict[str, object]:
    """``{"spec", "seed", "episodes", "pairs", "limited"}`` of an evaluated set: the spec name(s) and seed(s) of
    the generated set(s) found (None for loose episodes; several are joined by ``; `` / listed), its size."""
    names = [str(s.get("name")) for s in sets]
    seeds = [s.get("seed") for s in sets]
    return {"spec": "; ".join(names) if names else None, "seed": seeds[0] if len(seeds) == 1 else (seeds or None),
            "episodes": len(refs), "pairs": len({r.pair_id for r in refs if r.outcome in ("expected", "unexpected")}),
            "limited": any(bool(s.get("limited")) for s in sets)}


#: Fewer pairs than this in a condition and its accuracy and CI carry a warning (2 pairs can show 100% [100-100]).
MIN_PAIRS = 10


def few_pairs_warning(condition: str, n_pairs: int) -> str | None:
    """The warning of a condition with fewer than :data:`MIN_PAIRS` pairs (None with enough)."""
    if n_pairs >= MIN_PAIRS:
        return None
    return (f"{condition}: only {n_pairs} pair{'s' * (n_pairs != 1)} (fewer than {MIN_PAIRS}): its accuracy and 95% CI "
            "rest on too few pairs to say much")


def few_pairs_warnings(results: Mapping[str, ConditionResult]) -> list[str]:
    """One warning per condition with fewer than :data:`MIN_PAIRS` pairs."""
    return [w for c, r in results.items() if (w := few_pairs_warning(c, r.n_pairs)) is not None]


TIE_SHARE_WARN = 0.5
"""Share of all pairs tied (expected and unexpected surprise equal) at or above which ``bib evaluate`` warns that the
model's surprise does not depend on its input (issue 42: a collapsed frame encoder). A model whose surprise follows
its input ties only where a pair's scored steps coincide: the committed learned observers tie 0.2-0.5% of bib-eval's
8,267 pairs (0.5-0.8% of bib-ctrl's) and at most 8.5% of one condition's, so half of at least :data:`MIN_PAIRS` pairs tied has a chance
below 1e-3 under such a model (binomial, 5 of 10 at p = 0.085). A discrete heuristic ties more where its rule
cannot tell a pair apart (closest-object 37.6% of bib-eval, below the line; the path-length probe 53.0%, above it);
a constant surprise ties every pair."""


def ties_warning(results: Mapping[str, ConditionResult]) -> str | None:
    """The warning when at least :data:`TIE_SHARE_WARN` of at least :data:`MIN_PAIRS` pairs tie (None otherwise)."""
    pairs = sum(r.n_pairs for r in results.values())
    ties = sum(r.n_ties for r in results.values())
    if pairs < MIN_PAIRS or ties < TIE_SHARE_WARN * pairs:
        return None
    return (f"{ties} of {pairs} pairs tie ({100 * ties / pairs:.1f}%, at least {100 * TIE_SHARE_WARN:.0f}%): the model's "
            "surprise does not tell most pairs apart, as if it did not depend on the input (a collapsed encoder? a "
            "constant output?); each tie scores 0.5")


def evaluation_warnings(results: Mapping[str, ConditionResult]) -> list[str]:
    """The warnings of an evaluation: :func:`ties_warning` first, then :func:`few_pairs_warnings`."""
    tie = ties_warning(results)
    return ([tie] if tie is not None else []) + few_pairs_warnings(results)


def evaluation_json(results: Mapping[str, ConditionResult], readout_name: str, **extra: object) -> dict[str, object]:
    """The ``bib evaluate --json`` object (``evaluation.json``, schema :data:`SCHEMA`): ``{"schema", "bib_version",
    "readout", "tie_rule", "conditions": {C: {"accuracy", "ci_low", "ci_high", "n_pairs", "n_ties"}}, "averages",
    "overall", "warnings" (:func:`evaluation_warnings`), ...extra}`` (``extra``: ``model``, ``set``, ``sets``, ``difficulty``)."""
    from bib import __version__

    return {
        "schema": SCHEMA,
        "bib_version": __version__,
        "readout": readout_name,
        "tie_rule": "a tie counts 0.5",
        "conditions": {c: _result_json(r) for c, r in results.items()},
        "averages": family_averages(results),
        "overall": overall(results),
        "warnings": evaluation_warnings(results),
        **extra,
    }


@dataclass
class Evaluation(Result):
    """Pairwise VOE accuracy of one observer on one episode set (what ``bib evaluate`` prints and writes).

    Attributes:
        conditions: ``{condition: ConditionResult}`` in table order (from :func:`evaluate`).
        readout: ``max`` or ``mean``.
        sets: the generated sets evaluated (``{"path", "name", "seed"}``, from :class:`EpisodeSet`).
        difficulty: accuracy per difficulty bin (:func:`evaluate_difficulty`), when the pairs have one.
        model: the model card (``{"name", "parameters", "training_data", "seed"}``; only ``name`` is required,
            the observer's ``name`` attribute), from :func:`bib.observers.scoring.model_card`.
        episode_set: :func:`set_summary` of the set (``spec``, ``seed``, ``episodes``, ``pairs``).
        note: the note of a ``bib blind`` key evaluated against (``public: scores are not blind (why)``, a kit of
            a set anyone can rebuild: :mod:`bib.stimuli.origin`); first in the table and ``note`` in the JSON.
        measure: what ``difficulty`` bins (:data:`MEASURES`; the evidence unless ``bib evaluate --difficulty``).
    """

    name: ClassVar[str] = "evaluation"
    conditions: dict[str, ConditionResult]
    readout: str = "max"
    sets: list[dict[str, object]] = field(default_factory=list)
    difficulty: dict[str, dict[str, ConditionResult]] = field(default_factory=dict)
    model: dict[str, object] = field(default_factory=dict)
    episode_set: dict[str, object] = field(default_factory=dict)
    note: str | None = None
    measure: str = "evidence"

    def to_json(self) -> dict[str, object]:
        """The :func:`evaluation_json` object (``schema``, ``bib_version``, ``readout``, ``tie_rule``, ``conditions``,
        ``averages``, ``overall``, ``model``, ``set``, ``sets``, ``difficulty`` (:func:`difficulty_json`) when
        the pairs have one, and ``note`` when there is one)."""
        extra: dict[str, object] = {"difficulty": difficulty_json(self.difficulty, self.measure)} if self.difficulty else {}
        if self.note:
            extra["note"] = self.note
        return evaluation_json(self.conditions, self.readout, model=self.model or {"name": None},
                               set=self.episode_set or set_summary([], self.sets), sets=self.sets, **extra)

    @property
    def overall(self) -> dict[str, float | None]:
        """:func:`overall` of the conditions (``mean``, ``efficiency_average``, ``instrumental_average``)."""
        return overall(self.conditions)

    def to_markdown(self) -> str:
        """Accuracy (%) with its 95% CI, pairs and ties per condition, then the family averages."""
        rows: list[list[object]] = [
            [c, f"{100 * r.accuracy:.1f}", f"{100 * r.ci_low:.1f}-{100 * r.ci_high:.1f}", r.n_pairs, r.n_ties]
            for c, r in self.conditions.items()
        ]
        rows += [[f"{fam} average", f"{100 * acc:.1f}", "", "", ""] for fam, acc in family_averages(self.conditions).items()]
        mean = self.overall["mean"]
        if mean is not None:
            rows.append(["mean of conditions", f"{100 * mean:.1f}", "", sum(r.n_pairs for r in self.conditions.values()),
                         sum(r.n_ties for r in self.conditions.values())])
        note = f"Readout: {self.readout}; a tie counts 0.5 (the original BIB code gave ties full credit)."
        who = self.model.get("name") if self.model else None
        if who:
            note = f"Model: {who}. " + note
        if self.note:
            note = f"{self.note}\n\n{note}"
        text = note + "\n\n" + markdown_table(["condition", "accuracy %", "95% CI", "pairs", "ties"], rows)
        text += "".join(f"\n\nWarning: {w}" for w in evaluation_warnings(self.conditions))
        if self.difficulty:
            text += "\n\n" + DifficultyCurve(self.difficulty, measure=self.measure).to_markdown()
        return text

    def plot(self) -> Figure:
        """Accuracy per condition with its 95% CI, chance (50%) dashed."""
        from matplotlib.figure import Figure  # lazy: matplotlib is only needed to draw

        names = list(self.conditions)
        acc = np.array([100 * r.accuracy for r in self.conditions.values()])
        lo = np.array([100 * r.ci_low for r in self.conditions.values()])
        hi = np.array([100 * r.ci_high for r in self.conditions.values()])
        fig = Figure(figsize=(6, 0.4 * len(names) + 1.2))
        ax = fig.add_subplot()
        y = np.arange(len(names))[::-1]
        ax.barh(y, acc, xerr=np.vstack([acc - lo, hi - acc]), color="#4c72b0", capsize=3)
        ax.axvline(50, color="grey", linestyle="--", linewidth=1)
        ax.set_yticks(y, names)
        ax.set_xlim(0, 100)
        ax.set_xlabel(f"pairwise accuracy (%), {self.readout} readout")
        return fig


def read_evaluation(path: str | os.PathLike[str]) -> dict[str, object]:
    """Read an :func:`evaluation_json` object (``bib evaluate --json`` output) from ``path``.

    Raises:
        BibInputError: unreadable JSON, or an object without per-condition ``accuracy``.
    """
    p = Path(path)
    doc = load_json(read_text(p), p)
    conds = doc.get("conditions") if isinstance(doc, dict) else None
    if not isinstance(conds, dict) or not all(isinstance(v, dict) and "accuracy" in v for v in conds.values()):
        raise BibInputError(f"{p}: not a `bib evaluate --json` output (no 'conditions' with accuracies)")
    for name, v in conds.items():
        for key in ("accuracy", "ci_low", "ci_high"):
            x = v.get(key)
            if key != "accuracy" and x is None:
                continue
            if isinstance(x, bool) or not isinstance(x, int | float) or not (math.isfinite(x) and 0 <= x <= 1):
                raise BibInputError(f"{p}: conditions.{str(name)[:60]}.{key}: expected a number from 0 to 1, "
                                    f"got {str(x)[:40]!r}")
        n = v.get("n_pairs")
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            raise BibInputError(f"{p}: conditions.{str(name)[:60]}.n_pairs: expected a count, got {str(n)[:40]!r}")
    return doc


MODEL_JSON = "model.json"
"""The model card ``bib score`` writes beside its results (:func:`bib.observers.scoring.model_card`)."""
RESULTS = "results.csv"
"""The results file inside a ``bib score`` folder (per-step surprise beside it: results.steps.parquet)."""


def results_file(path: str | os.PathLike[str]) -> Path:
    """A results file given as a ``bib score`` folder (its :data:`RESULTS`) or as a CSV file.

    Raises:
        BibInputError: no such file, or a folder without results.
    """
    p = Path(path)
    if p.is_dir():
        p = p / RESULTS
        if not os.path.lexists(p):
            raise BibInputError(f"{path}: no {RESULTS} inside (not a `bib score` folder)")
    elif not os.path.lexists(p):
        raise BibInputError(f"{path}: no such file or folder")
    check_regular(p)  # a FIFO, a device or a link to one: refused in one line, never read or waited on
    return p


def read_model_card(folder: str | os.PathLike[str]) -> dict[str, object]:
    """The model card (:data:`MODEL_JSON`) ``bib score`` wrote into ``folder``; ``{}`` when there is none (results
    made by older versions or outside bib).

    Raises:
        BibInputError: a card that is not a JSON object.
    """
    p = Path(folder) / MODEL_JSON
    if not p.is_file():
        return {}
    doc = load_json(read_text(p), p)
    if not isinstance(doc, dict):
        raise BibInputError(f"{p}: the model card is not a JSON object")
    return doc


def surprise_by_episode(
    results_path: str | os.PathLike[str], episodes: EpisodeSet, how: str = "max"
) -> dict[str, float]:
    """One surprise per episode: the per-step Parquet beside the results reduced by ``how`` when it exists,
    else the results CSV itself (which must then be a max readout: ``--readout mean`` needs per-step values).
    """
    if how not in READOUTS:
        raise BibInputError(f"--readout must be one of {', '.join(READOUTS)}, got {how!r}")
    per_episode = read_results(results_path, episodes)
    steps_file = steps_path(results_path)
    if steps_file.exists():
        steps = read_steps(steps_file, episodes)
        check_steps_agree(results_path, per_episode, steps)
        return {eid: readout(steps[eid], how) for eid in per_episode}
    if how != "max":
        raise BibInputError(
            f"{results_path}: --readout {how} needs per-step surprise ({steps_file.name} beside the results file)"
        )
    return per_episode


# ---------------------------------------------------------------- leaderboard


ANCHORS = resource("published/voe_anchors.csv")
"""The published accuracies shipped with the package (``data/published/voe_anchors.csv`` in a checkout)."""
TABLE = resource("baselines/results.csv")
"""Our observers' accuracies shipped with the package (``baselines/results.csv`` in a checkout): the table
``bib leaderboard`` shows by default, wherever it runs."""
TABLE_COLUMNS = ["observer", "condition", "accuracy", "ci_low", "ci_high", "n_pairs", "readout", "stimuli", "limited",
                 "command", "schema", "bib_version", "model", "parameters", "training_data", "model_seed", "set_spec",
                 "set_seed", "set_episodes"]
"""Columns of an "ours" table (the packaged :data:`TABLE`, or any written by ``bib evaluate --table`` / ``bib
leaderboard --add ... --save``): accuracy in [0, 1], one row per observer and condition, then one row per
overall number (``efficiency-average``, ``instrumental-average``, ``mean``; no CI or pairs); ``limited`` is
``true`` when the set was built with ``--limit`` (a try-out, not the full set); ``schema`` and ``bib_version``
of the evaluation the row came from; ``model`` (the model's own name), ``parameters``, ``training_data``,
``model_seed`` (its model card, blank where unknown); the set's ``set_spec``, ``set_seed`` and ``set_episodes``.
Rows written before these columns existed have them blank."""
TABLE_SCHEMA = "bib.results-table/2"
"""``schema`` of the rows :func:`table_rows` writes."""
OVERALL_ROWS = {"mean": "mean"}
"""Condition names of the overall rows besides the family averages (``<family>-average``)."""


ANCHOR_TABLES: dict[str, str] = {
    "neurips": "NeurIPS",
    "poster": "poster",
    "irene": "IRENE paper",
    "hbtom": "HBToM paper",
}
"""The published tables the anchors come from (the ``table`` column of :data:`ANCHORS`) and the label a
leaderboard column gets when a model appears in more than one selected table: ``neurips``, Gandhi et al.
2021 Table 1; ``poster``, the BIB poster's baseline table; ``irene``, Bortoletto et al. 2024; ``hbtom``,
Zhi-Xuan et al. 2022."""


def read_anchors(path: str | os.PathLike[str] = ANCHORS, tables: Sequence[str] | None = None) -> list[dict[str, str]]:
    """Published accuracies (percent) per model and condition, with their table and source.

    Args:
        path: the anchors CSV (columns ``model, condition, accuracy, data, table, source``).
        tables: keep only rows of these tables (keys of :data:`ANCHOR_TABLES`); None keeps all.

    Returns:
        The rows, each with a ``column`` key: the model's name, or ``MODEL (TABLE LABEL)`` where the same
        model appears in more than one of the kept tables (``BC-MLP (NeurIPS)``, ``BC-MLP (poster)``).

    Raises:
        BibInputError: a table that is not one of :data:`ANCHOR_TABLES`, or a file without the columns.
    """
    unknown = [t for t in tables or () if t not in ANCHOR_TABLES]
    if unknown:
        raise BibInputError(f"--source {unknown[0]}: not a published table (one of {', '.join(ANCHOR_TABLES)})")
    p = Path(path)
    rows = _read_csv_table(p, ("model", "condition", "accuracy"), " (anchors need model, condition, accuracy)")
    for i, r in enumerate(rows, start=2):
        _check_number(p, i, r, "accuracy", 100.0)  # published accuracies are percentages
    if tables is not None:
        rows = [r for r in rows if r.get("table") in tables]
    order = {t: i for i, t in enumerate(ANCHOR_TABLES)}
    rows.sort(key=lambda r: order.get(r.get("table") or "", len(order)))  # columns grouped by table, in its order
    seen: dict[str, set[str]] = {}
    for r in rows:
        seen.setdefault(r["model"], set()).add(r.get("table") or "")
    for r in rows:
        table = r.get("table") or ""
        r["column"] = r["model"] if len(seen[r["model"]]) < 2 else f"{r['model']} ({ANCHOR_TABLES.get(table, table)})"
    return rows


def _read_csv_table(path: Path, required: Sequence[str], hint: str = "") -> list[dict[str, str]]:
    """The rows of a CSV whose ``#`` lines are comments (UTF-8, header names unique), refused with one line
    naming the file when a ``required`` column is missing (``hint`` is added to that line)."""
    reader = csv.DictReader(line for line in text_lines(path) if not line.startswith("#"))
    missing = [c for c in required if c not in check_header(reader.fieldnames, path)]
    if missing:
        raise BibInputError(f"{path}: missing column(s) {', '.join(missing)}{hint}")
    return list(reader)


def read_table(path: str | os.PathLike[str]) -> list[dict[str, str]]:
    """Rows of an "ours" table (see :data:`TABLE_COLUMNS`); a cell bib neutralised for spreadsheets
    (``'=name``, :func:`bib.io.csv_cell`) reads as what was written (``=name``), so a rewrite keeps it."""
    p = Path(path)
    rows = [{k: csv_value(v) if isinstance(v, str) else v for k, v in r.items()}
            for r in _read_csv_table(p, ("observer", "condition", "accuracy"))]
    for i, r in enumerate(rows, start=2):
        _check_number(p, i, r, "accuracy", 1.0)
        for key in ("ci_low", "ci_high"):
            if r.get(key):
                _check_number(p, i, r, key, 1.0)
        if r.get("n_pairs") and not (r["n_pairs"].isdigit() and len(r["n_pairs"]) <= 12):
            raise BibInputError(f"{p}: row {i}: n_pairs {r['n_pairs'][:40]!r} is not a count")
    return rows


def _check_number(path: Path, row: int, record: Mapping[str, str], key: str, top: float) -> None:
    """BibInputError unless ``record[key]`` is a finite number from 0 to ``top`` (an accuracy of 1e308
    was shown as inf, and text that is no number crashed the table; issue 39)."""
    text = record.get(key) or ""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise BibInputError(f"{path}: row {row}: {key} {text[:40]!r} is not a number") from None
    if not (math.isfinite(value) and 0.0 <= value <= top):
        raise BibInputError(f"{path}: row {row}: {key} {text[:40]!r} is not from 0 to {top:g}")


def table_rows(observer: str, evaluation: Mapping[str, object], stimuli: str, command: str) -> list[dict[str, object]]:
    """Rows for an "ours" table from a :func:`evaluation_json` object."""
    conds = evaluation["conditions"]
    assert isinstance(conds, dict)
    sets = evaluation.get("sets") or []
    limited = any(isinstance(s, dict) and s.get("limited") for s in sets)  # type: ignore[union-attr]
    model = evaluation.get("model") if isinstance(evaluation.get("model"), dict) else {}
    episode_set = evaluation.get("set") if isinstance(evaluation.get("set"), dict) else {}
    common = {"readout": evaluation["readout"], "stimuli": stimuli, "limited": "true" if limited else "false",
              "command": command, "schema": TABLE_SCHEMA if evaluation.get("schema") else "",
              "bib_version": evaluation.get("bib_version") or "", "model": model.get("name") or "",  # type: ignore[union-attr]
              "parameters": _blank(model.get("parameters")),  # type: ignore[union-attr]
              "training_data": _training_text(model.get("training_data")),  # type: ignore[union-attr]
              "model_seed": _blank(model.get("seed")),  # type: ignore[union-attr]
              "set_spec": _blank(episode_set.get("spec")), "set_seed": _blank(episode_set.get("seed")),  # type: ignore[union-attr]
              "set_episodes": _blank(episode_set.get("episodes"))}  # type: ignore[union-attr]
    rows = [{"observer": observer, "condition": c, "accuracy": f"{v['accuracy']:.4f}", "ci_low": f"{v['ci_low']:.4f}",
             "ci_high": f"{v['ci_high']:.4f}", "n_pairs": v["n_pairs"], **common} for c, v in conds.items()]
    summary = evaluation.get("overall") if isinstance(evaluation.get("overall"), dict) else {}
    for key, value in summary.items():  # type: ignore[union-attr]
        if value is not None:
            label = OVERALL_ROWS.get(key, key.replace("_average", "-average"))
            rows.append({"observer": observer, "condition": label, "accuracy": f"{value:.4f}", **common})
    return rows


def _blank(value: object) -> str:
    if value is None:
        return ""
    return "; ".join(str(v) for v in value) if isinstance(value, list) else str(value)


def _training_text(data: object) -> str:
    """A model card's ``training_data`` in one table cell: the set(s) or path, and the episode count."""
    if not isinstance(data, dict):
        return _blank(data)
    listed = data.get("sets") if isinstance(data.get("sets"), list) else []  # a card is a model's file: any JSON
    sets = "; ".join(f"{s.get('name')} seed {s.get('seed')}" for s in listed if isinstance(s, dict))
    count = f", {data['episodes']} episodes" if data.get("episodes") is not None else ""
    return f"{sets or data.get('path') or '?'}{count}"


def check_table_update(path: str | os.PathLike[str], observer: str, replace: bool) -> None:
    """Refuse (BibInputError) to overwrite ``observer``'s rows of the table at ``path`` unless ``replace``."""
    p = Path(path)
    if p.exists() and not replace and any(r["observer"] == observer for r in read_table(p)):
        raise BibInputError(f"{p}: already has rows of {observer!r}; use --replace to replace them, or another --name")


def leaderboard_note(ours: Sequence[Mapping[str, str]], anchors: Sequence[Mapping[str, str]] = ()) -> str:
    """The note under a leaderboard: where the published numbers come from (per table of ``anchors``),
    and per column of ours its set, pairs per condition and whether the set was limited."""
    parts = []
    for name in dict.fromkeys(r["observer"] for r in ours):
        rows = [r for r in ours if r["observer"] == name]
        pairs = sorted(int(r["n_pairs"]) for r in rows if str(r.get("n_pairs", "")).isdigit())
        span = "" if not pairs else f", {pairs[0]}" + (f"-{pairs[-1]}" if pairs[-1] != pairs[0] else "") + " pairs per condition"
        limited = any(str(r.get("limited", "")).lower() == "true" for r in rows)
        parts.append(f"{name}: {rows[0].get('stimuli') or '?'}{span}" + (" (LIMITED set, built with --limit)" if limited else ""))
    tables = ", ".join(f"{ANCHOR_TABLES.get(t, t)}: {src}" for t, src in
                       dict.fromkeys((a.get("table") or "", a.get("source") or "") for a in anchors))
    return ("Published: original BIB data (" + (tables + "; " if tables else "")
            + "rows and sources in data/published/voe_anchors.csv; their tie rule gave "
            "ties full credit). Ours: " + ("; ".join(parts) if parts else "none yet")
            + " (generated by this package, not the original data; a tie counts 0.5).")


def upsert_table(path: str | os.PathLike[str], rows: Sequence[Mapping[str, object]]) -> None:
    """Replace the rows of the observers in ``rows`` in the table at ``path`` (created if absent), atomically."""
    p = Path(path).resolve()  # a link (baselines/results.csv in a checkout) is written through, not replaced
    names = {r["observer"] for r in rows}
    keep = [r for r in read_table(p) if r["observer"] not in names] if p.exists() else []
    with atomic_open(p, "w", newline="", encoding="utf-8") as fh:
        writer = csv_dict_writer(fh, TABLE_COLUMNS, lineterminator="\n", extrasaction="ignore")
        writer.writeheader()
        for r in [*keep, *rows]:
            writer.writerow({k: r.get(k, "") for k in TABLE_COLUMNS})


def leaderboard(anchors: Sequence[Mapping[str, str]], ours: Sequence[Mapping[str, str]]) -> tuple[list[str], list[list[str]]]:
    """A percent table: rows are conditions (+ family averages), columns published models then ours.

    Returns:
        ``(header, rows)``; missing entries are ``-``.
    """
    published = list(dict.fromkeys(a.get("column") or a["model"] for a in anchors))
    mine = list(dict.fromkeys(r["observer"] for r in ours))
    cell: dict[tuple[str, str], str] = {}
    for a in anchors:
        cell[(a.get("column") or a["model"], a["condition"])] = f"{float(a['accuracy']):.1f}"
    values: dict[tuple[str, str], float] = {}
    for r in ours:
        values[(r["observer"], r["condition"])] = 100.0 * float(r["accuracy"])
        cell[(r["observer"], r["condition"])] = f"{100.0 * float(r['accuracy']):.1f}"
    for name in mine:
        for fam, conds in families().items():
            if all((name, c) in values for c in conds):
                cell[(name, f"{fam}-average")] = f"{np.mean([values[(name, c)] for c in conds]):.1f}"
    rows_order = table_order()
    extra = sorted({r["condition"] for r in ours} - set(rows_order))
    limited = {r["observer"] for r in ours if str(r.get("limited", "")).lower() == "true"}
    header = ["condition", *published, *(f"{m} (ours{', LIMITED' if m in limited else ''})" for m in mine)]
    rows = [[c, *(cell.get((m, c), "-") for m in [*published, *mine])] for c in [*rows_order, *extra]]
    pairs = {m: sorted(int(r["n_pairs"]) for r in ours if r["observer"] == m and str(r.get("n_pairs", "")).isdigit())
             for m in mine}
    if mine:
        rows.append(["pairs", *("-" for _ in published),
                     *((f"{p[0]}" if p[0] == p[-1] else f"{p[0]}-{p[-1]}") if p else "-" for p in pairs.values())])
    return header, rows


@dataclass
class Leaderboard(Result):
    """``bib leaderboard``: our observers' accuracy (%) beside the published models' (:func:`leaderboard`).

    Attributes:
        header: ``condition``, the published models, then ours (``NAME (ours)``).
        rows: one row per condition (+ family averages and, with ours, a ``pairs`` row); ``-`` where absent.
        note: where the numbers come from (:func:`leaderboard_note`).
        agent: AGENT's published numbers beside ours (:func:`bib.agent_table.agent_board`): ``{"header", "rows",
            "note"}``, or empty.
    """

    name: ClassVar[str] = "leaderboard"
    header: list[str]
    rows: list[list[str]]
    note: str
    agent: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        """``{"header", "rows", "note"}`` (cells are strings, as printed), and ``agent`` (the same three) when set."""
        return {"header": self.header, "rows": self.rows, "note": self.note, **({"agent": self.agent} if self.agent else {})}

    def to_markdown(self) -> str:
        """The table (published columns, then ours) and the note under it; then AGENT's board and its note."""
        text = markdown_table(self.header, self.rows) + "\n\n" + self.note
        if self.agent:
            text += ("\n\nAGENT (Shu et al. 2021, Table 1) beside ours, accuracy %:\n\n"
                     + markdown_table(self.agent["header"], self.agent["rows"]) + "\n\n" + str(self.agent["note"]))  # type: ignore[arg-type]
        return text


def added_rows(add: Sequence[tuple[str, str | os.PathLike[str]]]) -> list[dict[str, str]]:
    """Table rows (:func:`table_rows`) of ``evaluation.json`` files (or folders holding one) added by name.

    Raises:
        BibInputError: an unreadable file, or one name given twice.
    """
    rows: list[dict[str, str]] = []
    seen: set[str] = set()
    for nm, path in add:
        if nm in seen:
            raise BibInputError(f"--add {nm}=...: the name {nm!r} is given twice")
        seen.add(nm)
        p = Path(path)
        doc = read_evaluation(p / "evaluation.json" if p.is_dir() else p)
        sets = "; ".join(f"{s.get('name')} seed {s.get('seed')}" for s in doc.get("sets", [])) or str(p)
        rows += [{k: str(v) for k, v in r.items()} for r in table_rows(nm, doc, sets, "")]
    return rows


def agent_rows(ours: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """The rows of ``ours`` on an AGENT scenario bib translates, or, when there are none, those of
    :data:`bib.agent_table.AGENT_TABLE` (the committed rows of both AGENT families): the AGENT board's "ours"."""
    from bib.tasks.registry import conditions

    scenarios = {r["scenario"] for r in read_agent_published()} & set(conditions())
    mine = [dict(r) for r in ours if r["condition"] in scenarios]
    return mine or read_table(AGENT_TABLE)


def build_leaderboard(table: str | os.PathLike[str] | None = None, add: Sequence[tuple[str, str | os.PathLike[str]]] = (),
                      *, replace: bool = False, anchors: str | os.PathLike[str] | None = None,
                      sources: Sequence[str] | None = None, save: bool = False) -> Leaderboard:
    """The leaderboard of an "ours" table plus evaluations added by name.

    Args:
        table: an "ours" table (``bib evaluate --table``; skipped when absent), or None for the packaged
            :data:`TABLE`.
        add: ``(name, path)`` of ``evaluation.json`` files (or the folders holding them) to add as columns.
        replace: let an added name replace the table's rows of that name (otherwise refused).
        anchors: the published accuracies (default: :data:`ANCHORS`).
        sources: the published tables to show (keys of :data:`ANCHOR_TABLES`); None shows all, a model in
            two tables as two labelled columns.
        save: also write the added rows into ``table`` (atomically; created if absent). Needs ``table``: the
            packaged table is not written.

    Raises:
        BibInputError: an added name the table already has (without ``replace``), unreadable files, or
            ``save`` without a table.
    """
    if save and table is None:
        raise BibInputError("--save needs a TABLE to write into (the built-in table ships with bib and is not written)")
    path = TABLE if table is None else Path(table)
    ours: list[dict[str, str]] = read_table(path) if path.exists() else []
    new = added_rows(add)
    for nm in dict.fromkeys(r["observer"] for r in new):
        if any(r["observer"] == nm for r in ours):
            if not replace:
                raise BibInputError(f"--add {nm}=...: {path} already has a {nm!r} column; "
                                    "use --replace to replace it, or another NAME")
            ours = [r for r in ours if r["observer"] != nm]
    ours += new
    if save and new:
        upsert_table(path, new)
    published = read_anchors(anchors or ANCHORS, sources)
    header, rows = leaderboard(published, ours)
    a_header, a_rows, a_note = agent_board(read_agent_published(), agent_rows(ours))
    return Leaderboard(header, rows, leaderboard_note(ours, published),
                       {"header": a_header, "rows": a_rows, "note": a_note})
