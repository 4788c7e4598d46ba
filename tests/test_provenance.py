"""One provenance record beside every output (issue 18 item 6): every command that writes an output folder
writes ``provenance.json`` (argv, version, git commit) through the one writer, :class:`bib.io.OutputFolder`.

The walk finds every command with ``--out``; each has a small recipe here (a new command must add
one), is run through ``bib.cli.main``, and its folder's record is checked field by field.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from compare_inputs import write_compare_inputs

from bib import __version__
from bib.resources import resource

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(resource("looking_times/example.csv"))
SPEC = str(resource("analysis/infant-pilot.toml"))

Recipe = Callable[[dict[str, Path], str], list[str]]
"""``recipe(inputs, out) -> argv`` (without ``bib``): one small invocation writing into ``out``."""

RECIPES: dict[str, Recipe] = {
    "generate": lambda i, o: ["generate", "--task", "preference", "--n", "1", "--out", o],
    "render": lambda i, o: ["render", str(i["episode"]), "--out", o],
    "score": lambda i, o: ["score", "random", str(i["set"]), "--out", o],
    "evaluate": lambda i, o: ["evaluate", str(i["set"]), str(i["run"]), "--out", o],
    "audit": lambda i, o: ["audit", str(i["set"]), "--out", o],
    "export": lambda i, o: ["export", str(i["set"]), "--out", o],
    "import": lambda i, o: ["import", str(i["exported"]), "--out", o],
    "analyze": lambda i, o: ["analyze", EXAMPLE, "--out", o],
    "compare": lambda i, o: ["compare", EXAMPLE, str(i["manifest_set"]), str(i["model"]), "--spec", SPEC, "--out", o],
    "simulate-ratings": lambda i, o: ["simulate-ratings", str(i["manifest_set"]), "--raters", "4", "--out", o],
    "reliability": lambda i, o: ["reliability", str(ROOT / "tests" / "fixtures" / "reliability" / "coder_a.csv"),
                                 str(ROOT / "tests" / "fixtures" / "reliability" / "coder_b.csv"), "--out", o],
    "power simulate": lambda i, o: ["power", "simulate", "--out", o],
    "meg cliffworld": lambda i, o: ["meg", "cliffworld", "--horizon", "6", "--policy", "optimal", "--out", o],
    "meg episodes": lambda i, o: ["meg", "episodes", str(i["set"]), "--out", o],
    "reflect table": lambda i, o: ["reflect", "table", "--steps", "20", "--seeds", "1", "--out", o],
    "agency run": lambda i, o: ["agency", "run", "--suite", "keys", "--agent", "optimal", "--grids", "1",
                                "--rollouts", "1", "--no-meg", "--out", o],
    "agency train-policy": lambda i, o: ["agency", "train-policy", "--grids", "1", "--epochs", "1", "--out", o],
    "agency probe": lambda i, o: ["agency", "probe", "--grids", "1", "--rollouts", "1", "--layers", "1",
                                  "--map-epochs", "1", "--plan-epochs", "1", "--plan-hidden", "8", "--out", o],
    "train": lambda i, o: ["train", "bc-mlp", str(i["background"]), "--epochs", "1", "--out", o],
    "profile": lambda i, o: ["profile", "random", "--seeds", "1", "--condition", "efficiency-path",
                             "--agency-grids", "2", "--out", o],
    "report": lambda i, o: ["report", str(i["set"]), "--out", o],
    "experiment": lambda i, o: ["experiment", str(i["set"]), "--out", o],
    "demo": lambda i, o: ["demo", "--out", o],
}
SLOW = {"demo", "profile", "train", "agency probe", "audit", "report", "experiment"}
"""Recipes over a few seconds each under load: run with ``-m slow`` (their commands' own tests check the
provenance file too)."""
EXIT_ONE_OK = {"audit"}
"""``bib audit`` exits 1 when a shortcut decides a cell (2 pairs per condition here), after writing its folder."""


def _commands_with_out() -> set[str]:
    from bib.cli import command

    found: set[str] = set()

    def walk(cmd, path: list[str]) -> None:  # noqa: ANN001 (a click command)
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, [*path, name])
        elif any("--out" in getattr(p, "opts", ()) for p in cmd.params):
            found.add(" ".join(path))

    walk(command(), [])
    return found


NO_PROVENANCE = {"blind"}
"""Commands whose folder deliberately holds no ``provenance.json``: a submission kit (``bib blind``) must not name
its set, its seed or where its key is (docs/cli.md); ``test_a_kit_holds_no_provenance`` checks it."""


def test_every_command_that_writes_a_folder_has_a_recipe():
    assert _commands_with_out() == set(RECIPES) | NO_PROVENANCE


def test_a_kit_holds_no_provenance(inputs: dict[str, Path], tmp_path: Path) -> None:
    kit, key = tmp_path / "kit", tmp_path / "key.csv"
    assert _main(["blind", str(inputs["set"]), "--out", str(kit), "--key", str(key), "--seed", "1", "--allow-public"]) == 0
    files = [p for p in kit.rglob("*") if p.is_file()]
    assert files and not [p for p in files if p.name == "provenance.json"]
    assert not [p for p in files if str(inputs["set"]) in p.read_text(encoding="utf-8", errors="replace")]


def _main(argv: list[str]) -> int:
    from bib.cli import main

    with pytest.raises(SystemExit) as info:
        main(argv)
    return int(info.value.code or 0)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:  # noqa: ANN001 (pytest's TempPathFactory)
    from browser_sets import build_tiny_set

    root = tmp_path_factory.mktemp("provenance-inputs")
    tiny = build_tiny_set(root)  # 2 pairs with videos, per-trial videos and orders (for `bib experiment`)
    assert _main(["score", "random", str(tiny), "--out", str(root / "run")]) == 0
    assert _main(["export", str(tiny), "--out", str(root / "exported")]) == 0
    assert _main(["generate", "--task", "single-object", "--n", "4", "--out", str(root / "background")]) == 0
    manifest_set = root / "manifest-set"  # a set's manifest and a model's results for `bib compare`
    write_compare_inputs(manifest_set, root / "model.csv", unexpected_shift=1.0)
    return {"set": tiny, "episode": sorted((tiny / "episodes").glob("*.json"))[0], "run": root / "run",
            "exported": root / "exported", "background": root / "background", "manifest_set": manifest_set,
            "model": root / "model.csv"}


def _expected_commit() -> str | None:
    if not (ROOT / ".git").exists():
        return None
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p in SLOW else p for p in RECIPES])
def test_provenance_beside_every_output(path: str, inputs: dict[str, Path], tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    argv = RECIPES[path](inputs, str(out))
    code = _main(argv)
    assert code == 0 or (code == 1 and path in EXIT_ONE_OK), (path, code)
    doc = json.loads((out / "provenance.json").read_text(encoding="utf-8"))
    assert doc["argv"] == ["bib", *argv]
    assert doc["bib_version"] == __version__
    assert doc["git_commit"] == _expected_commit()
    assert doc["job"].get("command") and doc["started"] <= doc["finished"]
