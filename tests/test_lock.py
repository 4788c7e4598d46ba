"""The lock (issue 37): constraints.txt pins every package of bib-voe and of the extras the Makefile installs, each pin
inside pyproject's range; `make demo`, `make test` and `make docs` install through it; and this venv holds the
lock's versions (a venv built otherwise is not the environment CI passed with)."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def makefile() -> str:
    return (ROOT / "Makefile").read_text(encoding="utf-8")


def makefile_var(name: str) -> str:
    found = re.search(rf"^{name} \??:?= ?(.+)$", makefile(), re.M)
    assert found, f"Makefile: no {name}"
    return found.group(1).strip()


def lock() -> dict[str, Version]:
    pins = {}
    for n, line in enumerate((ROOT / makefile_var("LOCK")).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep and version.strip(), f"constraints.txt line {n}: not NAME==VERSION: {line!r}"
        pins[canonicalize_name(name)] = Version(version.strip())
    return pins


def requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = makefile_var("EXTRAS").split(",")
    return [Requirement(r) for r in project["dependencies"]] + [
        Requirement(r) for e in extras for r in project["optional-dependencies"][e]]


def test_the_makefile_installs_every_extra_through_the_lock():
    text = makefile()
    recipe = re.search(r"^\$\(VENV\)/\.installed: (.+)\n((?:\t.+\n)+)", text, re.M)
    assert recipe and "$(LOCK)" in recipe.group(1), "the venv is not rebuilt when the lock changes"
    assert '-c $(LOCK) -e ".[$(EXTRAS)]"' in recipe.group(2)
    for target in ("demo", "test", "docs", "bench-smoke"):
        assert re.search(rf"^{re.escape(target)}: \$\(VENV\)/\.installed$", text, re.M), target
    extras = set(makefile_var("EXTRAS").split(","))
    assert {"test", "dask", "rl", "docs"} <= extras


def test_every_requirement_is_pinned_inside_its_range():
    pins = lock()
    torch = Version(makefile_var("TORCH").split("==")[1])
    for req in requirements():
        name = canonicalize_name(req.name)
        if name == "torch":  # installed first from the Makefile's TORCH (the CPU build), not from the lock
            assert req.specifier.contains(torch), f"TORCH {torch} is outside pyproject's {req}"
            assert name not in pins
            continue
        assert name in pins, f"{req.name} is not in constraints.txt: run `make lock`"
        assert req.specifier.contains(pins[name], prereleases=True), f"constraints.txt pins {name}=={pins[name]} outside {req}"


def test_this_venv_holds_the_locked_versions():
    wrong = []
    for name, version in lock().items():
        try:
            have = Version(metadata.version(name))
        except metadata.PackageNotFoundError:
            wrong.append(f"{name} missing (lock {version})")
            continue
        if have != version:
            wrong.append(f"{name} {have} (lock {version})")
    assert not wrong, ("this venv is not the lock's; rebuild it with `make test` (it installs with -c constraints.txt): "
                       + ", ".join(wrong))
