"""The blind view (issue 26): a model is handed only what a viewer of the videos knows.

Hand-written cheats (the label field, the id's text, the place in the chunk, the text size) are
scored through the library (`score`, `surprise_many`) on a small generated set of every condition;
through the blind view each sits at chance.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from bib.episode import Episode, dumps, load_episode, loads
from bib.evaluation import evaluate, find_episodes
from bib.observers.base import BaseObserver, surprise_many
from bib.stimuli.blind import GENERATOR, blind_episode, blind_text, file_secret, load_blind, opaque_id
from bib.tasks import conditions, make_unit

os.environ["BIB_NO_PROGRESS"] = "1"


@pytest.fixture(scope="module")
def small_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six pairs of every condition (bib-eval's generators), 12 episode files a condition."""
    from bib.episode import save_episode

    root = tmp_path_factory.mktemp("blindset")
    for cond in conditions():
        for i in range(6):
            for ep in make_unit(cond, i, 7):
                save_episode(ep, root / f"{ep.id}.json", durable=False)
    return root


def test_blind_episode_drops_every_design_field(small_set: Path) -> None:
    for path in sorted(small_set.glob("*.json"))[:40]:
        ep = load_episode(path)
        view = load_blind(path, ep.id)
        assert view == blind_episode(ep, file_secret(path))  # deterministic
        assert (view.outcome, view.pair_id, view.twin_id, view.variant, view.difficulty, view.beta, view.seed) == \
            ("none", None, None, "", None, None, 0)
        assert view.generator == GENERATOR and view.condition == ep.condition and view.task == ep.task
        assert view.id == opaque_id(file_secret(path), ep.id) and len(view.id) == 17 and view.id[0] == "e"
        text = blind_text(view)
        assert loads(text) == view
        assert ep.id not in text and (ep.pair_id or "@@") not in text
        head = text.split('"trials"')[0]
        assert json.loads(head + '"trials": []}').keys() == {"schema", "id", "task", "condition", "grid", "trials"}
        assert "excess_cost" not in text
        # same layouts, paths and events; objects renamed consistently, listed in the new ids' order
        names: dict[str, str] = {}
        for t, v in zip(ep.trials, view.trials):
            assert (t.phase, t.path, t.events, t.layout.walls, t.layout.barriers, t.layout.key, t.layout.lock) == \
                (v.phase, v.path, v.events, v.layout.walls, v.layout.barriers, v.layout.key, v.layout.lock)
            assert v.excess_cost is None
            assert [o.id for o in v.layout.objects] == sorted(o.id for o in v.layout.objects)
            by_cell = {o.cell: o for o in t.layout.objects}
            for o in v.layout.objects:
                orig = by_cell[o.cell]
                assert (o.shape, o.color) == (orig.shape, orig.color)
                assert names.setdefault(orig.id, o.id) == o.id  # one id per object across the episode
                assert o.id != orig.id and len(o.id) == 5 and o.id[0] == "o"
            assert names.setdefault(t.layout.agent.id, v.layout.agent.id) == v.layout.agent.id
            end = v.path[-1]
            on = [o.id for o in v.layout.objects if o.cell == end]
            assert v.goal == (on[0] if on else ("key" if v.layout.key == end else None))


