"""Models vs infants: episode index from manifests or JSON, results validation, the comparison model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bib.analysis.compare import compare, infant_responses, read_episode_index, read_results, zscore
from bib.errors import BibInputError

MANIFEST_HEADER = "episode_id,pair_id,task,condition,outcome,seed,n_trials,n_steps,episode_path,video_path,sha256"
SHA = "0" * 64


def _manifest(folder: Path, pairs: int, conditions: tuple[str, ...] = ("preference",)) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [MANIFEST_HEADER]
    for cond in conditions:
        for i in range(pairs):
            for outcome in ("expected", "unexpected"):
                pid = f"{cond}-{i:06d}"
                lines.append(f"{pid}-{outcome},{pid},{cond},{cond},{outcome},{i},9,40,episodes/{pid}-{outcome}.json,,{SHA}")
    lines.append(f"bg-000001,bg-000001,single-object,single-object,none,1,9,40,episodes/bg.json,,{SHA}")
    (folder / "manifest.csv").write_text("\n".join(lines) + "\n")
    return folder


def _results(path: Path, index: pd.DataFrame, effect: float, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    lines = ["episode_id,surprise"]
    for eid, outcome in zip(index["episode_id"], index["outcome"], strict=True):
        value = rng.normal(0, 1) + (effect if outcome == "unexpected" else 0.0)
        lines.append(f"{eid},{value:.6f}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _infants(n: int, effect: float, seed: int, task: str = "preference") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    u = np.repeat(rng.normal(0, 0.5, n), 2)
    outcome = np.tile(["expected", "unexpected"], n)
    y = 2 + u + effect * (outcome == "unexpected") + rng.normal(0, 0.4, 2 * n)
    return pd.DataFrame({"participant_id": np.repeat([f"i{k}" for k in range(n)], 2), "task": task,
                         "outcome": outcome, "y": y})


def test_index_from_nested_manifests(tmp_path: Path) -> None:
    _manifest(tmp_path / "set" / "a", 2)
    _manifest(tmp_path / "set" / "b", 1, ("efficiency-path",))
    index = read_episode_index(tmp_path / "set")
    assert len(index) == 4 + 2 + 1  # the background episode listed in both manifests is merged
    assert set(index["condition"]) == {"preference", "efficiency-path", "single-object"}
    conflict = (tmp_path / "set" / "b" / "manifest.csv").read_text().replace("single-object,none", "single-object,expected")
    (tmp_path / "set" / "b" / "manifest.csv").write_text(conflict)
    with pytest.raises(BibInputError, match=r"episode id 'bg-000001' is listed with conflicting fields"):
        read_episode_index(tmp_path / "set")


def test_index_falls_back_to_episode_json(tmp_path: Path) -> None:
    folder = tmp_path / "eps" / "episodes"
    folder.mkdir(parents=True)
    for outcome in ("expected", "unexpected"):
        (folder / f"p-1-{outcome}.json").write_text(json.dumps({
            "schema": "bib.episode/1", "id": f"p-1-{outcome}", "pair_id": "p-1", "task": "preference",
            "condition": "preference", "outcome": outcome, "trials": []}))
    index = read_episode_index(tmp_path / "eps")
    assert index[["episode_id", "pair_id", "condition", "outcome"]].values.tolist() == [
        ["p-1-expected", "p-1", "preference", "expected"], ["p-1-unexpected", "p-1", "preference", "unexpected"]]
    (folder / "other.json").write_text(json.dumps({"schema": "something/else"}))
    with pytest.raises(BibInputError, match=r"other.json: not a bib.episode/1 file"):
        read_episode_index(tmp_path / "eps")


def test_results_are_validated_against_the_episode_set(tmp_path: Path) -> None:
    index = read_episode_index(_manifest(tmp_path / "set", 2))
    bad = tmp_path / "m.csv"
    bad.write_text("episode_id,surprise\npreference-000000-expected,1.0\nnot-an-episode,2.0\npreference-000001-expected,x\n")
    with pytest.raises(BibInputError, match=r"m.csv: row 3: unknown episode id 'not-an-episode'; row 4: surprise 'x' is not a number"):
        read_results(bad, index)
    bad.write_text("episode_id,surprise\npreference-000000-expected,1.0\npreference-000000-expected,2.0\n")
    with pytest.raises(BibInputError, match=r"row 3: episode 'preference-000000-expected' appears again \(first at row 2\)"):
        read_results(bad, index)
    bad.write_text("episode,surprise\nx,1\n")
    with pytest.raises(BibInputError, match=r"header must be 'episode_id,surprise'"):
        read_results(bad, index)


def test_results_drop_none_outcomes_and_name_the_observer(tmp_path: Path) -> None:
    index = read_episode_index(_manifest(tmp_path / "set", 3))
    resp = read_results(_results(tmp_path / "bc.csv", index, 1.0, 0), index)
    assert len(resp) == 6 and set(resp["observer"]) == {"bc"}
    assert resp["unit"].nunique() == 3 and set(resp["task"]) == {"preference"}


def test_zscore_within_observer_and_task() -> None:
    df = pd.DataFrame({"observer": ["a"] * 4 + ["b"] * 2, "task": ["t", "t", "u", "u", "t", "t"],
                       "response": [1.0, 3.0, 10.0, 30.0, 5.0, 5.0]})
    z = zscore(df)["response_z"].round(6).tolist()
    s = 1 / np.sqrt(2)
    assert z == pytest.approx([-s, s, -s, s, 0.0, 0.0])


def test_model_like_infants_does_not_differ_and_reversed_model_does(tmp_path: Path) -> None:
    n = 40
    index = read_episode_index(_manifest(tmp_path / "set", n))
    infants = _infants(n, 0.5, seed=1)
    # "mirror": the infants' own responses, relabelled as a model -> identical z effect, difference 0.
    mirror = infant_responses(infants).assign(observer="mirror")
    mirror["unit"] = "mirror:" + mirror["unit"]
    reversed_ = read_results(_results(tmp_path / "reversed.csv", index, -1.5, 2), index)
    out = compare(infants, [mirror, reversed_])
    r = out["tasks"]["preference"]
    assert r["differences"]["mirror"]["estimate"] == pytest.approx(0.0, abs=1e-6)
    assert r["observers"]["mirror"]["estimate"] == pytest.approx(r["observers"]["infants"]["estimate"], abs=1e-6)
    assert r["differences"]["mirror"]["differs"] is False
    assert r["observers"]["reversed"]["estimate"] < 0 < r["observers"]["infants"]["estimate"]
    assert r["differences"]["reversed"]["differs"] is True and r["differences"]["reversed"]["p"] < 1e-6
    assert r["observers"]["infants"]["n_units"] == n and r["observers"]["reversed"]["n_units"] == n
    # The infants' effect in z units equals their mean paired difference of z-scores (balanced data).
    z = zscore(infant_responses(infants))
    wide = z.pivot(index="unit", columns="outcome", values="response_z")
    assert r["observers"]["infants"]["estimate"] == pytest.approx((wide["unexpected"] - wide["expected"]).mean(), abs=1e-6)


def test_tasks_without_both_sides_are_skipped_and_reported(tmp_path: Path) -> None:
    index = read_episode_index(_manifest(tmp_path / "set", 12, ("preference", "efficiency-path")))
    infants = pd.concat([_infants(12, 0.5, 1), _infants(12, 0.5, 2, task="multi-agent")])
    out = compare(infants, [read_results(_results(tmp_path / "m.csv", index, 0.5, 3), index)])
    assert list(out["tasks"]) == ["preference"]
    assert out["skipped"] == {"efficiency-path": "no infant data", "multi-agent": "no model results"}
