"""The wheel carries every file bib reads at run time (issue 18 item 1).

``bash .ci/run`` builds the wheel and runs demo, leaderboard, report, analyze and experiment from
it outside the checkout; these tests catch the two usual slips early: a new data file that the
``package-data`` globs of pyproject.toml miss, and code that finds its files through ``__file__``.
"""

from __future__ import annotations

import ast
import tomllib
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIB = ROOT / "bib"


def _package_data() -> list[str]:
    """The package-data globs of pyproject.toml as paths relative to bib/."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    out = []
    for package, globs in config["tool"]["setuptools"]["package-data"].items():
        prefix = "/".join(package.split(".")[1:])
        out += [f"{prefix}/{g}" if prefix else g for g in globs]
    return out


def _tracked_data_files() -> list[str]:
    skip = {".py", ".pyc"}
    return sorted(
        str(p.relative_to(BIB)) for p in BIB.rglob("*")
        if p.is_file() and p.suffix not in skip and "__pycache__" not in p.parts and not p.name.startswith(".")
    )


def test_every_data_file_of_the_package_is_in_the_wheel() -> None:
    globs = _package_data()
    missing = [f for f in _tracked_data_files() if not any(fnmatch(f, g) and f.count("/") == g.count("/") for g in globs)]
    assert not missing, f"add these to [tool.setuptools.package-data] in pyproject.toml: {missing}"


def test_every_package_data_glob_matches_a_file() -> None:
    files = _tracked_data_files()
    assert all(any(fnmatch(f, g) for f in files) for g in _package_data()), _package_data()


def test_no_module_finds_its_files_through_dunder_file() -> None:
    """Package files are found with importlib.resources (bib.resources.resource, files(...)).

    ``bib/io.py`` is the one exception: it asks git for the commit of the checkout bib runs from.
    """
    bad = []
    for p in sorted(BIB.rglob("*.py")):
        if p == BIB / "io.py":
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Name) and node.id == "__file__":
                bad.append(f"{p.relative_to(ROOT)}:{node.lineno}")
    assert not bad, bad
