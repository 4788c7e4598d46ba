"""The manifest of a generated set (``manifest.csv``): one row per episode, with its file hash."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable
from pathlib import Path

from bib.errors import BibInputError
from bib.io import atomic_write_text, sha256_file

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
]


def format_rows(rows: Iterable[dict[str, object]], header: bool = True) -> str:
    """Rows as CSV text with the manifest columns (``\\n`` line ends)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n", extrasaction="raise")
    if header:
        writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else row[k]) for k in COLUMNS})
    return buf.getvalue()


def write_manifest(directory: str | os.PathLike[str], rows: Iterable[dict[str, object]]) -> None:
    """Write ``DIR/manifest.csv`` atomically."""
    atomic_write_text(Path(directory) / MANIFEST, format_rows(rows))


def read_manifest(directory: str | os.PathLike[str], strict: bool = True) -> list[dict[str, str]]:
    """Rows of ``DIR/manifest.csv`` ([] if there is none).

    With ``strict=False`` (resuming), rows cut short by an interrupted run are dropped; with
    ``strict=True`` a malformed manifest raises BibInputError naming the row.
    """
    path = Path(directory) / MANIFEST
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames != COLUMNS:
            if strict:
                raise BibInputError(f"{path}: header {reader.fieldnames} is not the manifest header {COLUMNS}")
            return []
        rows = []
        for i, row in enumerate(reader, start=2):
            if None in row or any(row[c] is None for c in COLUMNS) or not row["sha256"] or len(row["sha256"]) != 64:
                if strict:
                    raise BibInputError(f"{path}: row {i} is incomplete")
                continue
            rows.append(row)
    return rows


def row_is_intact(directory: str | os.PathLike[str], row: dict[str, str], need_video: bool) -> bool:
    """True when the row's episode file exists with its recorded hash (and its video, if needed)."""
    root = Path(directory)
    episode = root / row["episode_path"]
    if not episode.is_file() or sha256_file(episode) != row["sha256"]:
        return False
    if need_video:
        return bool(row["video_path"]) and (root / row["video_path"]).is_file()
    return True