def test_judge_leak_tells_a_coin_from_a_reader() -> None:
    from bib.evaluation import ConditionResult
    from bib.observers.leaks import judge_leak

    band = (0.4, 0.6)
    # 54 cells (6 readers x 9 conditions): FAIL below p = 0.05 / 54 = 9.3e-4
    assert judge_leak(ConditionResult("c", 0.39, 0.29, 0.49, 100, 0), band, 54)[0] == "ok"  # p = 0.035
    assert judge_leak(ConditionResult("c", 0.67, 0.6, 0.8, 100, 0), band, 54)[0] == "FAIL"  # p = 9.0e-4
    assert judge_leak(ConditionResult("c", 0.66, 0.6, 0.8, 100, 0), band, 54)[0] == "ok"  # p = 1.8e-3
    assert judge_leak(ConditionResult("c", 1.0, 1.0, 1.0, 6, 0), band, 54)[0] == "ok"  # 6 pairs: p = 0.03
    status, reason = judge_leak(ConditionResult("c", 1.0, 1.0, 1.0, 12, 0), band, 54)  # p = 4.9e-4
    assert status == "FAIL" and reason == "leak above the 40-60% band (binomial p = 4.9e-04 < 0.05 / 54 cells)"
    assert judge_leak(ConditionResult("c", 1.0, 1.0, 1.0, 12, 0), band, 108)[0] == "ok"  # 4.6e-4: more cells, a stricter line
    assert judge_leak(ConditionResult("c", 0.5, 0.5, 0.5, 12, 12), band, 54)[0] == "ok"
    assert judge_leak(ConditionResult("c", 0.38, 0.3, 0.45, 1000, 0), band, 54)[0] == "FAIL"  # p ~ 4e-14
    # ties count half: 20 pairs, 10 tied, 10 won = 75%; the coin is judged on the 10 untied pairs (p = 2.0e-3)
    assert judge_leak(ConditionResult("c", 0.75, 0.5, 0.9, 20, 10), band, 1)[0] == "FAIL"
    assert judge_leak(ConditionResult("c", 0.75, 0.5, 0.9, 20, 10), band, 54)[0] == "ok"


@pytest.mark.parametrize("n_pairs", [6, 12, 24, 50, 100, 150, 200, 327, 1000])
def test_a_coin_flip_fails_an_audit_at_most_one_time_in_twenty(n_pairs: int) -> None:
    """The rule follows from the statistics: a reader that reads nothing is a fair coin per pair, so the exact
    chance that judge_leak FAILs one of its cells is the binomial mass it FAILs; over the 54 cells of a
    nine-condition audit the chance of any FAIL stays <= 5% at every set size. The band alone would not hold it:
    on 100 pairs a coin leaves 40-60% in 3.5% of cells, 85% of audits."""
    from scipy.stats import binom

    from bib.evaluation import ConditionResult
    from bib.observers.leaks import LEAK_ALPHA, judge_leak

    cells = 54
    pmf = binom.pmf(np.arange(n_pairs + 1), n_pairs, 0.5)
    fails = np.array([judge_leak(ConditionResult("c", k / n_pairs, 0, 1, n_pairs, 0), (0.4, 0.6), cells)[0] == "FAIL"
                      for k in range(n_pairs + 1)])
    per_cell = float(pmf[fails].sum())
    assert per_cell <= LEAK_ALPHA / cells
    assert 1 - (1 - per_cell) ** cells <= LEAK_ALPHA
    outside = float(pmf[(np.arange(n_pairs + 1) < 0.4 * n_pairs) | (np.arange(n_pairs + 1) > 0.6 * n_pairs)].sum())
    if n_pairs == 100:
        assert outside == pytest.approx(0.0352, abs=1e-4) and 1 - (1 - outside) ** cells > 0.8
    # and a reader that reads the answer in 70% of the pairs FAILs from 100 pairs on (p = 7.9e-5 there)
    if n_pairs >= 100:
        assert judge_leak(ConditionResult("c", 0.7, 0, 1, n_pairs, 0), (0.4, 0.6), cells)[0] == "FAIL"


def test_another_secret_gives_other_ids(small_set: Path) -> None:
    ep = load_episode(next(iter(sorted(small_set.glob("*.json")))))
    a, b = blind_episode(ep, b"one"), blind_episode(ep, b"two")
    assert a.id != b.id
    assert {o.id for o in a.test.layout.objects} != {o.id for o in b.test.layout.objects}


class Cheat(BaseObserver):
    """Reads what a model must not: ``how`` is label, id, position or size (of the text before the trials: what
    the trials show is the shortcut battery's)."""

    def __init__(self, how: str) -> None:
        self.how = how
        self.name = f"cheat-{how}"

    def surprise_many(self, episodes: Sequence[Episode]) -> list[np.ndarray]:
        out = []
        for i, ep in enumerate(episodes):
            value = {"label": float(ep.outcome == "unexpected"),
                     "id": float("unexpected" in ep.id),
                     "position": float(i % 2),
                     "size": float(len(dumps(ep).split('"trials"')[0]))}[self.how]
            out.append(np.full(ep.test.n_steps, value))
        return out


