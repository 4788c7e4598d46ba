"""The completion marker of a stimulus set (issue 39): ``complete.json``, so that a set being written, or
one whose writer died, is never scored, blinded, audited, evaluated or shown as if it were whole.

- A writer (``bib generate`` through :func:`bib.stimuli.build.build`, ``bib import``) writes
  ``{"complete": false}`` before its first episode (:func:`mark_started`) and, last, after every
  episode, video, manifest row, ``spec.toml`` and ``orders.csv``, ``{"complete": true, "episodes": N,
  "manifest_sha256": ...}`` (:func:`mark_complete`); both atomically. The record has no time in it:
  the same seed still gives byte-identical sets.
- :func:`check_complete` (called by :func:`bib.stimuli.sets.find_episodes`, the one reader of sets,
  and by ``bib experiment``) refuses a set whose folder another bib job holds (its lock) and a set whose
  marker says incomplete. (The manifest's hash is recorded, not enforced: a manifest edited by hand
  after the set was finished is the user's, and `bib validate` checks every row against its files.)
- Sets written before the marker existed (no ``complete.json``) are accepted when bib finished them
  (their ``provenance.json``, which bib wrote last, is there) or, without one (sets built through the
  Python API), when every episode file their manifest lists exists (a manifest row is written only
  after its unit's files are whole), or none does (a manifest-only set, which `bib compare` and
  `bib evaluate` read: nothing in it was half-written). `bib validate` checks such a set in full, and
  rerunning the `bib generate` that made it (it resumes, keeping every unit) adds the marker.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from bib.errors import BibInputError
from bib.guard import MiB, read_json
from bib.io import atomic_write_text, sha256_file

COMPLETE = "complete.json"
"""The marker's file name, in the set's folder beside ``manifest.csv``."""
_MANIFEST = "manifest.csv"


def mark_started(root: str | os.PathLike[str]) -> None:
    """Record that ``root`` is being written (before anything else is)."""
    atomic_write_text(Path(root) / COMPLETE, json.dumps({"complete": False}) + "\n")


def mark_complete(root: str | os.PathLike[str]) -> None:
    """Record, last, that ``root`` is whole: its episode count and the hash of its manifest."""
    root = Path(root)
    manifest = root / _MANIFEST
    episodes = 0
    if manifest.is_file():
        with open(manifest, "rb") as fh:
            episodes = max(sum(1 for _ in fh) - 1, 0)
    doc = {"complete": True, "episodes": episodes,
           "manifest_sha256": sha256_file(manifest) if manifest.is_file() else None}
    atomic_write_text(root / COMPLETE, json.dumps(doc, sort_keys=True) + "\n")


def check_complete(root: str | os.PathLike[str]) -> None:
    """Refuse (one line naming the set) a set that is being written or was never finished (see the
    module docstring); a finished set, or an older one that passes the migration rule, returns."""
    from bib.io import FolderLock

    root = Path(root)
    FolderLock(Path(os.path.realpath(root)), "set").check(reader=True)  # "ROOT: another bib job is writing into this folder (`bib generate ...`)"
    marker = root / COMPLETE
    if os.path.lexists(marker):
        try:
            doc = read_json(marker, MiB)
        except BibInputError as exc:
            raise BibInputError(f"{root}: unreadable completion marker ({exc})") from None
        if not isinstance(doc, dict) or doc.get("complete") is not True:
            raise BibInputError(f"{root}: the set was never finished (its {COMPLETE} says it is being written, "
                                "or its writer stopped); rerun the `bib generate` that makes it to finish it")
        return
    if (root / "provenance.json").is_file():
        return  # written by bib before the marker existed: provenance.json came last
    from bib.stimuli.manifest import read_manifest

    rows = read_manifest(root)
    missing = [row["episode_path"] for row in rows if not (root / row["episode_path"]).is_file()]
    if missing and len(missing) < len(rows):  # none there at all: a manifest-only set (`bib compare` reads those)
        raise BibInputError(f"{root}: the set is incomplete: {missing[0]} (listed in {_MANIFEST}) is missing; "
                            "rerun the `bib generate` that makes it")
