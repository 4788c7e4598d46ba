"""baselines/learned/seeds.py (accuracy over training seeds beside BIB's tables) and
baselines/learned/irrational.py (the efficiency-irrational counterfactual test trials)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from bib.tasks.efficiency import without_inner_walls
from bib.tasks.registry import make_unit
from bib.world.planning import shortest_path

LEARNED = Path(__file__).resolve().parents[1] / "baselines" / "learned"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"learned_{name}", LEARNED / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _evaluation(folder: Path, irrational: float, path: float) -> Path:
    folder.mkdir()
    conds = {"efficiency-irrational": {"accuracy": irrational}, "efficiency-path": {"accuracy": path}}
    (folder / "evaluation.json").write_text(json.dumps(
        {"conditions": conds, "overall": {"mean": (irrational + path) / 2, "efficiency_average": None}}))
    return folder


def test_seed_table_gives_mean_sd_and_the_gap_to_the_nearer_published_number(tmp_path, capsys):
    seeds = _load("seeds")
    a = _evaluation(tmp_path / "a", 0.50, 0.99)
    b = _evaluation(tmp_path / "b", 0.60, 0.97)
    out = tmp_path / "seeds.json"
    assert seeds.main([f"bc-mlp/s0={a}", f"bc-mlp/s1={b}", "--json", str(out)]) == 0
    table = json.loads(out.read_text())["bc-mlp"]
    irr = table["efficiency-irrational"]
    assert irr["seeds"] == {"s0": 50.0, "s1": 60.0}
    assert irr["mean"] == pytest.approx(55.0)
    assert irr["sd"] == pytest.approx(7.0710678, abs=1e-6)  # sample sd of 50 and 60
    assert irr["published"] == {"neurips": 73.8, "poster": 73.4}
    assert irr["mean_minus_nearer"] == pytest.approx(55.0 - 73.4)
    assert table["efficiency-path"]["mean_minus_nearer"] == pytest.approx(98.0 - 96.0)  # poster 96.0, NeurIPS 94.0
    assert table["mean"]["published"] == {"neurips": None, "poster": None}
    assert "| efficiency-irrational | 50.0 | 60.0 | 55.0 +- 7.1 | 73.8 / 73.4 | -18.4 |" in capsys.readouterr().out


def test_irrational_counterfactuals_replace_only_the_test_trial():
    irr = _load("irrational")
    e, u = make_unit("efficiency-irrational", 3, base_seed=11)
    k = 5
    v = irr.variants(e, u, k)
    assert v["as generated"] == (e, u)
    fam = e.familiarization[k]
    for ep, orig in zip(v["test repeats trial k"], (e, u)):
        assert ep.familiarization == orig.familiarization
        assert ep.test.phase == "test" and ep.test.path == fam.path
        assert ep.test.layout == without_inner_walls(fam.layout)
    # the expected episode's test now repeats its own (barrier-free) familiarization trial k
    assert v["test repeats trial k"][0].test.layout.walls == fam.layout.walls
    straight = tuple(map(tuple, shortest_path(e.test.layout, e.test.path[0], e.test.path[-1])))
    for ep in v["straight test"]:
        assert ep.test.path == straight and ep.test.layout == e.test.layout
        assert not any(irr.detour_steps(ep))
    assert any(irr.detour_steps(e))  # the generated test path is curved
    facts = irr.shape([(e, u, b"", b"")])
    assert facts["test steps"] == e.test.n_steps
    assert facts["extra moves over a shortest path"] == e.test.n_steps - (len(straight) - 1)
