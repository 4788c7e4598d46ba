"""The ``bib`` command: one Typer app whose subcommands live in ``bib/commands/<area>.py``.

The CLI is thin: each command parses its arguments, calls the library and prints. Bad input
raises :class:`bib.errors.BibInputError` anywhere below; :func:`main` turns it into one line on
stderr and exit code 2, with no traceback.
"""

from __future__ import annotations

import importlib
import os
import sys

import typer

from bib.errors import BibInputError

app = typer.Typer(
    name="bib",
    help="Violation-of-expectation benchmark suite: stimuli, observers, MEG, reflection, agency, analysis.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# Each area module defines ``register(app)``; add a line here when an area gains commands.
AREAS = [
    "bib.commands.stimuli",
    "bib.commands.dataset",
    "bib.commands.analysis",
    "bib.commands.reflect",
    "bib.commands.meg",
    "bib.commands.observers",
    "bib.commands.agency",
    "bib.commands.train",
]

for _name in AREAS:
    importlib.import_module(_name).register(app)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``bib`` console script."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    try:
        app(args=argv, prog_name="bib")
    except BibInputError as exc:
        print(f"bib: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("bib: interrupted", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    main()
