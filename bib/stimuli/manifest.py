"""The manifest of a generated set (``manifest.csv``): one row per episode, with its file hash.

Columns (:data:`COLUMNS`): the episode's ids, condition and outcome, its unit seed, trial and step
counts, paths of its JSON and video (relative to the set), the JSON's sha256, then five columns
describing the pair's design (``docs/tasks.md``, "Manifest"): ``variant`` (``""`` for a plain BIB
pair), ``twin_id`` (pair id of the label-flipping twin, or ``""``), ``difficulty`` (excess cost in
cells of the unexpected outcome's deviation, ``""`` where not graded), ``beta`` (the stimulus
agent's rationality, ``""`` for the noise-free planner) and ``evidence`` (the pair's evidence in
nats under the generator's own agent, :func:`bib.tasks.difficulty.pair_evidence`, the axis of
``bib evaluate``'s difficulty curve; ``""`` without ``beta``).

Manifests written before the design columns existed (:data:`LEGACY_COLUMNS`), or before
``evidence`` (:data:`PRE_EVIDENCE_COLUMNS`), are still read: the missing columns read as ``""``.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from bib.errors import BibInputError
from bib.guard import check_header, check_name, set_path, text_lines
from bib.io import atomic_write_text, csv_dict_writer, sha256_file

MANIFEST = "manifest.csv"
COLUMNS = [
    "episode_id",
    "pair_id",
    "task",
    "condition",
    "outcome",
    "seed",
    "n_trials",
    "n_steps",
    "episode_path",
    "video_path",
    "sha256",
    "variant",
    "twin_id",
    "difficulty",
    "beta",
    "evidence",
]
LEGACY_COLUMNS = COLUMNS[: COLUMNS.index("sha256") + 1]
"""The header of manifests written before ``variant``, ``twin_id``, ``difficulty`` and ``beta`` existed."""
PRE_EVIDENCE_COLUMNS = COLUMNS[: COLUMNS.index("beta") + 1]
"""The header of manifests written before ``evidence`` existed."""
DESIGN_COLUMNS = COLUMNS[len(LEGACY_COLUMNS):]
OLD_HEADERS = (LEGACY_COLUMNS, PRE_EVIDENCE_COLUMNS)
"""Headers of older manifests that still read (strictly), their missing columns as ``""``."""


def is_manifest_header(header: object) -> bool:
    """True for the manifest header or one of :data:`OLD_HEADERS`."""
    return header == COLUMNS or header in OLD_HEADERS


def format_rows(rows: Iterable[dict[str, object]], header: bool = True) -> str:
    """Rows as CSV text with the manifest columns (``\\n`` line ends)."""
    buf = io.StringIO()
    writer = csv_dict_writer(buf, COLUMNS, lineterminator="\n", extrasaction="raise")
    if header:
        writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else row[k]) for k in COLUMNS})
    return buf.getvalue()


def write_manifest(directory: str | os.PathLike[str], rows: Iterable[dict[str, object]]) -> None:
    """Write ``DIR/manifest.csv`` atomically."""
    atomic_write_text(Path(directory) / MANIFEST, format_rows(rows))


def read_manifest(directory: str | os.PathLike[str], strict: bool = True) -> list[dict[str, str]]:
    """Rows of ``DIR/manifest.csv`` ([] if there is none), each with every column of :data:`COLUMNS`.

    With ``strict=False`` (resuming), rows cut short by an interrupted run are dropped, and a
    manifest with the legacy header reads as empty (its set is rebuilt, so every row gets the
    design columns); with ``strict=True`` a malformed manifest raises BibInputError naming the
    row, and an older manifest's rows (:data:`OLD_HEADERS`) read with ``""`` in the missing columns.
    """
    return list(iter_manifest(directory, strict))


def iter_manifest(directory: str | os.PathLike[str], strict: bool = True) -> Iterator[dict[str, str]]:
    """:func:`read_manifest` one row at a time (memory does not grow with the set).

    Every row names a safe episode id (:func:`bib.guard.check_name`) and paths that stay inside the set
    (:func:`bib.guard.set_path`: relative, resolving inside it with links followed); no episode id or
    file appears twice. With ``strict`` a row that breaks this raises BibInputError naming it; without
    (resuming) it is dropped, as an incomplete row is.
    """
    path = Path(directory) / MANIFEST
    if not path.exists():
        return
    reader = csv.DictReader(text_lines(path))
    header = check_header(reader.fieldnames, path) if strict else reader.fieldnames
    if header != COLUMNS and not (strict and header in OLD_HEADERS):
        if strict:
            raise BibInputError(f"{path}: header {header} is not the manifest header {COLUMNS}")
        return
    seen: set[str] = set()
    for i, row in enumerate(reader, start=2):
        if None in row or any(row[c] is None for c in header) or not row["sha256"] or len(row["sha256"]) != 64:
            if strict:
                raise BibInputError(f"{path}: row {i} is incomplete")
            continue
        try:
            _check_row(directory, row, seen, f"{path}: row {i}")
        except BibInputError:
            if strict:
                raise
            continue
        yield row if header == COLUMNS else dict.fromkeys(COLUMNS, "") | row


def _check_row(directory: str | os.PathLike[str], row: dict[str, str], seen: set[str], where: str) -> None:
    """A row's id is a safe name, its paths stay in the set, and neither its id nor a path was seen before."""
    check_name(row["episode_id"], f"{where}: episode_id")
    keys = [f"id {row['episode_id']}"]
    for column in ("episode_path", "video_path"):
        if column == "episode_path" or row[column]:
            set_path(directory, row[column], f"{where}: {column}")
            keys.append(f"path {os.path.normpath(row[column])}")
    for key in keys:
        if key in seen:
            what, value = key.split(" ", 1)
            raise BibInputError(f"{where}: {'episode' if what == 'id' else 'file'} {value} appears twice in the manifest")
        seen.add(key)


def row_is_intact(directory: str | os.PathLike[str], row: dict[str, str], need_video: bool) -> bool:
    """True when the row's episode file exists with its recorded hash (and its video, if needed)."""
    root = Path(directory)
    episode = root / row["episode_path"]
    if not episode.is_file() or sha256_file(episode) != row["sha256"]:
        return False
    if need_video:
        return bool(row["video_path"]) and (root / row["video_path"]).is_file()
    return True
