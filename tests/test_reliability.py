"""``bib reliability``: two coders' trials files, checked against R (issue 30, item 4).

The fixtures (two coders of 3 sessions x 20 trials, and R's statistics of them: psych::ICC, a
two-way aov, cor.test) are made by ``Rscript tests/fixtures/reliability/make_expected.R``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from cli_run import run_cli as _run

from bib.analysis.reliability import reliability

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "reliability"
A, B = FIXTURES / "coder_a.csv", FIXTURES / "coder_b.csv"


def _expected() -> dict[str, float]:
    with (FIXTURES / "expected.csv").open(newline="", encoding="utf-8") as fh:
        return {r["statistic"]: float(r["value"]) for r in csv.DictReader(fh)}


def test_statistics_equal_r_within_1e8() -> None:
    want = _expected()
    s = reliability(A, B).summary
    assert s["n_trials"] == 60 and s["n_participants"] == 3
    for name in ("icc2_1", "icc3_1", "pearson_r", "pearson_p", "mean_abs_diff_s"):
        assert abs(s[name] - want[name]) <= 1e-8, (name, s[name], want[name])
    assert abs(s["icc2_1"] - want["icc2_1_aov"]) <= 1e-8 and abs(s["icc3_1"] - want["icc3_1_aov"]) <= 1e-8
    assert s["n_agree"] == want["n_agree"] and s["agreement"] == pytest.approx(want["n_agree"] / 60, abs=1e-12)


def test_swapping_the_coders_keeps_the_statistics() -> None:
    ab, ba = reliability(A, B).summary, reliability(B, A).summary
    for name in ("icc2_1", "icc3_1", "pearson_r", "n_agree", "mean_abs_diff_s"):
        assert ab[name] == pytest.approx(ba[name], abs=1e-12)


def test_cli_lists_the_trials_differing_by_more_than_the_threshold(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = _run(capsys, "reliability", str(A), str(B), "--json", "--out", str(tmp_path / "r"))
    assert code == 0
    doc = json.loads(out)
    far = [(t["participant_id"], t["trial_num"]) for t in doc["trials"] if not t["agree"]]
    assert ("p01", "7") in far and ("p02", "13") in far  # the two trials the fixture puts far off
    assert all(abs(t["diff"]) > 1.0 for t in doc["trials"] if not t["agree"])
    assert json.loads((tmp_path / "r" / "reliability.json").read_text()) == doc
    code, out, _ = _run(capsys, "reliability", str(A), str(B), "--threshold", "2.0")
    assert code == 0 and "trials differing by more than 2 s:" in out
    listed = [line.split() for line in out.splitlines() if line.startswith("  p0")]
    assert {(w[0], w[1]) for w in listed} == {(t["participant_id"], t["trial_num"]) for t in doc["trials"] if abs(t["diff"]) > 2.0}
    assert "ICC(2,1), two-way random, absolute agreement, single coder: " in out


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_coder_files_of_different_sessions_one_line_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rows = _rows(B)
    other = _write(tmp_path / "other.csv", [{**r, "participant_id": "p09"} if r["participant_id"] == "p03" else r for r in rows])
    code, out, err = _run(capsys, "reliability", str(A), str(other))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"bib: error: {other}: coder files of different sessions: participant p09 is in other.csv only")
    fewer = _write(tmp_path / "fewer.csv", [r for r in rows if not (r["participant_id"] == "p02" and r["trial_num"] == "5")])
    code, _, err = _run(capsys, "reliability", str(A), str(fewer))
    assert code == 2 and err == (f"bib: error: {A}: line 26: trial 5 of p02 is not in the other coder's file: "
                                 "coder files of different sessions\n")
    swapped = _write(tmp_path / "swapped.csv", [{**r, "episode_id": "efficiency-path-000000-expected"} if r["trial_num"] == "3"
                                                else r for r in rows])
    code, _, err = _run(capsys, "reliability", str(A), str(swapped))
    assert code == 2 and err.startswith(f"bib: error: {swapped}: line 4: episode_id 'efficiency-path-000000-expected', but "
                                        f"'preference-000000-unexpected' in {A} (line 4): coder files of different sessions")
    bare = _write(tmp_path / "bare.csv", [{"participant_id": r["participant_id"], "trial_num": r["trial_num"]} for r in rows])
    code, _, err = _run(capsys, "reliability", str(A), str(bare))
    assert code == 2 and err == f"bib: error: {bare}: missing column looking_time_s (a trials CSV of bib experiment)\n"


def _expected_ci() -> dict[str, float]:
    with (FIXTURES / "expected_ci.csv").open(newline="", encoding="utf-8") as fh:
        return {r["statistic"]: float(r["value"]) for r in csv.DictReader(fh)}


CI_NAMES = ("icc2_1", "icc2_1_low", "icc2_1_high", "icc3_1", "icc3_1_low", "icc3_1_high")


def test_icc_confidence_intervals_equal_psych_and_r() -> None:
    """psych::ICC's F-based intervals: its documented Shrout & Fleiss (1979) example (6 targets x 4
    judges: ICC2 .29 [.019, .761], ICC3 .71 [.342, .946]) and, on the fixture, the formulas in base R
    (aov's mean squares, R's qf) within 1e-8."""
    from bib.analysis.reliability import icc

    sf = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
    got = icc(sf)
    assert [round(got[n], 3) for n in CI_NAMES] == [0.290, 0.019, 0.761, 0.715, 0.342, 0.946]
    want, s = _expected_ci(), reliability(A, B).summary
    for name in CI_NAMES:
        assert abs(s[name] - want[name]) <= 1e-8, (name, s[name], want[name])
    assert s["icc2_1_low"] < s["icc2_1"] < s["icc2_1_high"] and s["icc3_1_low"] < s["icc3_1"] < s["icc3_1_high"]


def test_phase_test_keeps_the_test_trials(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    phased = []
    for src in (A, B):
        rows = [{**r, "phase": "test" if int(r["trial_num"]) % 2 else "familiarization"} for r in _rows(src)]
        phased.append(_write(tmp_path / src.name, rows))
    want = _expected_ci()
    result = reliability(*phased, phase="test")
    assert result.summary["n_trials"] == 30 and set(result.trials["trial_num"].astype(int) % 2) == {1}
    for name in CI_NAMES:
        assert abs(result.summary[name] - want[f"odd_{name}"]) <= 1e-8, name
    code, out, _ = _run(capsys, "reliability", str(phased[0]), str(phased[1]), "--phase", "test")
    assert code == 0 and "30 test trials of 3 participant(s)" in out
    assert f"ICC(2,1), two-way random, absolute agreement, single coder: {want['odd_icc2_1']:.3f} (95% CI " in out
    code, _, err = _run(capsys, "reliability", str(A), str(B), "--phase", "test")
    assert code == 2 and err == f"bib: error: {A}: no phase column: --phase needs the trials CSV of bib experiment\n"
    code, _, err = _run(capsys, "reliability", str(phased[0]), str(phased[1]), "--phase", "tset")
    assert code == 2 and err == "bib: error: --phase tset: expected familiarization or test\n"


def test_the_same_file_twice_is_flagged(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = _run(capsys, "reliability", str(A), str(A), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["icc2_1"] == pytest.approx(1.0) and doc["warnings"] == [
        f"{A} and {A} have the same bytes: the same file given twice? (agreement of a file with itself is 1)"]
    copy = _write(tmp_path / "copy.csv", [{**r, "study": r["study"]} for r in _rows(A)][::-1])  # other bytes, same looks
    code, out, _ = _run(capsys, "reliability", str(A), str(copy))
    assert code == 0 and out.splitlines()[0] == (f"warning: {copy}: every looking time equals coder_a.csv's to the millisecond: "
                                                 "a copy of the first coder's file?")
    assert json.loads(_run(capsys, "reliability", str(A), str(B), "--json")[1])["warnings"] == []
