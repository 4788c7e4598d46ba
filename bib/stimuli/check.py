"""Validate episodes and sets: one file, a folder of episodes, or a generated set (`bib validate`).

A *set* is a folder with a ``manifest.csv``. Besides every episode's rules (schema, world rules,
its condition's rule and the pair rule, as for loose files), a set is checked against its
manifest: every row's file is present with its recorded hash (and its video, when it has one), no
episode or video file is there that no row names (e.g. a unit an interrupted run left half-built),
no leftover temporary file, every pair is complete (one expected and one unexpected episode) and
every twin names a pair of the set that names it back with the same test trials, labels swapped.

Every reader of episodes (score, train, render, export, stats, meg episodes) applies the same
schema and world-rule checks through :func:`load_checked`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bib.episode import EPISODE_MAX, Episode, load_episode, loads, validate
from bib.errors import BibInputError
from bib.guard import check_regular, decode, inside, read_bytes
from bib.tasks import validate_episode, validate_pair

MANIFEST = "manifest.csv"


@dataclass
class CheckReport:
    """Counts and one line per problem (an invalid file's first problem, or a set problem)."""

    n_files: int = 0
    n_invalid: int = 0
    problems: list[str] = field(default_factory=list)
    n_sets: int = 0

    @property
    def n_valid(self) -> int:
        return self.n_files - self.n_invalid

    def add(self, other: CheckReport) -> None:
        self.n_files += other.n_files
        self.n_invalid += other.n_invalid
        self.problems += other.problems
        self.n_sets += other.n_sets


def load_checked(path: str | os.PathLike[str]) -> Episode:
    """Load an episode and apply the per-episode checks every reader shares: the schema and the world
    rules (cells on the grid, paths through free cells, adjacent steps, key and lock events), as
    `bib validate` applies them.

    Every command that reads episodes (score, train, render, export, stats, meg episodes) reads them
    through this function, so an episode that breaks the world's rules (e.g. a path through a wall)
    is refused everywhere. The rules of an episode's condition (e.g. "the unexpected agent takes the
    longer path") are `bib validate`'s and the generator's business: imported recordings may break
    them and can still be scored.

    Raises:
        BibInputError: ``<file>: <first problem>`` (episode, trial, step and cell where known).
    """
    ep = load_episode(path)
    problems = validate(ep)
    if problems:
        raise BibInputError(f"{path}: {problems[0]}")
    return ep


def episode_files(path: str | os.PathLike[str]) -> list[Path]:
    """Episode JSON files at ``path`` (a file, or ``*.json`` below a folder, sorted).

    In a folder, JSON files that sit beside a ``manifest.csv`` (a generated set's own metadata,
    such as its spec) are not episodes and are skipped; episodes live in ``episodes/``. A file that
    resolves outside the folder (a symbolic link out of it) is refused.
    """
    p = Path(path)
    if p.is_file():
        return [p]
    if p.is_dir():
        return sorted(
            inside(p, f)
            for f in p.rglob("*.json")
            if not f.name.startswith(".") and not (f.parent / MANIFEST).exists()
        )
    if p.exists():  # a pipe, device or socket: refused by bib.guard (only regular files are read), at once
        check_regular(p)
    raise BibInputError(f"{p}: no such file or folder")


# ---------------------------------------------------------------- checking groups of episodes


@dataclass(frozen=True)
class _Item:
    """One episode to check: its file, and what the manifest says (None for loose files)."""

    path: str
    episode_id: str | None = None
    sha256: str | None = None


def _check_group(items: list[_Item]) -> list[tuple[str, str]]:
    """Check a group of episodes (a unit: a pair and its twin, or loose files); ``[(file, problem)]``.

    Per file: readable, the manifest's hash and id, schema, world and condition rules; then the pair
    rule of every complete pair in the group, and each twin against the pair it names.
    """
    bad: list[tuple[str, str]] = []
    good: dict[str, Episode] = {}
    for it in items:
        try:
            data = read_bytes(it.path, EPISODE_MAX)
        except BibInputError as exc:
            bad.append((it.path, str(exc)))
            continue
        if it.sha256 is not None and hashlib.sha256(data).hexdigest() != it.sha256:
            bad.append((it.path, f"{it.path}: sha256 differs from the manifest's (the file changed after generation)"))
            continue
        try:
            ep = loads(decode(data, it.path), it.path)
        except BibInputError as exc:
            bad.append((it.path, str(exc)))
            continue
        if it.episode_id is not None and ep.id != it.episode_id:
            bad.append((it.path, f"{it.path}: episode id is {ep.id!r}, but the manifest says {it.episode_id!r}"))
            continue
        problems = validate_episode(ep)
        if problems:
            bad.append((it.path, f"{it.path}: {problems[0]}"))
        else:
            good[it.path] = ep
    pairs: dict[str, dict[str, tuple[str, Episode]]] = {}
    for path, ep in good.items():
        if ep.pair_id and ep.outcome in ("expected", "unexpected"):
            pairs.setdefault(ep.pair_id, {})[ep.outcome] = (path, ep)
    for pair_id, members in sorted(pairs.items()):
        if len(members) != 2:
            continue
        (_, e), (fu, u) = members["expected"], members["unexpected"]
        problems = validate_pair(e, u)
        if problems:
            bad.append((fu, f"{fu}: pair {pair_id}: {problems[0]}"))
            continue
        if e.twin_id:
            twin = pairs.get(e.twin_id)
            if twin is None or len(twin) != 2:
                continue  # reported from the manifest (a loose folder may hold half of a twin group)
            te, tu = twin["expected"][1], twin["unexpected"][1]
            if te.twin_id != pair_id:
                bad.append((fu, f"{fu}: pair {pair_id}: twin {e.twin_id!r} does not name it back"))
            elif (te.test, tu.test) != (u.test, e.test):
                bad.append((fu, f"{fu}: pair {pair_id}: twin {e.twin_id!r} does not show the same test trials "
                                "with the labels swapped"))
    return bad


def _run_groups(groups: Iterator[list[_Item]], total: int, workers: int, progress: bool) -> Iterator[list[tuple[str, str]]]:
    from bib.parallel import map_ordered

    results = map_ordered(_check_group, groups, workers=workers)
    if progress:
        from bib.progress import track

        results = track(results, total=total, description="validating")
    yield from results


# ---------------------------------------------------------------- sets


def _unit_key(row: dict[str, str]) -> str:
    """Rows of a pair and of its twin share a key, so they are checked together."""
    pair = row["pair_id"]
    if not pair:
        return row["episode_id"]
    twin = row.get("twin_id") or ""
    return min(pair, twin) if twin else pair


def check_set(root: str | os.PathLike[str], workers: int = 1, progress: bool = False) -> CheckReport:
    """Check a generated set (a folder with ``manifest.csv``) against its manifest and every rule."""
    from bib.stimuli.manifest import read_manifest

    root = Path(root)
    report = CheckReport(n_sets=1)
    try:
        rows = read_manifest(root, strict=True)
    except BibInputError as exc:
        report.problems.append(str(exc))
        report.n_invalid = report.n_files = 1
        return report
    report.n_files = len(rows)
    invalid: set[str] = set()

    def problem(key: str, line: str) -> None:
        invalid.add(key)
        report.problems.append(line)

    seen: dict[str, int] = {}
    named: set[str] = set()
    for i, row in enumerate(rows, start=2):
        eid = row["episode_id"]
        if eid in seen:
            problem(eid, f"{root / MANIFEST}: row {i}: episode {eid!r} is also on row {seen[eid]}")
        seen.setdefault(eid, i)
        named.add(os.path.normpath(row["episode_path"]))
        if not (root / row["episode_path"]).is_file():
            problem(eid, f"{root / row['episode_path']}: missing (manifest row {i}, episode {eid})")
        if row["video_path"]:
            named.add(os.path.normpath(row["video_path"]))
            if not (root / row["video_path"]).is_file():
                problem(eid, f"{root / row['video_path']}: video missing (manifest row {i}, episode {eid})")
    # files no row names: units an interrupted run left behind, or files added by hand
    extra = 0
    for sub in ("episodes", "videos"):
        folder = root / sub
        if not folder.is_dir():
            continue
        for f in sorted(folder.rglob("*")):
            if not f.is_file():
                continue
            rel = os.path.normpath(f.relative_to(root))
            if f.name.startswith("."):
                report.problems.append(f"{f}: leftover temporary file of an interrupted run "
                                       "(rerun the same `bib generate` to finish the set)")
                extra += 1
            elif rel not in named and not (sub == "videos" and f.parent.name == "trials"):
                report.problems.append(f"{f}: not in the manifest (a unit an interrupted run left half-built, "
                                       "or a file added by hand)")
                extra += 1
    # pairs complete, twins name each other
    pairs: dict[str, dict[str, str]] = {}
    twin_of: dict[str, str] = {}
    for row in rows:
        if row["pair_id"]:
            pairs.setdefault(row["pair_id"], {})[row["outcome"]] = row["episode_id"]
            if row.get("twin_id"):
                twin_of[row["pair_id"]] = row["twin_id"]
    for pair_id, members in sorted(pairs.items()):
        if set(members) != {"expected", "unexpected"}:
            have = ", ".join(sorted(members)) or "nothing"
            for eid in members.values():
                invalid.add(eid)
            report.problems.append(f"{root / MANIFEST}: pair {pair_id} is incomplete (has {have}; "
                                   "needs one expected and one unexpected episode)")
        twin = twin_of.get(pair_id)
        if twin and twin_of.get(twin) != pair_id:
            invalid.update(members.values())
            why = "is not in the set" if twin not in pairs else "does not name it back"
            report.problems.append(f"{root / MANIFEST}: pair {pair_id}: twin {twin!r} {why}")
    # every episode's rules, a unit (pair and twin) at a time
    by_unit: dict[str, list[_Item]] = {}
    for row in rows:
        path = root / row["episode_path"]
        if row["episode_id"] in invalid or not path.is_file():
            continue
        by_unit.setdefault(_unit_key(row), []).append(_Item(str(path), row["episode_id"], row["sha256"]))
    by_path = {str(root / r["episode_path"]): r["episode_id"] for r in rows}
    groups = list(by_unit.values())
    for bad in _run_groups(iter(groups), len(groups), workers, progress):
        for path, line in bad:
            if by_path.get(path) not in invalid:
                invalid.add(by_path.get(path, path))
                report.problems.append(line)
    report.n_files += extra
    report.n_invalid = len(invalid) + extra
    return report


# ---------------------------------------------------------------- any path


CHUNK = 64
"""Loose episode files per work item (sorted, so the two files of a pair are usually together)."""


def check_loose(files: list[Path], workers: int = 1, progress: bool = False) -> CheckReport:
    """Check loose episode files; a pair split between two work items is checked again as a whole."""
    report = CheckReport(n_files=len(files))
    items = [_Item(str(f)) for f in files]
    chunks = [items[i : i + CHUNK] for i in range(0, len(items), CHUNK)]
    bad: dict[str, str] = {}
    for found in _run_groups(iter(chunks), len(chunks), workers, progress):
        for path, line in found:
            bad.setdefault(path, line)
    # pairs whose two files fell into different chunks
    ends = [(chunks[k][-1], chunks[k + 1][0]) for k in range(len(chunks) - 1)]
    for a, b in ends:
        for path, line in _check_group([a, b]):
            bad.setdefault(path, line)
    report.problems = [bad[str(f)] for f in files if str(f) in bad]
    report.n_invalid = len(report.problems)
    return report


def check_path(path: str | os.PathLike[str], workers: int = 1, progress: bool = False) -> CheckReport:
    """Validate everything at ``path``: a set (a folder with ``manifest.csv``, or the manifest itself),
    a folder holding sets and/or loose episode files (searched recursively), or one episode file."""
    p = Path(path)
    if p.is_file() and p.name == MANIFEST:
        p = p.parent
    if not p.exists():
        raise BibInputError(f"{p}: no such file or folder")
    report = CheckReport()
    roots: list[Path] = []
    if p.is_dir():
        roots = sorted(m.parent for m in p.rglob(MANIFEST) if not any(part.startswith(".") for part in m.parts[len(p.parts):]))
        for root in roots:
            report.add(check_set(root, workers, progress))
    loose = [f for f in episode_files(p) if not any(r == f.parent or r in f.parents for r in roots)]
    if not loose and not roots:
        raise BibInputError(f"{path}: no episode files (*.json) or manifest.csv found")
    if loose:
        report.add(check_loose(loose, workers, progress))
    return report
