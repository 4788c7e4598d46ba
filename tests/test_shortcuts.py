"""The shortcut battery (issue 12 item 6): hand-computed surprises, features, the single-feature fit and split, `bib audit`."""

from __future__ import annotations

import json
import math
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bib.cli import main
from bib.episode import Episode, Trial, save_episode
from bib.errors import BibInputError
from bib.evaluation import EpisodeRef, EpisodeSet
from bib.observers import make_observer, observer_names
from bib.observers.audit import (
    BAND,
    COLUMNS,
    battery_surprise,
    check_set,
    features_and_scores,
    fit_single_feature,
    judge,
    label_colour,
    relative_luminance,
    run_audit,
    split_pairs,
)
from bib.observers.inverse_planning import InversePlanner
from bib.observers.shortcuts import (
    FEATURES,
    SHORTCUTS,
    SingleFeatureObserver,
    Stump,
    episode_features,
    fit_stump,
    read_stumps,
    step_novelty,
    write_stumps,
)
from bib.tasks import make_unit
from bib.tasks.common import empty_layout, make_trial
from bib.world.grid import Agent, Cell, GridObject, Layout

os.environ["BIB_NO_PROGRESS"] = "1"
SQ2 = math.sqrt(2)
HEART = ("heart", (220, 40, 60))
STAR = ("star", (40, 170, 200))
AGENT = Agent("agent-0", "pentagon", (40, 90, 220), (2, 2))


def two_objects(a: Cell, b: Cell, agent: Agent = AGENT, walls: frozenset[Cell] = frozenset()) -> Layout:
    objects = (GridObject("A", *HEART, a), GridObject("B", *STAR, b))
    return empty_layout(walls=walls, objects=objects, agents=(agent,))


def line(*cells: Cell) -> list[Cell]:
    """A path through waypoints joined by straight king-move segments."""
    out = [cells[0]]
    for target in cells[1:]:
        while out[-1] != target:
            x, y = out[-1]
            out.append((x + int(np.sign(target[0] - x)), y + int(np.sign(target[1] - y))))
    return out


def episode(fam: list[Trial], test: Trial, eid: str = "x-expected", condition: str = "preference",
            outcome: str = "expected", pair: str | None = "x") -> Episode:
    trials = (*fam, Trial("test", test.layout, test.path, test.events, test.goal))
    return Episode(eid, pair, condition, condition, outcome, 0, 10, 10, trials)


# ---------------------------------------------------------------- registry and per-step values


def test_battery_is_registered() -> None:
    assert set(SHORTCUTS) <= set(observer_names())
    with pytest.raises(BibInputError, match="needs --checkpoint .*single-feature.json that `bib audit"):
        make_observer("single-feature")
    with pytest.raises(BibInputError, match="takes no --checkpoint"):
        make_observer("novelty", checkpoint=__file__)


def test_path_length_is_the_cost_walked_so_far() -> None:
    lay = two_objects((2, 6), (7, 2))
    ep = episode([], make_trial(lay, [(2, 2), (3, 3), (3, 4), (3, 5)], "A", "test"))
    assert np.allclose(make_observer("path-length").surprise(ep), [SQ2, SQ2 + 1, SQ2 + 2])


def test_novelty_and_familiarity_by_hand() -> None:
    lay = two_objects((2, 6), (7, 2))
    fam = [make_trial(lay, line((2, 2), (2, 6)), "A")]  # states (2,2) start, (2,3)..(2,6) moving north
    test = make_trial(lay, [(2, 2), (3, 3), (4, 4)], None, "test")  # two north-east moves
    # step 1 at (3,3): nearest is (2,3) north: distance 1 + move differs 1 = 2
    # step 2 at (4,4): nearest is (2,4) north: distance 2 + 1 = 3
    assert np.allclose(step_novelty(episode(fam, test)), [2.0, 3.0])
    # the same path with the objects' identities swapped: 2 cells show something else
    swapped = make_trial(two_objects((7, 2), (2, 6)), test.path, None, "test")
    assert np.allclose(make_observer("novelty").surprise(episode(fam, swapped)), [4.0, 5.0])
    fam_value = (math.exp(-2) + math.exp(-3)) / 2
    assert np.allclose(make_observer("familiarity").surprise(episode(fam, test)), [fam_value, fam_value])
    # repeating the familiar path exactly: every step has distance 0
    assert np.allclose(step_novelty(episode(fam, make_trial(lay, fam[0].path, "A", "test"))), 0.0)


