"""Complete sets only (issue 39): a set another bib job is writing, one whose writer died (its
``complete.json`` says incomplete), an unreadable marker, and an older set (no marker) whose manifest lists a missing episode: `score`, `blind`, `audit`, `evaluate`, `experiment`,
`train` and `stats` refuse each in one line naming the set."""

from __future__ import annotations

import json
from pathlib import Path

from hostile import Case
from hostile.build import chain, write

READERS = {
    "score": ["score", "random", "{in}/set", "--out", "{out}"],
    "blind": ["blind", "{in}/set", "--out", "{out}", "--key", "{in}/key.csv"],
    "audit": ["audit", "{in}/set", "--out", "{out}"],
    "evaluate": ["evaluate", "{in}/set", "{in}/scores/results.csv"],
    "experiment": ["experiment", "{in}/set", "--out", "{out}"],
    "stats": ["stats", "{in}/set"],
    "train": ["train", "bc-mlp", "{in}/set", "--out", "{out}"],
}


def _held(inp: Path) -> None:
    """{in}/set's lock is held (by this process, as a `bib generate` writing into it holds it)."""
    from bib.io import _HELD, FolderLock

    lock = FolderLock(inp / "set")
    lock.acquire()
    _HELD.discard(lock.file)  # held as another process would hold it: the reader must see it


def _unfinished() -> object:
    return write("set/complete.json", json.dumps({"complete": False}) + "\n")


def _missing_episode(inp: Path) -> None:
    (inp / "set" / "episodes" / "preference-000000-unexpected.json").unlink()


CASES = []
for name, argv in READERS.items():
    CASES += [
        Case(f"{name}-set-being-written", argv, build=_held, culprit="{in}/set: another bib job is writing into this folder"),
        Case(f"{name}-set-never-finished", argv, build=_unfinished(), culprit="{in}/set: the set was never finished"),
        Case(f"{name}-old-set-missing-episode", argv, build=_missing_episode,
             culprit="{in}/set: the set is incomplete: episodes/preference-000000-unexpected.json"),
        Case(f"{name}-marker-not-json", argv, build=chain(write("set/complete.json", "{")),
             culprit="{in}/set: unreadable completion marker"),
    ]
