"""Run the real ``bib`` command line in this process and read what it printed (a helper of the CLI tests)."""

from __future__ import annotations

import pytest

from bib.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``bib ARGV...`` through :func:`bib.cli.main`: ``(exit code, stdout, stderr)``."""
    code = 0
    try:
        main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