def accuracies(found, surprise: dict[str, float]) -> dict[str, float]:
    return {c: r.accuracy for c, r in evaluate(found.refs, surprise, n_boot=10).items()}


@pytest.mark.parametrize("how", ["label", "id", "position", "size"])
def test_cheats_sit_at_chance_through_score_and_a_kit(small_set: Path, kit: tuple[Path, Path], tmp_path: Path,
                                                      how: str) -> None:
    """On the open episodes the cheat is perfect; through `score` (the blind view) and through a kit scored
    against its key it reads nothing."""
    from bib.observers.scoring import _OBSERVERS, _observer_key, score
    from bib.stimuli.kit import read_key

    found = find_episodes(small_set)
    eps = [load_episode(r.path) for r in found.refs]
    cheat = Cheat(how)
    open_scores = {ep.id: float(s.max()) for ep, s in zip(eps, cheat.surprise_many(eps))}
    assert set(accuracies(found, open_scores).values()) == {1.0}
    _OBSERVERS[_observer_key(cheat.name, None, {})] = cheat  # as if built by name
    keyed, _ = read_key(kit[1])
    through = {"score": (found, score(cheat.name, found, tmp_path / "r.csv", progress=False).surprise),
               "kit": (keyed, score(cheat.name, find_episodes(kit[0]), tmp_path / "k.csv", progress=False).surprise)}
    for where, (refs, surprise) in through.items():
        acc = accuracies(refs, surprise)
        if how == "position":  # a shuffled order: a coin per pair, 6 pairs a condition; pooled over the 54
            pooled = [dataclasses.replace(r, condition="all") for r in refs.refs]
            assert 0.3 <= evaluate(pooled, surprise, n_boot=10)["all"].accuracy <= 0.7, where
        else:  # nothing to read: every pair ties
            assert set(acc.values()) == {0.5}, (where, acc)
    blind = {ep.id: float(s.max()) for ep, s in zip(eps, surprise_many(cheat, eps))}
    if how != "position":
        assert set(accuracies(found, blind).values()) == {0.5}


def test_score_results_are_keyed_by_the_real_ids(small_set: Path, tmp_path: Path) -> None:
    from bib.observers.scoring import score

    found = find_episodes(small_set)
    summary = score("path-length", found, tmp_path / "r.csv", progress=False)
    assert set(summary.surprise) == found.ids()
    rows = (tmp_path / "r.csv").read_text().splitlines()[1:]
    assert {r.split(",")[0] for r in rows} == found.ids()
    again = score("path-length", found, tmp_path / "r2.csv", progress=False)
    assert (tmp_path / "r.csv").read_bytes() == (tmp_path / "r2.csv").read_bytes()
    assert json.dumps(summary.to_json()["conditions"]) == json.dumps(again.to_json()["conditions"])


# ---------------------------------------------------------------- the submission kit


def run_cli(*argv: str) -> tuple[int, str]:
    """``bib ARGV`` in this process: (exit code, stdout + stderr)."""
    import contextlib
    import io

    from bib.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue() + err.getvalue()