def test_test_only_ignores_familiarization() -> None:
    lay = two_objects((2, 6), (7, 2))
    test = make_trial(lay, line((2, 2), (7, 2)), "B", "test")
    to_a = [make_trial(lay, line((2, 2), (2, 6)), "A")] * 4
    to_b = [make_trial(lay, line((2, 2), (7, 2)), "B")] * 4
    obs = make_observer("test-only")
    alone = InversePlanner().surprise(episode([], test))  # the inverse planner with no familiarization
    assert np.allclose(obs.surprise(episode(to_a, test)), alone)
    assert np.allclose(obs.surprise(episode(to_b, test)), alone)
    # the full inverse planner does read the familiarization
    full = InversePlanner()
    assert full.surprise(episode(to_a, test)).max() > full.surprise(episode(to_b, test)).max()


def test_battery_surprise_matches_the_registered_observers() -> None:
    e, u = make_unit("preference", 0, 5)
    for ep in (e, u):
        got = battery_surprise(ep)
        for name, values in got.items():
            assert np.allclose(values, make_observer(name).surprise(ep)), name


# ---------------------------------------------------------------- features and the single-feature fit


def test_features_by_hand() -> None:
    walls = frozenset({(5, 5), (5, 6), (5, 7), (6, 5), (6, 7), (7, 5), (7, 6), (7, 7)})  # B at (6, 6) walled in
    lay = two_objects((2, 6), (6, 6), walls=walls)
    fam = [make_trial(two_objects((2, 6), (7, 2)), line((2, 2), (2, 6)), "A")]
    detour = [(2, 2), (3, 2), (3, 3), (3, 4), (2, 5), (2, 6)]  # cost 4 + sqrt 2; optimal (2,2)->(2,6) is 4
    ep = episode(fam, make_trial(lay, detour, "A", "test"))
    f = dict(zip(FEATURES, episode_features(ep)))
    assert f["path-cost"] == pytest.approx(4 + SQ2)
    assert f["n-steps"] == 5
    assert f["excess-cost"] == pytest.approx(SQ2)
    assert f["start-end-distance"] == pytest.approx(4.0)
    assert f["reachable-share"] == 0.5
    assert f["ends-nearest"] == 1.0  # A is the only reachable target
    assert f["inner-walls"] == 8 and f["familiarization-inner-walls"] == 0
    assert f["repeats-familiar-path"] == 0.0 and f["agent-changed"] == 0.0
    again = episode(fam, make_trial(two_objects((2, 6), (7, 2)), line((2, 2), (2, 6)), "A", "test"))
    assert dict(zip(FEATURES, episode_features(again)))["repeats-familiar-path"] == 1.0
    other = Agent("agent-1", "kite", (200, 40, 40), (2, 2))
    new_agent = episode(fam, make_trial(two_objects((2, 6), (7, 2), agent=other), line((2, 2), (2, 6)), "A", "test"))
    assert dict(zip(FEATURES, episode_features(new_agent)))["agent-changed"] == 1.0
    assert f["mud-cells"] == f["wades"] == f["familiarization-mud"] == 0.0  # no mud
    assert f["path-hugs-reveal"] == f["walks-hug-reveal"] == f["path-nears-reveal"] == f["turns-at-reveal"] == 0.0  # no occluder
    blind = {n for n, feat in FEATURES.items() if not feat.reads_familiarization}
    assert blind == set(FEATURES) - {"repeats-familiar-path", "familiarization-inner-walls", "agent-changed",
                                     "familiarization-mud", "path-hugs-reveal", "walks-hug-reveal", "path-nears-reveal",
                                     "turns-at-reveal"}


