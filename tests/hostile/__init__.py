"""The hostile-input corpus (issue 28 item 8), run by tests/test_hostile.py.

Every case is a bad or malicious input run through the real CLI (``bib.cli.main`` in-process). The
harness asserts, for each case:

* the exit code (2 for a refusal; 1 for a ``validate``/``audit`` finding);
* no ``Traceback`` on stdout or stderr;
* a message naming the culprit: ``culprit`` occurs in the message (stderr for exit 2, which must
  be one line starting ``bib: error: ``; stdout + stderr for exit 1);
* nothing written or changed anywhere under the temporary folder, which holds the inputs (``{in}``),
  the output folder (``{out}``, four folders deep so that ``../../../../x`` from it still lands
  inside and is seen) and the working folder: nothing outside ``--out``, nothing half-written in it.

The format (append cases in a module of your own, ``tests/hostile/cases_<topic>.py``, that defines
``CASES: list[Case]``; every such module is collected):

    Case("render-id-climbs-out", ["render", "{in}/ep.json", "--out", "{out}"],
         build=episode_with(id="../../../../elsewhere/x"), culprit="field 'id'")

``build(inp)`` writes the case's inputs into ``inp`` (``{in}``), which starts as a copy of
``tests/bad_inputs/`` (a two-episode set in ``set/``, ``scores/results.csv``, ``ours.csv``, ...);
the helpers in :mod:`hostile.build` make the usual kinds. ``{in}`` and ``{out}`` are replaced in
``argv`` and ``culprit``. ``slow=True`` puts a case under ``-m slow`` (the default part stays fast).
``setup(out)`` may prepare ``{out}`` before the snapshot (e.g. a file there).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Case:
    """One hostile input and what ``bib`` must answer (see the module docstring)."""

    id: str
    argv: list[str]
    build: Callable[[Path], None] | None = None
    code: int = 2
    culprit: str = ""
    slow: bool = False
    setup: Callable[[Path], None] | None = None
    env: dict[str, str] = field(default_factory=dict)


def all_cases() -> list[Case]:
    """Every ``CASES`` of the ``cases_*`` modules of this package, in module order."""
    out: list[Case] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("cases_"):
            out.extend(importlib.import_module(f"{__name__}.{info.name}").CASES)
    return out
