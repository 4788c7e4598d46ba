"""Validate episode files (one file or a folder): generic, condition and pair rules."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from bib.episode import Episode, load_episode
from bib.errors import BibInputError
from bib.tasks import validate_episode, validate_pair


@dataclass
class CheckReport:
    """Counts and one line per invalid file (its first problem)."""

    n_files: int = 0
    n_invalid: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def n_valid(self) -> int:
        return self.n_files - self.n_invalid


def episode_files(path: str | os.PathLike[str]) -> list[Path]:
    """Episode JSON files at ``path`` (a file, or ``*.json`` below a folder, sorted).

    In a folder, JSON files that sit beside a ``manifest.csv`` (a generated set's own metadata,
    such as its spec) are not episodes and are skipped; episodes live in ``episodes/``.
    """
    p = Path(path)
    if p.is_file():
        return [p]
    if p.is_dir():
        return sorted(
            f
            for f in p.rglob("*.json")
            if not f.name.startswith(".") and not (f.parent / "manifest.csv").exists()
        )
    raise BibInputError(f"{p}: no such file or folder")


def check_path(path: str | os.PathLike[str]) -> CheckReport:
    """Validate every episode file at ``path``; pairs found together are checked against each other."""
    files = episode_files(path)
    if not files:
        raise BibInputError(f"{path}: no episode files (*.json) found")
    report = CheckReport(n_files=len(files))
    pairs: dict[str, dict[str, tuple[Path, Episode]]] = {}
    bad: set[Path] = set()
    for f in files:
        try:
            ep = load_episode(f)
        except BibInputError as exc:
            report.problems.append(str(exc))
            bad.add(f)
            continue
        problems = validate_episode(ep)
        if problems:
            report.problems.append(f"{f}: {problems[0]}")
            bad.add(f)
        elif ep.pair_id and ep.outcome in ("expected", "unexpected"):
            pairs.setdefault(ep.pair_id, {})[ep.outcome] = (f, ep)
    for pair_id, members in sorted(pairs.items()):
        if len(members) == 2:
            (fe, e), (fu, u) = members["expected"], members["unexpected"]
            problems = validate_pair(e, u)
            if problems:
                report.problems.append(f"{fu}: pair {pair_id}: {problems[0]}")
                bad.add(fu)
    report.n_invalid = len(bad)
    return report
