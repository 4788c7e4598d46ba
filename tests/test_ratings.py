"""Adult surprise ratings (issue 43 item 4): the raters' plans, the session reader's refusals, and
`bib compare --ratings`'s numbers checked against SciPy and against independent loops."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_run import run_cli
from compare_inputs import write_compare_inputs
from scipy import stats

from bib.analysis import ratings as rt
from bib.analysis.compare import read_episode_index
from bib.errors import BibInputError


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 30-pair manifest set, a model's results, and 12 synthetic raters' sessions of it."""
    root = tmp_path_factory.mktemp("ratings")
    write_compare_inputs(root / "set", root / "model.csv", unexpected_shift=1.0)
    index = read_episode_index(root / "set")
    (root / "sessions").mkdir()
    for name, rows in rt.simulate_ratings(index, 12, 5, "cmp").items():
        rows.to_csv(root / "sessions" / name, index=False, lineterminator="\n")
    return {"set": root / "set", "model": root / "model.csv", "sessions": root / "sessions", "root": root}


def test_rating_plan_is_aGENTs_between_rater_design() -> None:
    """Each rater sees every pair once, half of them (rounded down) unexpected; the raters of a couple see
    complementary outcomes; the same seed and rater give the same plan, another rater another order."""
    for n in (1, 2, 7, 30):
        for couple in range(4):
            a, b = rt.rating_plan(n, 2 * couple + 1, 9), rt.rating_plan(n, 2 * couple + 2, 9)
            assert sorted(p for p, _ in a) == list(range(n)) == sorted(p for p, _ in b)
            assert sum(u for _, u in a) == n // 2
            assert dict(a) == {p: 1 - u for p, u in b}
    assert rt.rating_plan(30, 3, 9) == rt.rating_plan(30, 3, 9)
    assert [p for p, _ in rt.rating_plan(30, 3, 9)] != [p for p, _ in rt.rating_plan(30, 4, 9)]
    assert rt.rating_plan(30, 3, 9) != rt.rating_plan(30, 3, 10)
    with pytest.raises(BibInputError, match="rater number 0"):
        rt.rating_plan(3, 0, 1)


def test_agreement_numbers_equal_scipy_and_independent_loops(inputs: dict[str, Path]) -> None:
    index = read_episode_index(inputs["set"])
    table = rt.read_ratings(inputs["sessions"], index)
    model = pd.read_csv(inputs["model"]).set_index("episode_id")["surprise"].to_dict()
    seed, n_boot, n_splits = 11, 300, 40
    got = rt.agreement(table, index, {"m": model}, n_boot=n_boot, n_splits=n_splits, seed=seed)
    means = table.groupby("episode_id")["rating"].mean()
    x = np.array([model[e] for e in means.index])
    y = means.to_numpy()
    m = got["models"]["m"]
    assert m["n_trials"] == 60 and got["n_raters"] == 12 and got["n_ratings"] == 12 * 30
    assert m["pearson"] == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
    assert m["spearman"] == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)
    # the documented draws, redone here: the splits first, then Pearson's and Spearman's resamples
    rng = np.random.default_rng(seed)
    raters = np.array(sorted(table["participant_id"].unique()))
    by_episode: dict[str, list[tuple[str, float]]] = {e: [] for e in means.index}
    for who, e, v in zip(table["participant_id"], table["episode_id"], table["rating"]):
        by_episode[e].append((who, v))
    sb = []
    for _ in range(n_splits):
        half = set(rng.permutation(raters)[:6])
        a = {e: [v for who, v in by_episode[e] if who in half] for e in means.index}
        b = {e: [v for who, v in by_episode[e] if who not in half] for e in means.index}
        both = [e for e in means.index if a[e] and b[e]]  # episodes rated in both halves
        r = stats.pearsonr([np.mean(a[e]) for e in both], [np.mean(b[e]) for e in both])[0]
        sb.append(2 * r / (1 + r))
    assert got["reliability"]["spearman_brown"] == pytest.approx(np.mean(sb), abs=1e-12)
    for key, fn in (("pearson_ci", lambda i: stats.pearsonr(x[i], y[i])[0]), ("spearman_ci", lambda i: stats.spearmanr(x[i], y[i])[0])):
        values = [fn(i) for i in rng.integers(0, len(x), size=(n_boot, len(x)))]
        assert m[key] == pytest.approx(list(np.quantile(values, [0.025, 0.975])), abs=1e-12)
    # pairwise accuracy: the model's and the mean ratings', pair by pair
    manifest = pd.read_csv(inputs["set"] / "manifest.csv")
    wide = manifest.pivot(index="pair_id", columns="outcome", values="episode_id")
    assert m["pair_accuracy"] == pytest.approx(np.mean([model[u] > model[e] for e, u in zip(wide["expected"], wide["unexpected"])]))
    assert got["humans"]["mean_rating_accuracy"] == pytest.approx(
        np.mean([(means[u] > means[e]) + 0.5 * (means[u] == means[e]) for e, u in zip(wide["expected"], wide["unexpected"])]))
    # the same seed gives the same report; another seed other CIs but the same point estimates
    assert rt.agreement(table, index, {"m": model}, n_boot=n_boot, n_splits=n_splits, seed=seed) == got
    other = rt.agreement(table, index, {"m": model}, n_boot=n_boot, n_splits=n_splits, seed=seed + 1)
    assert other["models"]["m"]["pearson"] == m["pearson"] and other["models"]["m"]["pearson_ci"] != m["pearson_ci"]


