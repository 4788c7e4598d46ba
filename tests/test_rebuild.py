"""The audit tries to rebuild the set (issue 38 item 2): it regenerates every shipped spec whose settings match
the set's and looks each episode up by what it shows; and the path-familiarity reader of the shortcut battery."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_run import run_cli

from bib.episode import load_episode
from bib.observers.rebuild import content_key, matching_specs
from bib.stimuli.blind import load_blind
from bib.stimuli.sets import find_episodes

os.environ["BIB_NO_PROGRESS"] = "1"


def test_the_content_key_is_what_a_model_sees(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "generate", "bib-ctrl", "--limit", "1", "--out", str(tmp_path / "s"))[0] == 0
    files = sorted((tmp_path / "s" / "episodes").glob("*.json"))
    keys = [content_key(load_episode(f)) for f in files]
    assert len(set(keys)) == len(files) > 20  # every episode of a pair shows something else
    # the blind view (opaque ids, role-free object ids, shuffled object order) shows the same content
    assert keys == [content_key(load_blind(f, load_episode(f).id)) for f in files]


def test_settings_that_match_a_shipped_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bib.stimuli.spec import builtin_specs, load_spec

    # no spec.toml (`--task`): its options are unknown, so every shipped spec that lists its condition matches
    assert run_cli(capsys, "generate", "--task", "preference", "--n", "2", "--out", str(tmp_path / "p"))[0] == 0
    listing = sorted(n for n, p in builtin_specs().items() if "preference" in load_spec(p).options())
    assert matching_specs(find_episodes(tmp_path / "p")) == listing == ["bib-ctrl", "bib-eval", "infant-pilot"]
    assert run_cli(capsys, "generate", "bib-ctrl", "--limit", "1", "--secret-seed", "--out", str(tmp_path / "c"))[0] == 0
    assert matching_specs(find_episodes(tmp_path / "c")) == ["bib-ctrl"]  # bib-eval's options are BIB's, not these


def test_the_audit_rebuilds_a_public_set_whole_and_a_secret_set_not_at_all(tmp_path: Path, monkeypatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    public, secret = tmp_path / "bib-ctrl", tmp_path / "secret"
    assert run_cli(capsys, "generate", "bib-ctrl", "--limit", "2", "--out", str(public))[0] == 0
    assert run_cli(capsys, "generate", "bib-ctrl", "--limit", "2", "--secret-seed", "--out", str(secret))[0] == 0
    monkeypatch.chdir(tmp_path)  # a folder named like the spec in the working directory is not the spec
    code, out, _ = run_cli(capsys, "audit", "bib-ctrl", "--out", str(tmp_path / "a-public"))
    # 2 pairs of each of bib-ctrl's 10 conditions (cost-reward's a pair and its twin, issue 43)
    assert code == 1 and "- bib-ctrl (seed 20211207): 40 of 40 episodes found (100.0%), outcomes read from the copy " \
                          "100.0% of 20 pairs; FAIL" in out
    assert "rebuilt spec(s)" in out.splitlines()[-1]
    doc = json.loads((tmp_path / "a-public" / "audit.json").read_text())
    assert doc["rebuild"] == [{"spec": "bib-ctrl", "seed": 20211207, "episodes": 40, "found": 40, "share": 1.0,
                               "pairs": 20, "accuracy": 1.0, "status": "FAIL"}] and doc["passed"] is False
    code, out, _ = run_cli(capsys, "audit", str(secret), "--out", str(tmp_path / "a-secret"))
    doc = json.loads((tmp_path / "a-secret" / "audit.json").read_text())
    assert doc["rebuild"] == [{"spec": "bib-ctrl", "seed": 20211207, "episodes": 40, "found": 0, "share": 0.0,
                               "pairs": 20, "accuracy": 0.5, "status": "ok"}]
    assert "rebuilt spec(s)" not in out.splitlines()[-1]
    assert "0 of 40 episodes found (0.0%)" in (tmp_path / "a-secret" / "audit.md").read_text()


def test_path_familiarity_is_the_share_of_familiar_moves() -> None:
    from bib.observers.shortcuts import PathFamiliarityObserver, path_familiarity
    from bib.tasks import make_unit

    e, u = make_unit("efficiency-path", 0, 5)  # BIB's design: the unexpected test walks a familiar curve again
    assert path_familiarity(u) == 1.0
    made = [(a, b) for t in e.familiarization for a, b in zip(t.path, t.path[1:])]
    moves = list(zip(e.test.path, e.test.path[1:]))
    share = len([m for m in moves if any(m == f for f in made)]) / len(moves)
    assert path_familiarity(e) == share < 1.0
    obs = PathFamiliarityObserver()
    assert obs.surprise(e).tolist() == [1.0 - share] * e.test.n_steps and obs.surprise(u).tolist() == [0.0] * u.test.n_steps
