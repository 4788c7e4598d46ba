"""The result protocol (bib.results): JSON, Markdown, figures and files, on a toy result and on Evaluation."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from bib.evaluation import ConditionResult, EpisodeRef, Evaluation, evaluate
from bib.results import Result, jsonable, markdown_table
from bib.tasks import task_ids


@dataclass
class Coin(Result):
    name: ClassVar[str] = "coin"
    heads: int
    n: int

    def to_json(self) -> dict:
        return {"heads": self.heads, "n": self.n, "rate": self.heads / self.n if self.n else math.nan}

    def to_markdown(self) -> str:
        return markdown_table(["heads", "n"], [[self.heads, self.n]])


def test_jsonable_makes_strict_json() -> None:
    obj = {"a": np.float64(1.5), "b": [np.int32(2), math.nan, (1, math.inf)], 3: np.arange(2), "p": Path("x/y")}
    assert jsonable(obj) == {"a": 1.5, "b": [2, None, [1, None]], "3": [0, 1], "p": "x/y"}
    json.dumps(jsonable(obj), allow_nan=False)


def test_markdown_table_aligns_and_formats() -> None:
    text = markdown_table(["name", "x"], [["a|b", 0.123456], ["c", None], ["d", math.nan]])
    assert text.splitlines() == ["| name | x |", "| :--- | ---: |", "| a\\|b | 0.1235 |", "| c | - |", "| d | - |"]
    with pytest.raises(ValueError):
        markdown_table(["a", "b"], [], align="l")


def test_save_writes_json_and_markdown_without_a_plot(tmp_path: Path) -> None:
    paths = Coin(0, 0).save(tmp_path / "out")
    assert [p.name for p in paths] == ["coin.json", "coin.md"]
    assert json.loads(paths[0].read_text()) == {"heads": 0, "n": 0, "rate": None}
    assert paths[1].read_text() == "| heads | n |\n| :--- | ---: |\n| 0 | 0 |\n"


def _evaluation() -> Evaluation:
    refs, surprise = [], {}
    for i in range(4):
        for outcome, value in (("expected", 1.0), ("unexpected", 2.0 if i < 3 else 1.0)):
            eid = f"preference-{i}-{outcome}"
            refs.append(EpisodeRef(eid, f"preference-{i}", "preference", outcome, Path(eid)))
            surprise[eid] = value
    return Evaluation(evaluate(refs, surprise), "max", [{"name": "toy", "seed": 0}])


def test_evaluation_is_a_result(tmp_path: Path) -> None:
    ev = _evaluation()
    doc = ev.to_json()
    assert doc["conditions"]["preference"]["accuracy"] == pytest.approx((3 + 0.5) / 4)
    assert doc["conditions"]["preference"]["n_ties"] == 1 and doc["sets"] == [{"name": "toy", "seed": 0}]
    md = ev.to_markdown()
    assert "| preference | 87.5 |" in md and "a tie counts 0.5" in md
    paths = ev.save(tmp_path)
    assert [p.name for p in paths] == ["evaluation.json", "evaluation.md", "evaluation.png", "evaluation.svg"]
    assert paths[2].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_saved_figures_are_byte_identical(tmp_path: Path) -> None:
    a, b = _evaluation().save(tmp_path / "a"), _evaluation().save(tmp_path / "b")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def test_family_averages_appear_in_markdown() -> None:
    res = {c: ConditionResult(c, 0.5, 0.4, 0.6, 10, 0) for c in task_ids("evaluation", family="efficiency")}
    assert "| efficiency average | 50.0 |" in Evaluation(res).to_markdown()


def test_every_result_type_of_the_package_is_complete() -> None:
    import importlib
    import inspect
    import pkgutil

    import bib

    for info in pkgutil.walk_packages(bib.__path__, "bib."):
        if not info.name.startswith(("bib.commands", "bib._lifeline", "bib.cli")):
            importlib.import_module(info.name)
    found = {c.__module__ + "." + c.__name__: c for c in _subclasses(Result)}
    assert "bib.evaluation.Evaluation" in found and "bib.meg.cliffworld.CliffWorldMEG" in found
    for name, cls in found.items():
        if cls.__module__.startswith("tests"):
            continue
        assert not inspect.isabstract(cls), f"{name} leaves {sorted(cls.__abstractmethods__)} unimplemented"
        assert cls.name != Result.name, f"{name} sets no file name"


def _subclasses(cls: type) -> list[type]:
    return [s for c in cls.__subclasses__() for s in (c, *_subclasses(c))]


def test_cliffworld_meg_result(tmp_path: Path) -> None:
    from bib.meg import cliffworld as cw

    mdp = cw.cliffworld(7, 4, 9, 0.3)
    rows = [cw.measure(mdp, cw.epsilon_greedy(mdp, 0.3), "epsilon-greedy", 0.3)]
    result = cw.CliffWorldMEG(rows, {"width": 7, "height": 4, "horizon": 9, "wind": 0.3}, "bib meg cliffworld --horizon 9")
    doc = json.loads(result.to_json_text())
    assert round(doc["rows"][0]["known"], 2) == 2.36 and doc["settings"]["horizon"] == 9
    assert result.to_markdown().startswith("Made by: `bib meg cliffworld --horizon 9`")
    assert result.plot() is None  # one experiment only: no figure
    assert [p.name for p in result.save(tmp_path)] == ["cliffworld.json", "cliffworld.md"]


def test_reflection_measurement_result() -> None:
    from bib.reflection.harness import Measurement, ReflectionTable

    m = Measurement("random", True, 20, 2, [0.1, 0.3], {"IgnoreRewards": 0.2, "DejaVu": None}, {"DejaVu": "boom"})
    assert m.to_markdown().splitlines()[0] == "Random_RC: 20 steps, 2 seeds from 0"
    assert "| DejaVu | FAILED: boom |" in m.to_markdown()
    assert json.loads(m.to_json_text())["mean"] == pytest.approx(0.2)
    table = ReflectionTable([m], "bib reflect table --steps 20 --seeds 2")
    assert "| Random_RC | 20 | +0.200000 |" in table.to_markdown()
    assert json.loads(table.to_json_text())["rows"][0]["label"] == "Random_RC"


def test_power_result(tmp_path: Path) -> None:
    from bib.analysis.pilot import pilot_task
    from bib.analysis.power import Power

    rows = [{"n": 10, "sims": 4, "power": 0.25, "mc_se": math.sqrt(0.25 * 0.75 / 4), "power_positive": 0.25,
             "mean_estimate": 0.31, "singular": 1}]
    result = Power(pilot_task("efficiency-path"), rows, None, "log", 0.05, 0, "t")
    doc = json.loads(result.to_json_text())
    assert doc["effect_s"] == 4.5 and doc["power"] == rows and doc["test"] == "t"
    assert "| 10 | 4 | 0.250 | 0.217 | 0.250 | 0.310 | 1 |" in result.to_markdown()
    assert result.to_markdown().startswith("efficiency-path: effect as published (beta = 4.5 s), pilot N = 24")
    assert [p.name for p in result.save(tmp_path)] == ["power.json", "power.md", "power.png", "power.svg"]
    assert "effect 2 s" in Power(pilot_task("efficiency-path"), rows, 2.0, "raw", 0.05, 0, "z").to_markdown()


def test_comparison_result(tmp_path: Path) -> None:
    from bib.analysis.compare import Comparison

    effect = {"estimate": 0.5, "ci_low": 0.1, "ci_high": 0.9, "p": 0.01}
    doc = {"alpha": 0.05, "scale": "z within observer and task", "skipped": {"preference": "no model results"},
           "tasks": {"efficiency-path": {"observers": {"infants": effect, "m": {**effect, "estimate": -0.4, "ci_low": -0.8, "ci_high": 0.0}},
                                        "differences": {"m": {"estimate": -0.9, "p": 0.002, "differs": True}},
                                        "converged": True, "warnings": ["w"]}}}
    result = Comparison(doc)
    assert result.to_json() is doc
    md = result.to_markdown()
    assert "| efficiency-path | infants | 0.5 | 0.1 | 0.9 | - | - | - |" in md
    assert "| efficiency-path | m | -0.4 | -0.8 | 0 | -0.9 | 0.002 | yes |" in md
    assert "- warning (efficiency-path): w" in md and "- skipped preference: no model results" in md
    assert [p.name for p in result.save(tmp_path)] == ["compare.json", "compare.md", "compare.png", "compare.svg"]


def test_leaderboard_result(tmp_path: Path) -> None:
    from bib.evaluation import ANCHORS, Leaderboard, build_leaderboard, read_anchors

    result = build_leaderboard(tmp_path / "no-table-here.csv")
    assert isinstance(result, Leaderboard)
    models = list(dict.fromkeys(a["column"] for a in read_anchors(ANCHORS)))
    assert result.header == ["condition", *models]
    doc = json.loads(result.to_json_text())
    assert set(doc) == {"header", "rows", "note", "agent"} and doc["rows"] == result.rows
    assert set(doc["agent"]) == {"header", "rows", "note"}  # AGENT's Table 1 beside ours (issue 43)
    lines = result.to_markdown().splitlines()
    assert lines[0] == "| " + " | ".join(result.header) + " |" and result.note in lines
    assert lines[-1] == result.agent["note"]
    assert "Ours: none yet" in result.note


def test_set_stats_result() -> None:
    from bib.stimuli.stats import ConditionStats, SetStats

    d = {"mean": 3.0, "sd": 0.5, "min": 2.0, "max": 4.0}
    none = {"mean": None, "sd": None, "min": None, "max": None}
    st = ConditionStats("single-object", "background", 2, 0, d, d, none, {3: 2}, [[1, 0]], 1, 0.0)
    result = SetStats([st])
    assert list(result) == [st] and len(result) == 1
    row = result.to_markdown().splitlines()[2]
    assert row == "| single-object | background | 2 | 0 | 3.0±0.5 | 3.0±0.5 | - | 1 | 0.00 | - | - |"
    doc = json.loads(result.to_json_text())
    assert doc["conditions"][0]["test_steps_histogram"] == {"3": 2} and doc["conditions"][0]["closest_object_correct"] is None


def test_agency_tables_result() -> None:
    import pandas as pd

    from bib.agency.tables import AgencyTables

    table = pd.DataFrame({"grids": [2], "accuracy": [0.75]}, index=pd.MultiIndex.from_tuples([("navigation", "base")],
                                                                                              names=["task", "variant"]))
    meta = {"agent": "optimal", "suite": "navigation", "command": "bib agency run --agent optimal", "steps": 10,
            "invalid_steps": 0}
    result = AgencyTables(meta, {"summary": table})
    md = result.to_markdown()
    assert md.startswith("# Agency results: optimal, suite navigation\n\nMade by: `bib agency run --agent optimal`")
    assert "| navigation | base | 2 | 0.750 |" in md
    doc = json.loads(result.to_json_text())
    assert doc["tables"]["summary"] == [{"task": "navigation", "variant": "base", "grids": 2, "accuracy": 0.75}]
    assert doc["run"]["agent"] == "optimal" and doc["probes"] is None
    assert result.plot() is None  # no size x density table: nothing to draw
