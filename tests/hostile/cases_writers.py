"""Hostile uses of the output side (issue 28 items 3 and 4): an empty --out for every command that
writes one, a --out another job holds, an unreachable --scheduler, frames too big for a video; and
the special files render and validate must not read (a FIFO hung them, /dev/zero read for ever)."""

from __future__ import annotations

from pathlib import Path

from hostile import Case
from hostile.build import episode_with

EPISODE = "{in}/set/episodes/preference-000000-expected.json"

# A runnable argv of each command that writes an --out folder (what the lock and --scheduler cases use).
WRITERS = {
    "generate": ["generate", "--task", "single-object", "--n", "1"],
    "render": ["render", EPISODE],
    "export": ["export", "{in}/set"],
    "score": ["score", "random", "{in}/set"],
    "audit": ["audit", "{in}/set"],
    "report": ["report", "{in}/set"],
}


def _commands_with_out() -> list[list[str]]:
    """The path of every command of the click tree that takes --out."""
    from bib.cli import command

    found = []

    def walk(cmd, path: list[str]) -> None:  # noqa: ANN001
        if any("--out" in getattr(p, "opts", ()) for p in cmd.params):
            found.append(path)
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(command(), [])
    return found


def _held(out: Path) -> None:
    """Hold --out's lock in this process, as a job writing into it would (the fd stays open)."""
    from bib.io import FolderLock

    FolderLock(out).acquire()


def _cases() -> list[Case]:
    cases = [Case(f"{'-'.join(path)}-out-empty", [*path, "--out", ""], culprit="'--out': is empty")
             for path in _commands_with_out()]
    for name, argv in WRITERS.items():
        cases.append(Case(f"{name}-out-held-by-another-job", [*argv, "--out", "{out}"], setup=_held,
                          culprit="{out}: another bib job is writing into this folder"))
    for name in ("generate", "score", "audit"):
        cases.append(Case(f"{name}-scheduler-unreachable", [*WRITERS[name], "--out", "{out}", "--scheduler",
                                                            "tcp://127.0.0.1:9"], culprit="--scheduler"))
    # a grid that loads but is too big for a video: refused before the encoder (and before --out is made)
    cases.append(Case("render-grid-too-wide-for-a-video", ["render", "{in}/ep.json", "--out", "{out}"],
                      build=episode_with(grid={"width": 500, "height": 10}),
                      culprit="{in}/ep.json: field 'grid': size must be 1 to 100"))  # refused when read (GRID_MAX)
    cases.append(Case("render-cell-px-too-big-for-a-video", ["render", "{in}/ep.json", "--out", "{out}", "--cell-px", "256"],
                      build=episode_with(grid={"width": 40, "height": 10}), culprit="makes 10240 x 2560 px frames"))
    for name, src, build in (("fifo", "{in}/fifo.json", _fifo), ("dev-zero", "/dev/zero", None)):
        for argv in (["render", src, "--out", "{out}"], ["validate", src]):
            cases.append(Case(f"{argv[0]}-{name}", argv, build=build,
                              culprit=f"{src}: is not a regular file (a pipe, device or socket)"))
    return cases


def _fifo(inp: Path) -> None:
    import os

    os.mkfifo(inp / "fifo.json")


CASES = _cases()