def test_mud_features_and_novelty_see_the_terrain() -> None:
    """Issue 43: mud cells, wades and the familiarization's mud are features; novelty's pictures show mud."""
    from bib.observers.shortcuts import MUD, _content
    from bib.world.terrain import with_stays

    mud = frozenset((4, y) for y in range(1, 9))
    lay = replace(two_objects((7, 2), (7, 7)), terrain=mud)
    path = with_stays(lay, line((2, 2), (7, 2)))  # along row 2: one step onto (4, 2), two stays
    fam = [make_trial(lay, path, "A"), make_trial(two_objects((7, 2), (7, 7)), line((2, 2), (7, 2)), "A")]
    ep = episode(fam, make_trial(lay, path, "A", "test"))
    f = dict(zip(FEATURES, episode_features(ep)))
    assert (f["mud-cells"], f["wades"], f["familiarization-mud"]) == (8.0, 1.0, 4.0)
    assert f["n-steps"] == 7 and f["path-cost"] == 5.0  # the two stays are steps of no distance
    picture = _content(lay, False, False, {})
    assert sorted(zip(*np.nonzero(picture == MUD))) == sorted((y, x) for x, y in mud)


def test_fit_stump_by_hand() -> None:
    n_feat = len(FEATURES)
    e = np.zeros((4, n_feat))
    u = np.zeros((4, n_feat))
    j = list(FEATURES).index("n-steps")
    e[:, j] = [5, 6, 7, 9]
    u[:, j] = [3, 4, 5, 8]  # smaller n-steps is surprising in every pair
    stump = fit_stump(e, u)
    assert (stump.feature, stump.sign, stump.fit_accuracy, stump.n_fit_pairs) == ("n-steps", -1, 1.0, 4)
    # -n-steps: expected -9 -7 -6 -5, unexpected -8 -5 -4 -3 ("unexpected" above the cut). The cuts below
    # all values and between consecutive ones classify 4/8 (-10), 5/8 (-8.5), 4/8 (-7.5), 5/8 (-6.5),
    # 6/8 (-5.5), 6/8 (-4.5), 5/8 (-3.5) of the episodes right: the lowest best cut is -5.5.
    assert stump.threshold == -5.5
    # all features uninformative: every pair a tie; the first feature, sign +1, 50%
    flat = fit_stump(np.zeros((3, n_feat)), np.zeros((3, n_feat)))
    assert (flat.feature, flat.sign, flat.fit_accuracy) == (list(FEATURES)[0], 1, 0.5)
    with pytest.raises(ValueError):
        fit_stump(np.zeros((0, n_feat)), np.zeros((0, n_feat)))


