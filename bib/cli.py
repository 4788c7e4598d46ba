"""The ``bib`` command: one Typer app whose subcommands live in ``bib/commands/<area>.py``.

The CLI is thin: each command parses its arguments, calls the library and prints. Bad input
raises :class:`bib.errors.BibInputError` anywhere below; :func:`main` turns it (and a usage error
of the parser) into one line on stderr and exit code 2, with no traceback. Ctrl-C exits 130 with
a one-line note; SIGTERM unwinds like an exception, so temporary outputs are removed. The
convention every command follows is docs/cli.md.
"""

from __future__ import annotations

import importlib
import inspect
import os
import signal
import sys
import warnings

import typer
from typer import _click
from typer.exceptions import Abort

from bib import __version__
from bib.errors import BibInputError

INTERRUPTED = "bib: interrupted; rerun the same command to resume"

app = typer.Typer(
    name="bib",
    help="Violation-of-expectation benchmark suite: stimuli, observers, MEG, reflection, agency, analysis.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"max_content_width": 120},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"bib {__version__}")
        raise typer.Exit(0)


#: ``bib --debug``: an error raised by a model's own code is printed with the model's traceback after its line.
_DEBUG = {"on": False}


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the bib version and exit."),
    debug: bool = typer.Option(False, "--debug",
                               help="When a model's own code raises, print its traceback after the one-line error."),
) -> None:
    """Violation-of-expectation benchmark suite: stimuli, observers, MEG, reflection, agency, analysis.

    Conventions of every command: docs/cli.md (inputs positional, --out a folder, exit 2 on bad input).
    """
    _DEBUG["on"] = debug


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
    "bib.commands.report",
    "bib.commands.profile",
    "bib.commands.cache",
]

for _name in AREAS:
    importlib.import_module(_name).register(app)


def _short_helps(command: _click.Command) -> None:
    """Give every subcommand its whole first paragraph as short help, so `bib --help` wraps it
    instead of cutting it with "..." (recursively through groups)."""
    for sub in getattr(command, "commands", {}).values():
        if not sub.short_help and sub.help:
            sub.short_help = inspect.cleandoc(sub.help).split("\n\n")[0].replace("\n", " ")
        _short_helps(sub)


def command() -> _click.Command:
    """The click command tree of ``bib`` (what :func:`main` runs; tests walk it)."""
    root = typer.main.get_command(app)
    _short_helps(root)
    return root


def _terminate(signum: int, frame: object) -> None:  # noqa: ARG001
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``bib`` console script."""
    from bib.io import set_command_line

    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    args = sys.argv[1:] if argv is None else list(argv)
    set_command_line(["bib", *args])
    _DEBUG["on"] = False
    previous = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread
        previous = None
    from bib.io import PrintableStream, printable

    # Everything a command prints passes bib.io.printable: a table cell, a file name or a message
    # holding an escape sequence (screen clear, window title, OSC 52 clipboard) is shown, not obeyed.
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = PrintableStream(sys.stdout), PrintableStream(sys.stderr)
    # numpy's and torch's warnings are held back while the command runs: a refused input is then one
    # line, `bib: error: ...`, with no warning before it (issue 39); a command that ends otherwise
    # shows them after its output, through the warning filters as they were
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            code = command().main(args=args, prog_name="bib", standalone_mode=False)
    except BibInputError as exc:
        print(f"bib: error: {printable(str(exc))}", file=sys.stderr)
        if _DEBUG["on"] and getattr(exc, "detail", ""):
            print(printable(exc.detail), file=sys.stderr, end="")
        caught.clear()
        sys.exit(2)
    except OSError as exc:  # a full disk where no writer named its file (bib.io.no_space names it where one does)
        from bib.io import no_space

        full = no_space(exc, None)
        if full is None:
            raise
        print(f"bib: error: {printable(str(full))}", file=sys.stderr)
        caught.clear()
        sys.exit(2)
    except _click.exceptions.UsageError as exc:
        where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
        message = exc.format_message().replace("Value error, ", "")
        print(f"bib: error: {printable(message)}{where}", file=sys.stderr)
        caught.clear()
        sys.exit(2)
    except (KeyboardInterrupt, Abort):  # Abort: typer's end of a prompt by Ctrl-C / Ctrl-D
        code = 130
    finally:
        for w in caught:  # shown as they would have been (pytest.warns and -W filters still see them)
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
        sys.stdout, sys.stderr = streams
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        parallel = sys.modules.get("bib.parallel")
        if parallel is not None:  # pools whose generator a Ctrl-C or an error left suspended in a caller's loop
            parallel.stop_all()
    if code == 130:
        print(INTERRUPTED, file=sys.stderr)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
