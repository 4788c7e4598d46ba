"""`bib.cli.main`'s exception paths: a real error is not masked, Ctrl-C and typer's Abort exit 130
with the resume note, bad input exits 2 with one line (issue 17)."""

from __future__ import annotations

import pytest
import typer

import bib.cli


def _app(error: BaseException) -> typer.Typer:
    tiny = typer.Typer()

    @tiny.command()
    def boom(n: int = typer.Option(1, "--n")) -> None:
        raise error

    @tiny.command()
    def ok() -> None:
        typer.echo("fine")

    return tiny


def _run(monkeypatch, capsys, error: BaseException, *argv: str) -> tuple[int | None, str]:
    monkeypatch.setattr(bib.cli, "command", lambda: typer.main.get_command(_app(error)))
    with pytest.raises(SystemExit) as exc:
        bib.cli.main(list(argv))
    return exc.value.code, capsys.readouterr().err


def test_an_unexpected_error_propagates_as_itself(monkeypatch, capsys):
    # before the fix, the except clause naming a missing attribute turned this into an AttributeError
    monkeypatch.setattr(bib.cli, "command", lambda: typer.main.get_command(_app(RuntimeError("real bug"))))
    with pytest.raises(RuntimeError, match="real bug"):
        bib.cli.main(["boom"])
    monkeypatch.setattr(bib.cli, "command", lambda: typer.main.get_command(_app(OSError(5, "I/O error"))))
    with pytest.raises(OSError, match="I/O error"):
        bib.cli.main(["boom"])


@pytest.mark.parametrize("error", [KeyboardInterrupt(), typer.Abort(), EOFError()])
def test_interrupt_and_abort_exit_130_with_the_resume_note(monkeypatch, capsys, error):
    code, err = _run(monkeypatch, capsys, error, "boom")
    assert code == 130 and err.rstrip("\n").endswith(bib.cli.INTERRUPTED) and "Traceback" not in err


def test_bad_input_and_usage_exit_2_with_one_line(monkeypatch, capsys):
    from bib.errors import BibInputError

    code, err = _run(monkeypatch, capsys, BibInputError("x.csv: row 3: field 'lt' is not a number"), "boom")
    assert (code, err) == (2, "bib: error: x.csv: row 3: field 'lt' is not a number\n")
    code, err = _run(monkeypatch, capsys, BibInputError("unused"), "boom", "--n", "many")
    assert code == 2 and err.count("\n") == 1 and err.startswith("bib: error: Invalid value for '--n'")
    code, err = _run(monkeypatch, capsys, BibInputError("unused"), "ok")
    assert code == 0 and err == ""
