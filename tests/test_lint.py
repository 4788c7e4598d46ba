"""Code rules the whole repository keeps: ruff and the layered import contract.

- ruff (rules in ``[tool.ruff]`` of pyproject.toml) over bib/, tests/ and benchmarks/;
- import-linter's layers contract (``[tool.importlinter]``): each layer of ``bib`` imports only the
  layers below it, with no exception listed;

Both tools come with the ``test`` extra (``make test`` installs them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

def _tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        found = shutil.which(name)
        if found is None:
            pytest.fail(f"{name} is not installed: reinstall the test extra (make test, or pip install -e '.[test]')")
        return found
    return str(path)


def test_ruff_passes() -> None:
    proc = subprocess.run([_tool("ruff"), "check", "--no-cache", "--output-format", "concise", "bib", "tests", "benchmarks"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_layers_contract_is_kept() -> None:
    proc = subprocess.run([_tool("lint-imports"), "--no-cache", "--no-logo"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr


def _contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def test_layers_contract_lists_no_exception() -> None:
    for contract in _contracts():
        assert not contract.get("ignore_imports"), contract["name"]
        assert not contract.get("unmatched_ignore_imports_alerting"), contract["name"]


def test_every_module_of_bib_has_a_layer() -> None:
    (layers,) = [c["layers"] for c in _contracts() if c["type"] == "layers"]
    placed = {m.strip().strip("()") for layer in layers for m in layer.replace(":", "|").split("|")}
    tops = {f"bib.{p.stem if p.is_file() else p.name}" for p in (ROOT / "bib").iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert tops - placed == set(), "give these a layer in [tool.importlinter] of pyproject.toml"


def test_the_observers_package_has_no_import_cycle_and_the_contract_catches_one(tmp_path: Path) -> None:
    """Issue 42 item 7: learned, registry, trainable and training imported each other in a circle. The
    acyclic_siblings contract on bib.observers is kept (test_layers_contract_is_kept runs it); on a copy of the
    package with one planted import back up (trainable importing learned) it is broken."""
    (contract,) = [c for c in _contracts() if c["type"] == "acyclic_siblings"]
    assert contract["ancestors"] == ["bib.observers"]
    import shutil

    shutil.copytree(ROOT / "bib", tmp_path / "bib", ignore=shutil.ignore_patterns("__pycache__", "resources"))
    (tmp_path / ".importlinter").write_text(
        "[importlinter]\nroot_package = bib\nexclude_type_checking_imports = true\n\n"
        "[importlinter:contract:cycles]\nname = cycles\ntype = acyclic_siblings\nancestors =\n    bib.observers\n",
        encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    command = [_tool("lint-imports"), "--no-cache", "--no-logo", "--config", str(tmp_path / ".importlinter")]
    assert subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env).returncode == 0  # the copy
    planted = tmp_path / "bib" / "observers" / "trainable.py"
    planted.write_text(planted.read_text(encoding="utf-8") + "\n\ndef _planted():\n    from bib.observers import learned\n",
                       encoding="utf-8")
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert proc.returncode == 1 and "BROKEN" in proc.stdout, proc.stdout[-2000:] + proc.stderr
    assert "No cycles are allowed in bib.observers" in proc.stdout and "- .trainable -> .learned" in proc.stdout
