"""Builders of hostile inputs for the corpus cases: each returns ``build(inp)`` writing into ``{in}``."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

Build = Callable[[Path], None]
EPISODE = "set/episodes/preference-000000-expected.json"
"""A valid episode of the copied tests/bad_inputs/ folder (its pair: ...-unexpected.json)."""
RESULTS = "scores/results.csv"


def chain(*builds: Build) -> Build:
    """Run several builders in order."""
    def build(inp: Path) -> None:
        for b in builds:
            b(inp)
    return build


def write(name: str, data: bytes | str) -> Build:
    """``{in}/name`` holds ``data`` (bytes as given, str as UTF-8)."""
    def build(inp: Path) -> None:
        p = inp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return build


def text_of(name: str, change: Callable[[str], str | bytes], to: str | None = None) -> Build:
    """``{in}/to`` (default ``name``) is ``change`` of the text of ``{in}/name``."""
    def build(inp: Path) -> None:
        new = change((inp / name).read_text(encoding="utf-8"))
        write(to or name, new)(inp)
    return build


def episode_doc(change: Callable[[dict[str, Any]], object], to: str = "ep.json") -> Build:
    """``{in}/to`` is the valid episode's JSON after ``change(doc)`` (which edits it in place)."""
    def edit(text: str) -> str:
        doc = json.loads(text)
        change(doc)
        return json.dumps(doc)
    return text_of(EPISODE, edit, to)


def episode_with(to: str = "ep.json", **fields: object) -> Build:
    """The valid episode with top-level ``fields`` replaced, in ``{in}/to``."""
    return episode_doc(lambda d: d.update(fields), to)


def trial_with(index: int = 0, to: str = "ep.json", **fields: object) -> Build:
    """The valid episode with fields of trial ``index`` replaced."""
    return episode_doc(lambda d: d["trials"][index].update(fields), to)


def symlink(name: str, target: str) -> Build:
    """``{in}/name`` is a symbolic link to ``target`` (``{in}`` replaced; absolute or relative)."""
    def build(inp: Path) -> None:
        p = inp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.exists() or p.is_symlink():
            p.unlink()
        os.symlink(target.replace("{in}", str(inp)), p)
    return build


def read_rows(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def write_rows(path: Path, rows: list[list[str]]) -> None:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")


def csv_rows(name: str, change: Callable[[list[list[str]]], list[list[str]] | None]) -> Build:
    """``{in}/name`` (a CSV) after ``change(rows)`` (rows[0] the header; edit in place or return new rows)."""
    def build(inp: Path) -> None:
        rows = read_rows(inp / name)
        new = change(rows)
        write_rows(inp / name, rows if new is None else new)
    return build


def manifest(change: Callable[[list[list[str]]], list[list[str]] | None]) -> Build:
    """The set's manifest.csv after ``change(rows)``."""
    return csv_rows("set/manifest.csv", change)


def manifest_cell(column: str, value: str, row: int = 1) -> Build:
    """Manifest row ``row`` (1: the first episode) with ``column`` set to ``value`` (``{in}`` replaced)."""
    def build(inp: Path) -> None:
        def change(rows: list[list[str]]) -> None:
            rows[row][rows[0].index(column)] = value.replace("{in}", str(inp))
        manifest(change)(inp)
    return build


def set_episode(change: Callable[[dict[str, Any]], object], which: str = "expected") -> Build:
    """Edit an episode of the set in place and record its new sha256 in the manifest, so that
    what is caught is the edit, not a hash mismatch."""
    name = f"set/episodes/preference-000000-{which}.json"

    def build(inp: Path) -> None:
        episode_doc(change, name)(inp) if which == "expected" else text_of(
            name, lambda t: json.dumps(_edited(json.loads(t), change)))(inp)
        digest = hashlib.sha256((inp / name).read_bytes()).hexdigest()

        def rehash(rows: list[list[str]]) -> None:
            for r in rows[1:]:
                if r[rows[0].index("episode_path")] == name.removeprefix("set/"):
                    r[rows[0].index("sha256")] = digest
        manifest(rehash)(inp)
    return build


def _edited(doc: dict[str, Any], change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    change(doc)
    return doc