def test_single_feature_observer_reads_its_fit(tmp_path: Path) -> None:
    stumps = {"preference": Stump("path-cost", -1, -3.0, 1.0, 10)}
    write_stumps(tmp_path / "fit.json", stumps, "test split")
    assert read_stumps(tmp_path / "fit.json") == stumps
    obs = make_observer("single-feature", checkpoint=tmp_path / "fit.json")
    lay = two_objects((2, 6), (7, 2))
    ep = episode([], make_trial(lay, line((2, 2), (2, 6)), "A", "test"))
    assert np.allclose(obs.surprise(ep), [-4.0 + 3.0] * 4)
    assert np.allclose(SingleFeatureObserver({}).surprise(ep), 0.0)  # no fit for the condition: ties
    (tmp_path / "bad.json").write_text(json.dumps({"schema": "bib.single-feature/1", "conditions": {
        "preference": {"feature": "nope", "sign": 1, "threshold": 0, "fit_accuracy": 1, "n_fit_pairs": 1}}}))
    with pytest.raises(BibInputError, match="unknown feature 'nope'"):
        read_stumps(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(BibInputError, match="not a single-feature fit"):
        read_stumps(tmp_path / "other.json")


def _refs(n: int, cond: str = "preference", twins: bool = True, roles: tuple[str, ...] = ("",)) -> list[EpisodeRef]:
    """Pairs ``cond-<i>``; with twins, pairs 2k and 2k+1 name each other in ``twin_id`` (as the manifest does).
    Group k (pairs 2k, 2k+1; pair i without twins) takes the role ``roles[k % len(roles)]``, its twin ``ROLE+twin``."""
    out = []
    for i in range(n):
        group = i // 2 if twins else i
        role = roles[group % len(roles)]
        variant = "+".join(v for v in (role, "twin" if twins and i % 2 else "") if v)
        for o in ("expected", "unexpected"):
            twin = f"{cond}-{i ^ 1:03d}" if twins else None
            out.append(EpisodeRef(f"{cond}-{i:03d}-{o}", f"{cond}-{i:03d}", cond, o, Path("x"), twin_id=twin,
                                  variant=variant or None))
    return out


def test_split_is_deterministic_disjoint_and_keeps_twins_together() -> None:
    refs = _refs(200)
    fit, scored = split_pairs(refs)
    fit_pairs, scored_pairs = fit["preference"], scored["preference"]
    assert len(fit_pairs) + len(scored_pairs) == 200
    assert not {p for pair in fit_pairs for p in pair} & {p for pair in scored_pairs for p in pair}
    assert len(fit_pairs) == len(scored_pairs) == 100  # 100 groups of one role: exactly half
    fit_ids = {e.rsplit("-", 1)[0] for e, _ in fit_pairs}
    for e, _ in fit_pairs + scored_pairs:  # a pair and its twin are on the same side
        pid = e.rsplit("-", 1)[0]
        twin = f"preference-{int(pid.split('-')[1]) ^ 1:03d}"
        assert (pid in fit_ids) == (twin in fit_ids)
    # the same ids give the same split, whatever the order; another seed gives another split
    assert split_pairs(list(reversed(refs)))[0]["preference"] == fit_pairs
    assert set(split_pairs(refs, seed=1)[0]["preference"]) != set(fit_pairs)
    # not the index: the fit half is no run of group indices nor one parity
    groups = sorted(int(e.split("-")[1]) // 2 for e, _ in fit_pairs if int(e.split("-")[1]) % 2 == 0)
    assert groups != list(range(50)) and groups != list(range(50, 100)) and {g % 2 for g in groups} == {0, 1}
    # without twin ids, a pair is its own group
    fit1, scored1 = split_pairs(_refs(51, twins=False))
    assert sorted((len(fit1["preference"]), len(scored1["preference"]))) == [25, 26]


def test_split_is_stratified_by_design_roles() -> None:
    """Every role (catch, twin, variant) goes half to each side: catch pairs are never 38% of one half and 64% of the other."""
    roles = ("", "catch", "catch", "via-key", "")  # 2:2:1 over 101 groups: strata of 41, 40 and 20 groups
    refs = _refs(202, roles=roles)
    variant = {r.id: r.variant or "" for r in refs}
    for seed in range(5):
        fit, scored = split_pairs(refs, seed=seed)
        for role in ("", "catch", "via-key", "twin", "catch+twin", "via-key+twin"):
            n_fit = sum(variant[e] == role for e, _ in fit["preference"])
            n_scored = sum(variant[e] == role for e, _ in scored["preference"])
            assert abs(n_fit - n_scored) <= 1, (seed, role, n_fit, n_scored)  # an odd stratum's middle group
            assert n_fit + n_scored == {"": 41, "twin": 41, "catch": 40, "catch+twin": 40}.get(role, 20)
    # the exact numbers of one seed (regression): how many groups of each stratum fit
    fit, _ = split_pairs(refs, seed=0)
    counts = {role: sum(variant[e] == role for e, _ in fit["preference"]) for role in ("", "catch", "via-key")}
    assert counts == {"": 20, "catch": 20, "via-key": 10}  # the odd stratum (41 groups) gave its middle one to the scored side


def test_the_fit_never_sees_scored_pairs() -> None:
    refs = _refs(60)
    fit, scored = split_pairs(refs)
    rng = np.random.default_rng(0)
    fit_ids = {eid for pair in fit["preference"] for eid in pair}
    features = {eid: rng.random(len(FEATURES)) for eid in fit_ids}  # no scored episode has features at all
    stumps = fit_single_feature(fit, features)
    assert stumps["preference"].n_fit_pairs == len(fit["preference"])
    # scored episodes' features can be anything: the fit does not change
    poisoned = dict(features) | {eid: np.full(len(FEATURES), 1e9) for pair in scored["preference"] for eid in pair}
    assert fit_single_feature(fit, poisoned) == stumps


def test_judge_band_and_exemptions() -> None:
    assert judge("preference", "perceptual", 0.6) == ("ok", None)
    assert judge("preference", "perceptual", 0.4) == ("ok", None)
    assert judge("preference", "perceptual", 0.61)[0] == "FAIL"
    assert judge("preference", "novelty", 0.2) == ("FAIL", "novelty cue below 40% (the reversed cue passes)")
    assert judge("efficiency-path", "efficiency", 1.0)[0] == "exempt"
    assert judge("efficiency-path", "perceptual", 1.0)[0] == "FAIL"  # path length is never exempt
    assert judge("instrumental-blocking", "efficiency", 1.0)[0] == "exempt"
    assert judge("instrumental-no-barrier", "efficiency", 1.0)[0] == "FAIL"
    assert judge("instrumental-blocking", "reachability", 1.0)[0] == "exempt"
    assert judge("inaccessible-goal", "reachability", 1.0)[0] == "FAIL"
    assert judge("efficiency-irrational", "familiarization-barrier", 1.0)[0] == "exempt"
    # issue 38: barrier-aside shows the same barrier in both familiarizations, so on a set whose irrational
    # pairs are all barrier-aside the exemption lapses (bib-ctrl); BIB's design ("") keeps it (bib-eval).
    assert judge("efficiency-irrational", "familiarization-barrier", 1.0, {"barrier-aside"}) == (
        "FAIL", "familiarization-barrier cue above 60%")
    assert judge("efficiency-irrational", "novelty", 0.2, {"barrier-aside"})[0] == "FAIL"
    assert judge("efficiency-irrational", "familiarization-barrier", 1.0, {"", "barrier-aside"})[0] == "exempt"
    assert judge("efficiency-irrational", "familiarization-barrier", 1.0, {"barrier-elsewhere"})[0] == "exempt"
    assert judge("efficiency-path", "efficiency", 1.0, {"barrier-aside"})[0] == "exempt"  # lapses only where registered
    assert judge("multi-agent", "agent-identity", 0.0)[0] == "exempt"
    assert judge("preference", "agent-identity", 1.0)[0] == "FAIL"
    assert BAND == (0.4, 0.6)


# ---------------------------------------------------------------- twins and the audit


def _twin_groups(tmp_path: Path, n: int) -> EpisodeSet:
    """n preference twin groups: pair a (A preferred) and its twin b (B preferred) share the two test trials, labels swapped."""
    rng = np.random.default_rng(3)
    refs = []
    spots = [((7, 2), (2, 7)), ((7, 3), (3, 7)), ((6, 2), (2, 6)), ((7, 4), (4, 7))]
    for g in range(n):
        a_cell, b_cell = (int(rng.integers(4, 8)), int(rng.integers(5, 8))), (int(rng.integers(5, 8)), int(rng.integers(1, 4)))
        test_lay = two_objects(a_cell, b_cell)
        to_a = make_trial(test_lay, line((2, 2), a_cell), "A", "test")
        to_b = make_trial(test_lay, line((2, 2), b_cell), "B", "test")
        for twin, (pref, exp_t, unexp_t) in {"a": ("A", to_a, to_b), "b": ("B", to_b, to_a)}.items():
            fam = [make_trial(two_objects(a, b), line((2, 2), a if pref == "A" else b), pref) for a, b in spots * 2]
            pid = f"preference-{g:03d}{twin}"
            for outcome, test in (("expected", exp_t), ("unexpected", unexp_t)):
                ep = episode(fam, test, f"{pid}-{outcome}", "preference", outcome, pid)
                path = tmp_path / f"{ep.id}.json"
                save_episode(ep, path)
                twin_id = f"preference-{g:03d}{'b' if twin == 'a' else 'a'}"
                refs.append(EpisodeRef(ep.id, pid, "preference", outcome, path, twin_id=twin_id))
    return EpisodeSet(sorted(refs, key=lambda r: r.id))


def test_twins_give_exactly_half_to_familiarization_blind_shortcuts(tmp_path: Path) -> None:
    found = _twin_groups(tmp_path, 16)
    audit = run_audit(found, str(tmp_path), n_boot=50, progress=False)
    row = audit.cells["preference"]
    for name in ("closest-object", "test-only", "path-length"):
        assert row[name].result.accuracy == 0.5, name
        assert row[name].status == "ok"
    stump = audit.stumps["preference"]
    if not FEATURES[stump.feature].reads_familiarization:
        assert row["single-feature"].result.accuracy == 0.5
    # the inverse planner does read the familiarization: it gets every pair right
    obs = InversePlanner()
    from bib.episode import load_episode
    by_pair: dict[str, dict[str, float]] = {}
    for r in found.refs:
        by_pair.setdefault(r.pair_id, {})[r.outcome] = float(obs.surprise(load_episode(r.path)).max())
    assert all(v["expected"] < v["unexpected"] for v in by_pair.values())


def test_audit_scores_alike_for_any_worker_count_with_this_process_scoring_too(tmp_path: Path, monkeypatch) -> None:
    """The battery runs through map_ordered(local=True): the same scores and features, in the same order, for
    1, 2 and 3 workers, and with a pool this process scores chunks too (its battery observers get built here)."""
    import bib.observers.audit as audit

    found = _twin_groups(tmp_path, 3)  # 12 episodes, one per chunk
    scores, feats, leaks, tests, keys = features_and_scores(found.refs, workers=1, progress=False, chunk=1)
    assert list(scores) == [r.id for r in found.refs]
    for workers in (2, 3):
        monkeypatch.setattr(audit, "_OBSERVERS", {})
        got = features_and_scores(found.refs, workers=workers, progress=False, chunk=1)
        for mine, theirs in zip(got, (scores, feats, leaks, tests, keys), strict=True):
            assert list(mine) == list(theirs) and all(np.array_equal(mine[k], theirs[k]) for k in theirs)
        assert audit._OBSERVERS, "this process scored no chunk beside the pool"
    one = run_audit(found, "set", n_boot=50, progress=False)
    assert run_audit(found, "set", workers=2, n_boot=50, progress=False).to_json_text() == one.to_json_text()


def test_audit_of_hand_built_pairs_by_hand(tmp_path: Path) -> None:
    """Two efficiency-path-like pairs: path-length right on both, so it FAILs (100%), closest-object is exempt."""
    lay = two_objects((2, 6), (7, 7))
    fam = [make_trial(lay, line((2, 2), (2, 6)), "A")]
    refs = []
    for i, detour in enumerate([[(2, 2), (3, 3), (3, 4), (3, 5), (2, 6)], [(2, 2), (1, 3), (1, 4), (1, 5), (2, 6)]]):
        for outcome, path in (("expected", line((2, 2), (2, 6))), ("unexpected", detour)):
            ep = episode(fam, make_trial(lay, path, "A", "test"), f"efficiency-path-{i}-{outcome}", "efficiency-path",
                         outcome, f"efficiency-path-{i}")
            save_episode(ep, tmp_path / f"{ep.id}.json")
            refs.append(EpisodeRef(ep.id, ep.pair_id, ep.condition, outcome, tmp_path / f"{ep.id}.json"))
    audit = run_audit(EpisodeSet(refs), str(tmp_path), n_boot=50, progress=False)
    row = audit.cells["efficiency-path"]
    assert row["path-length"].result.accuracy == 1.0 and row["path-length"].status == "FAIL"
    assert row["closest-object"].result.accuracy == 1.0 and row["closest-object"].status == "exempt"
    assert row["test-only"].status == "exempt"
    assert not audit.passed
    assert ("efficiency-path", "path-length") in {(c, s) for c, s, _ in audit.failures}


# ---------------------------------------------------------------- CLI


def bib(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    """Run ``bib ARGS`` through the console entry point: (exit code, stdout, stderr)."""
    capsys.readouterr()
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _generate(capsys: pytest.CaptureFixture[str], root: Path, task: str, n: int, seed: int = 11) -> None:
    code, out, err = bib(capsys, "generate", "--task", task, "--n", n, "--seed", seed, "--out", root / task)
    assert code == 0, out + err


def test_audit_cli_fails_on_bib_eval_style_pairs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for task in ("preference", "efficiency-path"):
        _generate(capsys, tmp_path / "set", task, 6)
    out = tmp_path / "audit"
    code, stdout, err = bib(capsys, "audit", tmp_path / "set", "--out", out)
    assert code == 1, stdout + err
    assert "FAIL" in stdout
    doc = json.loads((out / "audit.json").read_text())
    assert doc["schema"] == "bib.audit/1" and doc["passed"] is False
    assert set(doc["conditions"]) == {"preference", "efficiency-path"}
    cell = doc["conditions"]["efficiency-path"]["shortcuts"]["path-length"]
    assert (cell["accuracy"], cell["status"], cell["n_pairs"]) == (1.0, "FAIL", 6)
    assert set(doc["conditions"]["preference"]["shortcuts"]) == set(COLUMNS)
    assert {"condition": "efficiency-path", "shortcut": "path-length", "accuracy": 1.0,
            "reason": "perceptual cue above 60%"} in doc["failures"]
    assert "| efficiency-path | 6 |" in (out / "audit.md").read_text()
    assert (out / "audit.svg").read_bytes().startswith(b"<?xml") and (out / "audit.png").exists()
    # cell labels: white on the dark ends of the colour map (100% FAIL cell), black on the pale middle
    audit = run_audit(check_set(tmp_path / "set"), str(tmp_path / "set"), n_boot=50, progress=False)
    colours = {t.get_text(): t.get_color() for t in audit.plot().axes[0].texts}
    assert colours["100 FAIL"] == "white", colours
    assert {c for t, c in colours.items() if 40 <= float(t.split()[0]) <= 60} == {"black"}, colours
    assert read_stumps(out / "single-feature.json").keys() <= {"preference", "efficiency-path"}
    # the same command again writes into its own folder; another set is refused without --force
    assert bib(capsys, "audit", tmp_path / "set", "--out", out)[0] == 1
    code, _, err = bib(capsys, "audit", tmp_path / "set" / "preference", "--out", out)
    assert code == 2 and "folder holds the output of" in err and "use --force" in err
    assert json.loads((out / "provenance.json").read_text())["job"]["command"] == "audit"


def test_audit_cli_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _generate(capsys, tmp_path, "single-object", 3)
    code, out, err = bib(capsys, "audit", tmp_path / "single-object", "--out", tmp_path / "a")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        f"bib: error: {tmp_path / 'single-object'}: no expected/unexpected pairs to audit (a background set?)"]
    assert not (tmp_path / "a").exists()  # nothing written
    code, _, err = bib(capsys, "audit", tmp_path / "nope", "--out", tmp_path / "a")
    assert code == 2 and "no such file or folder" in err
    (tmp_path / "file").write_text("x")
    _generate(capsys, tmp_path / "set", "preference", 2)
    code, _, err = bib(capsys, "audit", tmp_path / "set", "--out", tmp_path / "file")
    assert code == 2 and "exists and is a file; --out names a folder" in err


def test_label_colour_by_luminance() -> None:
    from matplotlib import colormaps

    assert relative_luminance((1.0, 1.0, 1.0)) == pytest.approx(1.0)
    assert relative_luminance((0.0, 0.0, 0.0, 1.0)) == 0.0
    assert relative_luminance((0.5, 0.5, 0.5)) == pytest.approx(0.2140, abs=1e-4)  # sRGB mid grey
    assert label_colour((0.0, 0.0, 0.0)) == "white" and label_colour((1.0, 1.0, 1.0)) == "black"
    # the threshold is where white and black contrast equally (L = 0.179): pure blue and green differ
    assert label_colour((0.0, 0.0, 1.0)) == "white" and label_colour((0.0, 1.0, 0.0)) == "black"
    cmap = colormaps["RdBu_r"]
    assert [label_colour(cmap(a / 100)) for a in (0, 50, 100)] == ["white", "black", "white"]
