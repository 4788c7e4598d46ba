"""Pilot summaries, power simulation (worker-independent seeding) and the committed synthetic example data."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from bib.analysis import power as power_mod
from bib.analysis.analyze import analyze
from bib.analysis.example import simulate_example
from bib.analysis.importers import read_looking_times
from bib.analysis.pilot import load_pilot, pilot_task
from bib.analysis.power import parse_effect, parse_ns, simulate_studies, summarize_power
from bib.analysis.spec import load_spec
from bib.errors import BibInputError
from bib.resources import resource

EXAMPLE = resource("looking_times/example.csv")
SPEC = resource("analysis/infant-pilot.toml")


def test_published_numbers() -> None:
    pilots = load_pilot()
    pref, eff = pilots["preference"], pilots["efficiency-path"]
    assert (pref.n, pref.beta, pref.p, pref.mean_expected, pref.mean_unexpected) == (24, 3.24, 0.040, 5.26, 8.50)
    assert (eff.n, eff.beta, eff.p, eff.mean_expected, eff.mean_unexpected) == (24, 4.50, 0.016, 7.96, 12.47)
    # beta is the difference of the published means (seconds), up to rounding.
    for p in pilots.values():
        assert p.mean_unexpected - p.mean_expected == pytest.approx(p.beta, abs=0.011)
    # SE of beta from p on t(23): t(0.98, 23) = 2.1770.
    assert pref.se_beta == pytest.approx(3.24 / 2.1770, rel=1e-3)


@pytest.mark.parametrize("task", ["preference", "efficiency-path"])
def test_log_normal_model_reproduces_the_summaries(task: str) -> None:
    p = pilot_task(task)
    x = p.draw(np.random.default_rng(0), 200_000)
    assert x.mean(axis=0) == pytest.approx([p.mean_expected, p.mean_unexpected], rel=0.02)
    assert x.std(axis=0) == pytest.approx([p.sd_expected, p.sd_unexpected], rel=0.04)
    assert np.corrcoef(x.T)[0, 1] == pytest.approx(p.rho, abs=0.02)
    # SD of the paired differences implied by beta's p: the study's t statistic is recovered.
    assert (x[:, 1] - x[:, 0]).std() == pytest.approx(p.se_beta * math.sqrt(p.n), rel=0.04)
    # A hypothetical effect of 0 s is an exact null: identical log means.
    mean, cov = p.log_model(0.0)
    assert mean[0] == mean[1] and cov[0, 0] == cov[1, 1]


def test_results_do_not_depend_on_workers_chunking_or_n_order(monkeypatch: pytest.MonkeyPatch) -> None:
    p = pilot_task("preference")
    one = simulate_studies(p, [8, 12], 3, seed=3, workers=1)
    monkeypatch.setattr(power_mod, "CHUNK", 2)
    two = simulate_studies(p, [12, 8], 3, seed=3, workers=2)
    key = ["n", "sim"]
    a = one.sort_values(key).reset_index(drop=True)
    b = two.sort_values(key).reset_index(drop=True)
    assert a.equals(b)
    assert len(a) == 6 and a["estimate"].nunique() == 6
    other = simulate_studies(p, [8], 3, seed=4)
    assert not np.allclose(other["estimate"], a.loc[a["n"] == 8, "estimate"])


@pytest.mark.slow
def test_null_effect_rejects_at_about_alpha() -> None:
    p = pilot_task("preference")
    null = summarize_power(simulate_studies(p, [24], 200, seed=0, effect_s=0.0), 0.05)[0]
    # Wald z on N = 24 rejects ~6% under the null (z ignores the df); 0.12 is 3.6 MC SDs above.
    assert 0.01 <= null["power"] <= 0.12
    assert null["mc_se"] == pytest.approx(math.sqrt(null["power"] * (1 - null["power"]) / 200))


def test_simulated_studies_carry_the_pilot_effect_or_none() -> None:
    p = pilot_task("preference")
    mean, _ = p.log_model()
    est = simulate_studies(p, [24], 25, seed=1)["estimate"]
    assert est.mean() == pytest.approx(mean[1] - mean[0], abs=0.12)  # ~0.40 log s; MC SE ~0.035
    null = summarize_power(simulate_studies(p, [24], 25, seed=2, effect_s=0.0), 0.05)[0]
    assert abs(null["mean_estimate"]) < 0.12
    assert null["sims"] == 25 and null["power"] <= 0.2


def test_parse_effect_and_ns() -> None:
    assert parse_effect("pilot") is None and parse_effect("FROM_PILOT") is None and parse_effect("2.5") == 2.5
    assert parse_ns("16, 24,32") == [16, 24, 32]
    with pytest.raises(BibInputError, match=r"--effect: expected 'pilot' or a number of seconds, got 'big'"):
        parse_effect("big")
    with pytest.raises(BibInputError, match=r"--n: expected comma-separated integers"):
        parse_ns("16;24")
    with pytest.raises(BibInputError, match=r"--task banana: no published pilot summaries \(available: preference, efficiency-path\)"):
        pilot_task("banana")
    with pytest.raises(BibInputError, match=r"--n: sample sizes must be >= 3, got 2"):
        simulate_studies(pilot_task("preference"), [2], 1, seed=0)


def test_committed_example_is_what_the_command_writes() -> None:
    df = simulate_example(load_pilot(), 2022)
    assert df.to_csv(index=False, lineterminator="\n") == EXAMPLE.read_text()
    assert set(df["synthetic"]) == {"true"}
    assert df["participant_id"].nunique() == 28


def test_example_reproduces_the_pilot_direction_and_size() -> None:
    spec = load_spec(SPEC)
    pilots = load_pilot()
    log = analyze(read_looking_times(EXAMPLE, spec=spec), spec).report
    raw = analyze(read_looking_times(EXAMPLE, spec=spec), spec, scale="raw").report
    for task, pilot in pilots.items():
        lr, rr = log["tasks"][task], raw["tasks"][task]
        assert lr["n_participants"] == pilot.n and lr["n_excluded"] == 1
        mean, _ = pilot.log_model()
        assert lr["estimate"] == pytest.approx(mean[1] - mean[0], abs=0.01)  # moment-matched, 2-decimal rounding
        assert lr["estimate"] > 0 and lr["p"] < 0.05
        assert 0.5 * pilot.beta < rr["estimate"] < 1.5 * pilot.beta and rr["p"] < 0.05


def test_example_file_has_its_own_flag_column(tmp_path: Path) -> None:
    header = EXAMPLE.read_text().splitlines()[0].split(",")
    assert header[-1] == "synthetic"


def test_a_studys_numbers_do_not_depend_on_how_many_are_simulated() -> None:
    """Blocks of BLOCK studies share a generator: the first studies of a longer run are the shorter run's, across
    a block boundary too, and each equals the bare closed form of its block's draws."""
    p = pilot_task("preference")
    short = simulate_studies(p, [10], power_mod.BLOCK + 5, seed=9)
    long = simulate_studies(p, [10], 2 * power_mod.BLOCK + 3, seed=9)
    assert short.equals(long.iloc[: len(short)])
    y = power_mod.draw_block(p, 10, 2, None, 9, 1, "log")  # the first two studies of block 1
    cf = power_mod.paired_closed_form(y)
    assert long["estimate"].iloc[power_mod.BLOCK: power_mod.BLOCK + 2].tolist() == cf["estimate"].tolist()
    assert list(long["sim"]) == list(range(2 * power_mod.BLOCK + 3))