@pytest.fixture(scope="module")
def kit(small_set: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from bib.stimuli.kit import make_kit

    root = tmp_path_factory.mktemp("kit")
    make_kit(small_set, root / "kit", root / "key.csv", seed=5, progress=False, allow_public=True)
    return root / "kit", root / "key.csv"


def test_kit_holds_only_blind_episodes_and_ids(small_set: Path, kit: tuple[Path, Path]) -> None:
    folder, key = kit
    assert sorted(p.name for p in folder.iterdir()) == ["episodes", "kit.csv"]
    rows = (folder / "kit.csv").read_text().splitlines()
    assert rows[0] == "episode_id,condition" and rows[1:] == sorted(rows[1:])
    files = sorted((folder / "episodes").iterdir())
    assert len(files) == len(rows) - 1 == 12 * len(conditions())
    assert {f.stem for f in files} == {r.split(",")[0] for r in rows[1:]}
    assert len({f.stat().st_size for f in files}) == 1  # padded: a size says nothing
    real = find_episodes(small_set)
    for f in files:
        text = f.read_text()
        view = loads(text)
        assert view.id == f.stem and view.outcome == "none" and view.pair_id is None
        for r in real.refs[:: 7]:
            assert r.id not in text and (r.pair_id or "@@") not in text
        assert "expected" not in text and "excess_cost" not in text
    head = key.read_text().splitlines()[0]
    assert head.startswith("# bib blind key ") and not (folder / key.name).exists()
    # the same seed gives the same kit; the key maps every kit id to its real episode
    from bib.stimuli.kit import read_key

    found, fingerprint = read_key(key)
    assert found.ids() == {f.stem for f in files} and len(fingerprint) == 16
    assert {(r.condition, r.outcome) for r in found.refs} == {(r.condition, r.outcome) for r in real.refs}


def test_evaluate_with_the_key_gives_the_open_sets_numbers(small_set: Path, kit: tuple[Path, Path], tmp_path: Path) -> None:
    folder, key = kit
    code, out = run_cli("score", "path-length", str(folder), "--out", str(tmp_path / "rk"))
    assert code == 0, out
    code, out = run_cli("score", "path-length", str(small_set), "--out", str(tmp_path / "ro"))
    assert code == 0, out
    code, via_key = run_cli("evaluate", str(key), str(tmp_path / "rk"), "--json")
    assert code == 0, via_key
    code, direct = run_cli("evaluate", str(small_set), str(tmp_path / "ro"), "--json")
    assert json.loads(via_key)["conditions"] == json.loads(direct)["conditions"]
    # a results CSV made outside bib, over the kit's ids: a cheat reading the file's size or name sits at chance
    for how in ("size", "name"):
        lines = ["episode_id,surprise"]
        for f in sorted((folder / "episodes").iterdir()):
            lines.append(f"{f.stem},{f.stat().st_size if how == 'size' else int('u' in f.stem)}")
        (tmp_path / f"{how}.csv").write_text("\n".join(lines) + "\n")
        code, out = run_cli("evaluate", str(key), str(tmp_path / f"{how}.csv"), "--json")
        assert code == 0, out
        accs = [c["accuracy"] for c in json.loads(out)["conditions"].values()]
        assert (set(accs) == {0.5}) if how == "size" else all(0.2 <= a <= 0.8 for a in accs)


def test_kit_bad_input_one_line_exit_2_nothing_written(small_set: Path, kit: tuple[Path, Path], tmp_path: Path) -> None:
    folder, key = kit
    full = tmp_path / "full"
    full.mkdir()
    (full / "x.txt").write_text("x")
    cases = [
        (["blind", str(small_set), "--out", str(full), "--key", str(tmp_path / "k.csv")], "the kit folder holds files"),
        (["blind", str(small_set), "--out", str(tmp_path / "new"), "--key", str(tmp_path / "new" / "k.csv")],
         "inside the kit"),
        (["blind", str(small_set), "--out", str(tmp_path / "new"), "--key", str(key)], "exists; use --force"),
    ]
    before = sorted(p.name for p in tmp_path.iterdir())
    for argv, words in cases:
        code, out = run_cli(*argv)
        assert code == 2 and words in out and len(out.strip().splitlines()) == 1, out
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    rows = (folder / "kit.csv").read_text().splitlines()[1:]
    ids = [r.split(",")[0] for r in rows]
    (tmp_path / "missing.csv").write_text("episode_id,surprise\n" + "".join(f"{i},1\n" for i in ids[1:]))
    (tmp_path / "unknown.csv").write_text("episode_id,surprise\n" + "".join(f"{i},1\n" for i in ids) + "ezzz,1\n")
    (tmp_path / "other.csv").write_text("episode_id,surprise\n" + "".join(f"x{i},1\n" for i in ids))
    for name, words in (("missing", "have no row"), ("unknown", "unknown episode id 'ezzz'"),
                        ("other", "results on another kit")):
        code, out = run_cli("evaluate", str(key), str(tmp_path / f"{name}.csv"))
        assert code == 2 and words in out and len(out.strip().splitlines()) == 1, out


# ---------------------------------------------------------------- the leak battery (Done when of issue 26)


def test_leak_battery_reads_the_open_set_and_sits_at_chance_through_score_and_kit(
        small_set: Path, kit: tuple[Path, Path], tmp_path: Path) -> None:
    from bib.observers.leaks import LEAKS, judge_leak, leak_readers
    from bib.observers.scoring import _OBSERVERS, _observer_key, score
    from bib.stimuli.kit import read_key

    found = find_episodes(small_set)
    eps = [load_episode(r.path) for r in found.refs]  # sorted by id, as a set lists them
    keyed, _ = read_key(kit[1])
    for reader in leak_readers():
        open_scores = {ep.id: float(s.max()) for ep, s in zip(eps, reader.surprise_many(eps))}
        if reader.leak != "role":  # these read the open set perfectly; role reads object names (A = preferred)
            assert set(accuracies(found, open_scores).values()) == {1.0}, reader.leak
        _OBSERVERS[_observer_key(reader.name, None, {})] = reader
        through_score = score(reader.name, found, tmp_path / f"{reader.leak}.csv", progress=False).surprise
        through_kit = score(reader.name, find_episodes(kit[0]), tmp_path / f"kit-{reader.leak}.csv", progress=False).surprise
        for where, surprise, refs in (("score", through_score, found), ("kit", through_kit, keyed)):
            if reader.leak in ("label", "id-text", "text-size"):  # nothing left to read: every pair ties
                assert set(accuracies(refs, surprise).values()) == {0.5}, (where, reader.leak)
                continue
            # a coin flip per pair (opaque ids, shuffled order, role-free names): 6 pairs a condition are too
            # few for the band, so over all 54 pairs pooled
            pooled = [dataclasses.replace(r, condition="all") for r in refs.refs]
            res = evaluate(pooled, surprise, n_boot=500)["all"]
            assert judge_leak(res, (0.4, 0.6), 6)[0] == "ok", (where, reader.leak, res)
            assert 0.3 <= res.accuracy <= 0.7, (where, reader.leak, res)
    assert LEAKS == ("label", "id-text", "id-order", "position", "text-size", "role")


def test_audit_runs_the_leak_battery_and_the_learned_shortcut(small_set: Path) -> None:
    from bib.evaluation import ConditionResult, EpisodeSet
    from bib.observers.audit import COLUMNS, audit_json, run_audit
    from bib.observers.leaks import judge_leak

    three = ("preference", "efficiency-path", "instrumental-blocking")
    refs = [r for r in find_episodes(small_set).refs if r.condition in three]
    result = run_audit(EpisodeSet(refs), str(small_set), n_boot=50, progress=False)
    doc = audit_json(result)
    assert doc["leaks"] == ["label", "id-text", "id-order", "position", "text-size", "role"]
    for cond, row in doc["conditions"].items():
        assert set(COLUMNS) - {"single-feature", "learned-test-only"} <= set(row["shortcuts"]) <= set(COLUMNS)
        for leak in ("label", "id-text", "text-size"):
            assert row["shortcuts"][leak]["accuracy"] == 0.5 and row["shortcuts"][leak]["status"] == "ok"
        for leak in doc["leaks"]:
            cell = row["shortcuts"][leak]
            res = ConditionResult(cond, cell["accuracy"], cell["ci_low"], cell["ci_high"], cell["n_pairs"], cell["n_ties"])
            assert (cell["status"], cell["cue"]) == (judge_leak(res, (0.4, 0.6), 6 * len(three))[0], "leak")
        if "learned-test-only" in row["shortcuts"]:  # absent where every pair fell in the fit half
            assert row["shortcuts"]["learned-test-only"]["cue"] == "efficiency"
    assert list(doc["conditions"]) == list(three)


@pytest.fixture(scope="module")
def leak_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """16 pairs of two conditions (bib-eval's generators): enough for a leak of every pair to FAIL (p = 3e-5)."""
    from bib.episode import save_episode

    root = tmp_path_factory.mktemp("leakset")
    for cond in ("preference", "instrumental-no-barrier"):
        for i in range(16):
            for ep in make_unit(cond, i, 11):
                save_episode(ep, root / f"{ep.id}.json", durable=False)
    return root


def test_a_field_let_back_into_the_view_fails_the_audit_and_coins_pass(leak_set: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The leak battery can fail: let the outcome back into the blind view (as if the view forgot to pad it
    away) and the readers of the label and of the text's size FAIL every condition; the readers of the
    view's random draws (id-order, position, role) stay ok, and with the real view every leak cell is ok."""
    import bib.stimuli.blind as blind
    from bib.observers.audit import run_audit
    from bib.observers.leaks import LEAKS

    found = find_episodes(leak_set)
    honest = run_audit(found, str(leak_set), n_boot=20, progress=False)
    assert {honest.cells[c][leak].status for c in honest.cells for leak in LEAKS} == {"ok"}
    real = blind.blind_episode
    monkeypatch.setattr(blind, "blind_episode", lambda ep, secret: dataclasses.replace(real(ep, secret), outcome=ep.outcome))
    leaky = run_audit(found, str(leak_set), n_boot=20, progress=False)
    for cond, row in leaky.cells.items():
        for leak in LEAKS:
            expect = "FAIL" if leak in ("label", "text-size") else "ok"
            assert row[leak].status == expect, (cond, leak, row[leak])
        assert row["label"].result.accuracy == row["text-size"].result.accuracy == 1.0
    assert not leaky.passed


def _frames(path: Path) -> list[np.ndarray]:
    import av

    with av.open(str(path)) as container:
        return [frame.to_ndarray() for frame in container.decode(video=0)]


@pytest.mark.parametrize("codec", ["h264", "vp9"])
def test_a_kit_with_videos_and_bib_json_pads_every_file_and_leaks_nothing(tmp_path: Path, codec: str) -> None:
    """`bib blind --format bib-json` of a set with videos: every file of a folder has one size (videos padded
    with a free box / Void element that changes no decoded frame, BIB JSON with spaces), names and order are
    coins, no file names a real id or an outcome, and the key stays outside. Unpadded, the videos' sizes
    read the test path (efficiency-path), so the size reader could fail."""
    from bib.evaluation import ConditionResult
    from bib.observers.leaks import judge_leak
    from bib.render.frames import RenderSettings
    from bib.stimuli.bibjson import episode_to_bib
    from bib.stimuli.build import build
    from bib.stimuli.kit import make_kit, read_key

    src = tmp_path / "set"
    build([("preference", 6), ("efficiency-path", 6)], 7, src, video=True, settings=RenderSettings(cell_px=4, fps=5),
          codec=codec)
    make_kit(src, tmp_path / "kit", tmp_path / "key.csv", fmt="bib-json", seed=2, progress=False, allow_public=True)
    kit = tmp_path / "kit"
    assert sorted(p.name for p in kit.iterdir()) == ["bib-json", "episodes", "kit.csv", "videos"]
    keyed, _ = read_key(tmp_path / "key.csv")
    real = {r.id: r for r in find_episodes(src).refs}
    rows = list(csv_rows(tmp_path / "key.csv"))
    to_real = {r["episode_id"]: r["real_id"] for r in rows}
    suffix = {"h264": ".mp4", "vp9": ".webm"}[codec]
    for sub, ext in (("episodes", ".json"), ("videos", suffix), ("bib-json", ".json")):
        files = sorted((kit / sub).iterdir())
        assert {f.stem for f in files} == keyed.ids() and {f.suffix for f in files} == {ext}
        assert len({f.stat().st_size for f in files}) == 1, sub  # one size: a size says nothing
        for f in files:
            data = f.read_bytes()
            assert b"expected" not in data and b"-00000" not in data, f  # no outcome, no real id (cond-00000k-...)
    for f in sorted((kit / "videos").iterdir())[:3]:  # the video is the set's, byte for byte, then ignorable padding
        original = src / "videos" / f"{to_real[f.stem]}{suffix}"
        assert f.read_bytes().startswith(original.read_bytes()) and f.stat().st_size > original.stat().st_size
        padded, plain = _frames(f), _frames(original)
        assert len(padded) == len(plain) > 0 and all((a == b).all() for a, b in zip(padded, plain))
    for f in sorted((kit / "bib-json").iterdir())[:3]:
        assert json.loads(f.read_text()) == json.loads(json.dumps(episode_to_bib(loads((kit / "episodes" / f.name).read_text()))))

    def judged(scores: dict[str, float], refs) -> dict[str, float]:
        return {c: r.accuracy for c, r in evaluate(refs.refs, scores, n_boot=10).items()}

    listed = [line.split(",")[0] for line in (kit / "kit.csv").read_text().splitlines()[1:]]
    by_mtime = sorted((kit / "videos").iterdir(), key=lambda f: (f.stat().st_mtime_ns, f.name))
    readers = {
        "video size": {f.stem: float(f.stat().st_size) for f in (kit / "videos").iterdir()},
        "bib-json size": {f.stem: float(f.stat().st_size) for f in (kit / "bib-json").iterdir()},
        "name": {i: float(int(i[1:], 16) % 2) for i in listed},
        "kit.csv order": {i: float(k) for k, i in enumerate(listed)},
        "mtime order": {f.stem: float(k) for k, f in enumerate(by_mtime)},
    }
    for name, scores in readers.items():
        if name.endswith("size"):
            assert set(judged(scores, keyed).values()) == {0.5}, name  # every pair ties
            continue
        pooled = [dataclasses.replace(r, condition="all") for r in keyed.refs]
        res: ConditionResult = evaluate(pooled, scores, n_boot=10)["all"]
        assert judge_leak(res, (0.4, 0.6), len(readers))[0] == "ok", (name, res)
    # the set's own video sizes follow the test path: on efficiency-path they tell the outcome apart
    plain_size = {r.id: float((src / "videos" / f"{r.id}{suffix}").stat().st_size) for r in real.values()}
    assert judged(plain_size, find_episodes(src))["efficiency-path"] != 0.5
    assert not (kit / "key.csv").exists() and not list(kit.rglob("*key*"))


def csv_rows(key: Path) -> list[dict[str, str]]:
    import csv

    return list(csv.DictReader(key.read_text().splitlines()[1:]))


def test_a_kit_refuses_videos_it_cannot_pad_and_pads_with_what_formats_ignore() -> None:
    from bib.errors import BibInputError
    from bib.stimuli.kit import PADDING, check_paddable

    check_paddable([Path("v/a.mp4"), Path("v/b.webm")])
    with pytest.raises(BibInputError, match=r"^v/b.avi: a kit pads every video to one size, and cannot pad .avi files"):
        check_paddable([Path("v/a.mp4"), Path("v/b.avi")])
    mp4, least = PADDING[".mp4"]
    assert least == 8 and mp4(8) == b"\x00\x00\x00\x08free" and mp4(20) == b"\x00\x00\x00\x14free" + bytes(12)
    webm, least = PADDING[".webm"]
    assert least == 9 and webm(9) == b"\xec\x01" + bytes(7) and webm(300)[:9] == b"\xec\x01" + (291).to_bytes(7, "big")
    assert PADDING[".json"][0](3) == b"   " and PADDING[".json"][1] == 0


def test_a_kit_reads_each_sets_manifest_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The videos are looked up in one read of the manifest, not one per episode (a full set's manifest takes
    seconds to read: per episode that was hours)."""
    import bib.stimuli.manifest as manifest
    from bib.stimuli.build import build
    from bib.stimuli.kit import make_kit

    build([("preference", 3), ("efficiency-path", 2)], 1, tmp_path / "set")
    calls = []
    real = manifest.read_manifest
    monkeypatch.setattr(manifest, "read_manifest", lambda *a, **k: calls.append(a) or real(*a, **k))
    make_kit(tmp_path / "set", tmp_path / "kit", tmp_path / "key.csv", seed=1, progress=False, allow_public=True)
    # once to find the episodes, once for their videos: not once per episode (10 here)
    assert len(calls) == 2 and len(list((tmp_path / "kit" / "episodes").iterdir())) == 10