def test_single_rater_accuracy_by_hand() -> None:
    """AGENT's single-rater metric on a worked case: z-scores per rater, then every (unexpected, expected) pair."""
    ratings = pd.DataFrame({
        "participant_id": ["a", "a", "b", "b", "c", "c"],
        "pair_id": ["p", "q", "p", "q", "p", "q"],
        "outcome": ["unexpected", "expected", "expected", "unexpected", "expected", "unexpected"],
        "rating": [80.0, 20.0, 10.0, 10.0, 60.0, 40.0],
    })
    # z: a -> p +1, q -1; b constant -> 0, 0; c -> p +1, q -1
    # pair p: unexpected {a: +1} vs expected {b: 0, c: +1} -> (1 + 0.5) / 2; pair q: {b: 0, c: -1} vs {a: -1} -> (1 + 0.5) / 2
    acc, n = rt.rater_accuracy(ratings)
    assert (acc, n) == (0.75, 2)


def test_split_half_reliability_of_identical_halves_is_one_and_spearman_brown_formula() -> None:
    eps = [f"e{i}" for i in range(5)]
    table = pd.DataFrame({"participant_id": np.repeat(["a", "b", "c", "d"], 5), "episode_id": eps * 4,
                          "rating": np.tile([10.0, 30.0, 20.0, 90.0, 50.0], 4)})
    rel = rt.split_half(table, 10, np.random.default_rng(0))
    assert rel["r_half"] == pytest.approx(1.0) and rel["spearman_brown"] == pytest.approx(1.0)
    table.loc[table["participant_id"].isin(["c", "d"]), "rating"] = np.tile([10.0, 30.0, 50.0, 20.0, 90.0], 2)
    rel = rt.split_half(table, 30, np.random.default_rng(1))
    assert -1 < rel["r_half"] < 1 and rel["ci_low"] <= rel["spearman_brown"] <= rel["ci_high"]


def _write(folder: Path, name: str, rows: pd.DataFrame) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rows.to_csv(folder / name, index=False, lineterminator="\n")


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.assign(rating=d["rating"].where(d.index != 2, 101)), r"r01_ratings.csv:4: column rating: '101' is not a number from 0 to 100"),
    (lambda d: d.assign(rating=d["rating"].astype(str).where(d.index != 0, "high")), r"r01_ratings.csv:2: column rating: 'high'"),
    (lambda d: d.assign(episode_id=d["episode_id"].where(d.index != 1, "nope")), r"r01_ratings.csv:3: column episode_id: 'nope' is not in the episode set"),
    (lambda d: pd.concat([d, d.iloc[[0]]], ignore_index=True), r"rated episode .* twice"),
    (lambda d: d.assign(outcome=d["outcome"].where(d.index != 0, "unexpected" if d["outcome"].iloc[0] == "expected" else "expected")),
     r"r01_ratings.csv:2: column outcome: .* but the set's episode"),
    (lambda d: d.assign(study_id=d["study_id"].where(d.index != 3, "other-123")), r"sessions of different studies \(column study_id"),
])
def test_bad_sessions_are_refused_naming_the_file_and_line(inputs: dict[str, Path], tmp_path: Path, change, message: str) -> None:  # noqa: ANN001
    index = read_episode_index(inputs["set"])
    first = sorted(inputs["sessions"].glob("*_ratings.csv"))[0]
    rows = pd.read_csv(first, dtype={"session_date": str}, keep_default_na=False)
    _write(tmp_path / "s", first.name, change(rows))
    with pytest.raises(BibInputError, match=message):
        rt.read_ratings(tmp_path / "s", index)


def test_a_folder_mixing_studies_or_protocols_is_refused(inputs: dict[str, Path], tmp_path: Path) -> None:
    index = read_episode_index(inputs["set"])
    files = sorted(inputs["sessions"].glob("*_ratings.csv"))
    for col, what in (("study_id", "studies"), ("criteria_hash", "trial criteria")):
        folder = tmp_path / col
        folder.mkdir()
        shutil.copy(files[0], folder / files[0].name)
        rows = pd.read_csv(files[1], dtype=str, keep_default_na=False)
        _write(folder, files[1].name, rows.assign(**{col: "x" + rows[col]}))
        with pytest.raises(BibInputError, match=f"sessions of different {what} .*{files[0].name}.*{files[1].name}"):
            rt.read_ratings(folder, index)
    # one rater in two files
    folder = tmp_path / "twice"
    folder.mkdir()
    shutil.copy(files[0], folder / files[0].name)
    rows = pd.read_csv(files[1], dtype=str, keep_default_na=False)
    _write(folder, files[1].name, rows.assign(participant_id=pd.read_csv(files[0], dtype=str)["participant_id"].iloc[0]))
    with pytest.raises(BibInputError, match=f"{files[1].name}: participant r01 is also in .*{files[0].name}"):
        rt.read_ratings(folder, index)
    # a looking-time session among the rating sessions: one header per folder
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(files[0], folder / files[0].name)
    (folder / "x_p1_ratings.csv").write_text("participant_id,task,looking_time_s\np1,preference,3\n")
    with pytest.raises(BibInputError, match="the header differs"):
        rt.read_ratings(folder, index)
    (tmp_path / "empty").mkdir()
    with pytest.raises(BibInputError, match=r"empty: no rating sessions \(\*_ratings.csv\) in the folder"):
        rt.read_ratings(tmp_path / "empty", index)


