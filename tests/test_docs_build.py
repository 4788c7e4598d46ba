"""`make docs` fails on any warning (issue 37): the Makefile's own mkdocs command, run on a planted project whose
only fault is a docstring griffe warns about (the kind `-q` used to hide from `--strict`), exits non-zero, and the
same project without the fault builds. The real site is built by `make docs` in CI."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MKDOCS = Path(sys.executable).with_name("mkdocs")
pytestmark = pytest.mark.skipif(not MKDOCS.is_file(), reason="mkdocs is not installed in this venv (the docs extra; "
                                                             "`make test` installs it)")

CONFIG = """\
site_name: planted
strict: true
plugins:
  - mkdocstrings:
      handlers:
        python:
          paths: [.]
          options:
            docstring_style: google
"""
ARGS = {"clean": "a (int): one thing.\n        b (int): another.", "planted": "a, b: two things at once (griffe warns)."}


def makefile_docs_command() -> list[str]:
    """The mkdocs command line of the Makefile's docs target (MKDOCS_BUILD), as argv."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    build = re.search(r"^MKDOCS_BUILD := (.+)$", text, re.M)
    assert build, "Makefile: no MKDOCS_BUILD line"
    recipe = re.search(r"^docs:.*\n\t(.+)$", text, re.M)
    assert recipe and "$(MKDOCS_BUILD)" in recipe.group(1), "Makefile: the docs target does not run $(MKDOCS_BUILD)"
    argv = shlex.split(build.group(1))
    assert argv[0] == "mkdocs"
    return [str(MKDOCS), *argv[1:]]


def build(tmp_path: Path, kind: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "planted.py").write_text(f'def f(a, b):\n    """Planted.\n\n    Args:\n        {ARGS[kind]}\n    """\n',
                                         encoding="utf-8")
    (tmp_path / "docs" / "index.md").write_text("# Planted\n\n::: planted.f\n", encoding="utf-8")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run(makefile_docs_command(), cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)


def test_the_docs_command_hides_no_warning():
    argv = makefile_docs_command()
    assert "--strict" in argv
    assert not {"-q", "--quiet"} & set(argv), "-q filters warnings out before --strict counts them"


def test_a_planted_griffe_warning_fails_the_docs_build(tmp_path):
    run = build(tmp_path, "planted")
    assert run.returncode != 0
    assert "griffe: planted.py" in run.stderr and "in strict mode" in run.stdout + run.stderr


def test_the_same_project_without_the_warning_builds(tmp_path):
    run = build(tmp_path, "clean")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "site" / "index.html").is_file()
