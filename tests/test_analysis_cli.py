"""The analysis commands end to end: bib analyze, bib compare, bib power (in-process, through bib.cli.main)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run_cli as _run
from compare_inputs import write_compare_inputs

from bib.resources import resource

EXAMPLE = resource("looking_times/example.csv")
SPEC = resource("analysis/infant-pilot.toml")


def test_analyze_json_shape_and_plots(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = _run(capsys, "analyze", str(EXAMPLE), "--spec", str(SPEC), "--json", "--out", str(tmp_path / "a"))
    assert code == 0
    report = json.loads(out)
    assert set(report["tasks"]) == {"preference", "efficiency-path"}
    for r in report["tasks"].values():
        assert {"estimate", "ci_low", "ci_high", "p", "n_participants", "n_excluded", "warnings"} <= set(r)
        assert r["ci_low"] < r["estimate"] < r["ci_high"]
    assert report["scale"] == "log seconds"
    reasons = [e["reason"] for e in report["exclusions"]["excluded"]]
    assert "trial error: fussiness" in reasons and "look shorter than 1 s" in reasons
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == ["exclusions.csv", "paired-efficiency-path.png", "paired-efficiency-path.svg", "paired-preference.png",
                     "paired-preference.svg", "provenance.json", "report.json", "report.md",
                     "residuals-efficiency-path.png", "residuals-efficiency-path.svg", "residuals-preference.png",
                     "residuals-preference.svg"]
    assert (tmp_path / "a" / "paired-preference.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_analyze_text_lists_exclusions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "analyze", str(EXAMPLE), "--spec", str(SPEC), "--scale", "raw")
    assert code == 0
    assert "on seconds" in out and "preference" in out
    # Exclusions are summarised by reason (counts); the full list goes to exclusions.csv / --json.
    assert "     1  min_look: look shorter than 1 s" in out
    assert "48 trials (no item ids in the data: items not modelled)" in out and "0 items" not in out
    assert "s28" not in out


def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(EXAMPLE.read_text().replace(",test,expected,", ",test,expected,x", 1))
    code, out, err = _run(capsys, "analyze", str(bad))
    assert code == 2 and out == ""
    assert err.startswith(f"bib: error: {bad}: column looking_time_s: non-numeric looking time (line ") and err.count("\n") == 1
    code, _, err = _run(capsys, "analyze", str(EXAMPLE), "--scale", "sqrt")
    assert code == 2 and err.startswith("bib: error: Invalid value for '--scale': 'sqrt' is not one of 'log', 'raw'.")
    assert err.count("\n") == 1


def test_compare_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    episodes = tmp_path / "set"
    write_compare_inputs(episodes, tmp_path / "backwards.csv", expected_shift=2.0)
    argv = ["compare", str(EXAMPLE), str(episodes), str(tmp_path / "backwards.csv"), "--spec", str(SPEC)]
    code, out, _ = _run(capsys, *argv, "--json", "--out", str(tmp_path / "plots"))
    assert code == 0
    result = json.loads(out)
    for task in ("preference", "efficiency-path"):
        diff = result["tasks"][task]["differences"]["backwards"]
        assert diff["estimate"] < 0 and diff["differs"] is True
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["compare.csv", "compare.json", "forest.png", "forest.svg",
                                                                      "provenance.json"]
    assert json.loads((tmp_path / "plots" / "compare.json").read_text()) == result
    code, out, _ = _run(capsys, *argv)
    assert code == 0 and "backwards" in out and "yes" in out
    run = tmp_path / "backwards"  # a `bib score` folder is named by the folder
    run.mkdir()
    (run / "results.csv").write_text((tmp_path / "backwards.csv").read_text())
    code, out, _ = _run(capsys, "compare", str(EXAMPLE), str(episodes), str(run), "--spec", str(SPEC), "--json")
    assert code == 0 and json.loads(out)["tasks"] == result["tasks"]
    code, _, err = _run(capsys, *argv[:4], str(run), "--spec", str(SPEC))
    assert code == 2 and "model names (folder names or file stems) must be unique and not 'infants': backwards" in err


def test_power_command(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    code2, out2, _ = _run(capsys, "power", "--task", "efficiency-path", "--n", "10", "--n", "12", "--sims", "3", "--json")
    assert code2 == 0 and [r["n"] for r in json.loads(out2)["power"]] == [10, 12]
    code2, _, err = _run(capsys, "power", "--task", "efficiency-path", "--alpha", "1.5")
    assert code2 == 2 and "'--alpha': 1.5 is not in the open interval (0, 1)" in err
    code, out, _ = _run(capsys, "power", "--task", "efficiency-path", "--n", "10", "--sims", "3", "--json")
    assert code == 0
    result = json.loads(out)
    assert result["effect_s"] == 4.5 and [r["n"] for r in result["power"]] == [10]
    assert result["power"][0]["sims"] == 3
    code, _, err = _run(capsys, "power", "--n", "10")
    assert code == 2 and "--task is required" in err


def test_power_simulate_writes_the_example(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "lt"
    code, text, _ = _run(capsys, "power", "simulate", "--out", str(out))
    assert code == 0 and "28 synthetic infants" in text
    assert (out / "looking_times.csv").read_text() == EXAMPLE.read_text()
    code, _, err = _run(capsys, "power", "simulate")  # no default: committed data is never a default output
    assert code == 2 and "Missing option '--out'" in err