def test_bib_compare_ratings_cli(inputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "compare", str(inputs["set"]), str(inputs["model"]), "--ratings", str(inputs["sessions"]),
                              "--boot", "200", "--splits", "20", "--seed", "3", "--json")
    assert code == 0, err
    doc = json.loads(out)
    index = read_episode_index(inputs["set"])
    model = pd.read_csv(inputs["model"]).set_index("episode_id")["surprise"].to_dict()
    expected = rt.agreement(rt.read_ratings(inputs["sessions"], index), index, {"model": model}, n_boot=200, n_splits=20, seed=3)
    assert doc["models"]["model"]["pearson"] == pytest.approx(expected["models"]["model"]["pearson"])
    assert doc["models"]["model"]["pearson_ci"] == pytest.approx(expected["models"]["model"]["pearson_ci"])
    assert doc["reliability"]["spearman_brown"] == pytest.approx(expected["reliability"]["spearman_brown"])
    code, out, err = run_cli(capsys, "compare", str(inputs["set"]), str(inputs["model"]), "--ratings", str(inputs["sessions"]),
                              "--boot", "200", "--splits", "20", "--out", str(tmp_path / "o"))
    assert code == 0, err
    assert "split-half reliability" in out and (tmp_path / "o" / "ratings.json").is_file()
    assert doc["synthetic"] is True and out.startswith("**SYNTHETIC ratings**")
    assert (tmp_path / "o" / "ratings.md").read_text().rstrip("\n") == out.rstrip("\n")
    code, _, err = run_cli(capsys, "compare", str(inputs["set"]), "--ratings", str(inputs["sessions"]))
    assert code == 2 and "give EPISODES RESULTS... with --ratings (1 path given)" in err
    code, _, err = run_cli(capsys, "compare", str(inputs["set"]), str(inputs["model"]), "--ratings", str(inputs["sessions"]), "--scale", "raw")
    assert code == 2 and "--format, --spec and --scale read infant data" in err


def test_simulated_sessions_are_labelled_and_join(inputs: dict[str, Path]) -> None:
    files = sorted(inputs["sessions"].glob("*_ratings.csv"))
    assert [f.name for f in files] == [f"cmp_r{r:02d}_ratings.csv" for r in range(1, 13)]
    rows = pd.concat([pd.read_csv(f, dtype=str, keep_default_na=False) for f in files])
    assert list(rows.columns) == list(rt.RATING_COLUMNS)
    assert set(rows["synthetic"]) == {"true"} and rows["study_id"].nunique() == 1 and rows["criteria_hash"].nunique() == 1
    # every pair's two outcomes rated 6 times each (6 couples of complementary raters)
    assert set(rows.groupby("episode_id").size()) == {6}


def test_shipped_example_is_the_documented_command_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """data/ratings/example/ is `bib simulate-ratings` of the infant-pilot set, byte for byte."""
    from bib.resources import resource_dir

    shipped = resource_dir("ratings/example")
    toml = str(Path(__file__).resolve().parents[1] / "stimuli" / "infant-pilot.toml")
    code, _, err = run_cli(capsys, "generate", toml, "--out", str(tmp_path / "set"), "--no-video")
    assert code == 0, err
    code, _, err = run_cli(capsys, "simulate-ratings", str(tmp_path / "set"), "--raters", "20", "--seed", "2021", "--name", "infant-pilot",
                            "--out", str(tmp_path / "r"))
    assert code == 0, err
    made = sorted(p.name for p in (tmp_path / "r").glob("*_ratings.csv"))
    assert made == sorted(p.name for p in shipped.glob("*_ratings.csv")) and len(made) == 20
    for name in made:
        assert (tmp_path / "r" / name).read_bytes() == (shipped / name).read_bytes(), name


def test_bib_experiment_ratings_refuses_bad_input(inputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "experiment", str(inputs["set"]), "--ratings", "--out", str(tmp_path / "s"))
    assert code == 2 and "the set has no presentation orders" in err and not (tmp_path / "s").exists()
    code, _, err = run_cli(capsys, "experiment", str(inputs["set"]), "--ratings", "--lookaway", "3", "--out", str(tmp_path / "s"))
    assert code == 2 and "--ratings: the looking-time options" in err and not (tmp_path / "s").exists()
