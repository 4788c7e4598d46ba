"""Participant records and one-study joins without a browser (issue 40): the ``codes`` exclusion step,
its report by reason, and the refusal of sessions of other studies or trial criteria."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest
from cli_run import run_cli

from bib.analysis.exclusions import EXCLUSION_CODES, apply_exclusions
from bib.analysis.spec import Exclusions
from bib.errors import BibInputError
from bib.experiment import Criteria


def table(codes: dict[str, tuple[str, str, list[str]]]) -> pd.DataFrame:
    """Two test trials (expected, unexpected) per participant: pid -> (session_ok, session_exclusion, trial codes)."""
    rows = []
    for pid, (ok, session, trial) in codes.items():
        for n, (outcome, code) in enumerate(zip(("expected", "unexpected"), trial, strict=True), start=1):
            rows.append({"participant_id": pid, "task": "preference", "trial_num": n, "phase": "test", "outcome": outcome,
                         "looking_time_s": 5.0, "trial_error": "", "row": str(len(rows) + 2), "session_ok": ok,
                         "session_exclusion": session, "trial_exclusion": code})
    return pd.DataFrame(rows)


def test_codes_step_excludes_and_counts_by_reason() -> None:
    data = table({"p1": ("", "", ["", ""]), "p2": ("good", "", ["fussiness", ""]), "p3": ("no-good", "", ["", ""]),
                  "p4": ("", "parent_interference", ["equipment", ""]), "p5": ("", "parent_interference", ["", ""])})
    res = apply_exclusions(data, Exclusions(steps=["codes", "both_outcomes"]))
    assert sorted(set(res.kept["participant_id"])) == ["p1"]  # p2 loses its expected trial, then both_outcomes
    codes = res.excluded[res.excluded["step"] == "codes"]
    assert list(zip(codes["participant_id"], codes["reason"], strict=True)) == [
        ("p2", "trial: fussiness"), ("p3", "session marked no-good"), ("p3", "session marked no-good"),
        ("p4", "session: parent interference"), ("p4", "session: parent interference"),
        ("p5", "session: parent interference"), ("p5", "session: parent interference")]
    assert res.participants_by_reason() == [{"reason": "marked no-good", "participants": 1},
                                            {"reason": "parent interference", "participants": 2}]
    assert [s for s in res.summary() if s["step"] == "codes"] == [
        {"step": "codes", "reason": "trial: fussiness", "rows": 1}, {"step": "codes", "reason": "session marked no-good", "rows": 2},
        {"step": "codes", "reason": "session: parent interference", "rows": 4}]
    # without the columns (another lab's file) the step excludes nothing
    plain = data.drop(columns=["session_ok", "session_exclusion", "trial_exclusion"])
    assert len(apply_exclusions(plain, Exclusions(steps=["codes"])).kept) == 10


def test_an_unknown_code_is_refused_naming_the_line() -> None:
    data = table({"p1": ("", "", ["", "fussy"])})
    with pytest.raises(BibInputError) as err:
        apply_exclusions(data, Exclusions(steps=["codes"]), source="s.csv")
    assert str(err.value) == (f"s.csv: line 3: column trial_exclusion: unknown value 'fussy'; known: {', '.join(EXCLUSION_CODES)} "
                              "(docs/experiment.md, Participant records)")
    with pytest.raises(BibInputError, match=r"^s\.csv: line 2: column session_ok: unknown value 'ok'; known: good, no-good"):
        apply_exclusions(table({"p1": ("ok", "", ["", ""])}), Exclusions(), source="s.csv")


def test_criteria_digest_names_the_criteria() -> None:
    assert Criteria().digest() == Criteria().digest() and len(Criteria().digest()) == 12
    assert Criteria(lookaway=2.5).digest() != Criteria().digest()
    assert Criteria(play_through=False).digest() != Criteria().digest()


def _session(path: Path, pid: str, study_id: str = "s-1", criteria: str = "c1", first_trial: int = 1,
             looks: tuple[float, float] = (5.0, 6.0)) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["participant_id", "task", "trial_num", "phase", "outcome", "looking_time_s", "study_id", "criteria_hash"])
        for n, (outcome, look) in enumerate(zip(("expected", "unexpected"), looks, strict=True), start=first_trial):
            w.writerow([pid, "preference", n, "test", outcome, look, study_id, criteria])
    return path


def test_mixed_studies_or_criteria_are_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    for pid in ("p1", "p2", "p3"):
        _session(folder / f"x_{pid}_trials.csv", pid)
    _session(folder / "x_p4_trials.csv", "p4", criteria="c2")
    code, out, err = run_cli(capsys, "analyze", str(folder))
    assert code == 2 and out == "" and err == (
        f"bib: error: {folder}: sessions of different trial criteria (column criteria_hash: c1 in x_p1_trials.csv, "
        "x_p2_trials.csv, x_p3_trials.csv; c2 in x_p4_trials.csv); analyse each study on its own\n")
    _session(folder / "x_p4_trials.csv", "p4", study_id="s-2")
    code, _, err = run_cli(capsys, "analyze", str(folder))
    assert code == 2 and err.startswith(f"bib: error: {folder}: sessions of different studies (column study_id: s-1 in x_p1_trials.csv")
    # one hand-joined file: the lines are named
    joined = tmp_path / "joined.csv"
    text = _session(tmp_path / "a.csv", "p1").read_text() + _session(tmp_path / "b.csv", "p2", criteria="c9").read_text().split("\n", 1)[1]
    joined.write_text(text)
    code, _, err = run_cli(capsys, "analyze", str(joined))
    assert code == 2 and err == (f"bib: error: {joined}: sessions of different trial criteria (column criteria_hash: c1 on lines 2, 3; "
                                 "c9 on lines 4, 5); analyse each study on its own\n")


def test_analyze_reports_participants_per_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    folder = tmp_path / "s"
    folder.mkdir()
    for i, pid in enumerate(("p1", "p2", "p3", "p4", "p5")):
        path = _session(folder / f"x_{pid}_trials.csv", pid, looks=(4.0 + i, 6.0 + i * i / 3))
        text = path.read_text().splitlines()
        rows = [text[0] + ",order,session_ok"] + [f"{line},{i % 2 + 1 if i < 4 else 10},{'no-good' if pid == 'p2' else ''}"
                                                  for line in text[1:]]
        path.write_text("\n".join(rows) + "\n")
    code, out, err = run_cli(capsys, "analyze", str(folder), "--json")
    assert code == 0, err
    assert json.loads(out)["order_balance"] == [{"order": "1", "participants": 2, "kept": 2},
                                                {"order": "2", "participants": 2, "kept": 1},
                                                {"order": "10", "participants": 1, "kept": 1}]
    code, out, _ = run_cli(capsys, "analyze", str(folder))
    assert "participants per order (counterbalancing; after exclusions): order 1: 2 (2), order 2: 2 (1), order 10: 1 (1)" in out


HAB = Criteria(habituation=True, hab_window=3, hab_ratio=0.5, hab_max_trials=14)


@pytest.mark.parametrize(("looks", "basis", "expected"), [
    # first 3 trials 27 s: criterion 13.5 s; trial 6 ends it (6 + 4 + 3 = 13 < 13.5)
    ([10, 8, 9, 6, 4, 3], "first", (6, "criterion", 13.5)),
    ([10, 8, 9, 6, 5, 5, 4, 4, 1], "first", (8, "criterion", 13.5)),  # 14 at trial 7 is not below 13.5
    # looking rises after the first window: the first-window criterion (6 s) is never undercut...
    ([4, 4, 4, 10, 10, 10, 4, 4, 4, 2, 2, 2], "first", (None, "", 6.0)),
    # ...the sliding window follows the peak (30 s over trials 4-6: 15 s) and is met 3 trials after it
    ([4, 4, 4, 10, 10, 10, 4, 4, 4, 2, 2, 2], "sliding", (9, "criterion", 15.0)),
    # the 3 longest trials so far (4, 10, 10 by trial 6: 12 s), met at trial 9, 3 trials after the last of them
    ([4, 4, 4, 10, 2, 10, 2, 2, 2, 2], "max", (9, "criterion", 12.0)),
    ([5.0] * 14, "first", (14, "max_trials", 7.5)),
    ([5.0] * 5, "first", (None, "", 7.5)),
])
def test_habituation_end_is_pyhabs_check(looks: list[float], basis: str, expected: tuple) -> None:
    from dataclasses import replace

    from bib.stimuli.timing import habituation_end

    n, reason, crit = habituation_end(looks, replace(HAB, hab_basis=basis))
    assert (n, reason) == expected[:2] and crit == pytest.approx(expected[2], abs=1e-12)


def test_habituation_settings_are_checked() -> None:
    with pytest.raises(BibInputError, match=r"^habituation: hab_max_trials \(5\) must be at least twice hab_window \(3\)"):
        Criteria(habituation=True, hab_max_trials=5)
    with pytest.raises(BibInputError, match=r"^trial timing: hab_ratio = 1.5 is outside \[0.05, 0.95\]$"):
        Criteria(hab_ratio=1.5)
    with pytest.raises(BibInputError, match=r"^habituation: hab_basis = 'peak': expected first, sliding, max"):
        Criteria(hab_basis="peak")
    assert Criteria(habituation=True).digest() != Criteria().digest() != Criteria(hab_window=4).digest()
