"""A lab's study in headless Chromium (issue 40): a blind experimenter's window, participant records
(age from dates, exclusion codes, notes, good/no-good, consent asked per session) and sessions that
cannot join another study's or other criteria's.

The page clock is driven by hand (``?clock=manual``) as in ``test_browser_experiment.py``, whose
helpers this file uses.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import time
from pathlib import Path

import pytest
from cli_run import run_cli
from test_browser_experiment import (
    FAKE_WEBCAM,
    OLD_RULE,
    TIMED,
    key,
    open_study,
    rows_of,
    run_trial,
    schedule_for,
    set_clock,
    start,
    wait_file,
)

from bib.experiment import Criteria
from bib.report import browser

pytestmark = pytest.mark.skipif(browser.missing() is not None, reason=f"no browser: {browser.missing()}")


@pytest.fixture(scope="module")
def studies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny set's study under PyHab's plain rule, and the same set's study under the timed rule."""
    from browser_sets import tiny_set

    from bib.experiment import build_experiment

    root, folder = tiny_set(tmp_path_factory), tmp_path_factory.mktemp("lab")
    build_experiment(root, folder / "plain", OLD_RULE, command="bib experiment tiny --out plain")
    build_experiment(root, folder / "timed", TIMED, command="bib experiment tiny --out timed")
    return {"plain": folder / "plain", "timed": folder / "timed"}


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    downloads = tmp_path_factory.mktemp("lab-downloads")
    with browser.chromium(1000, 900, downloads=downloads, flags=FAKE_WEBCAM) as d:
        d.downloads = downloads  # type: ignore[attr-defined]
        yield d


def study_of(folder: Path) -> dict:
    text = (folder / "study.js").read_text(encoding="utf-8")
    return json.loads(text.split("=", 1)[1].rstrip().rstrip(";"))


def window_text(driver) -> str:  # noqa: ANN001
    return driver.execute_script("return document.body.innerText")


def forbidden(study: dict) -> set[str]:
    """What must never be shown to the experimenter: conditions, outcomes, pairs, episodes, videos."""
    out = {"unexpected"}
    for trials in study["orders"].values():
        for t in trials:
            out |= {t["task"], t["pair_id"], t["episode_id"], t["video"], Path(t["video"]).name}
    return out


def assert_blind(text: str, study: dict, where: str) -> None:
    shown = [w for w in forbidden(study) if w and w in text]
    assert not shown, (where, shown, text)
    assert not re.search(r"\bexpected\b", text), (where, text)


def set_dates(driver, dob: str, test: str) -> None:  # noqa: ANN001
    driver.execute_script(
        "for (const [id, v] of [['dob', arguments[0]], ['test-date', arguments[1]]]) {"
        " const el = document.getElementById(id); el.value = v; el.dispatchEvent(new Event('input')); }", dob, test)


def choose(driver, element_id: str, value: str) -> None:  # noqa: ANN001
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, element_id)).select_by_value(value)


def finish_session(driver, t: float) -> float:  # noqa: ANN001
    """Run the rest of the running session with the schedules; return the page time after it."""
    while driver.execute_script("return window.bibExperiment.state()") != "done":
        position = driver.execute_script("return window.bibExperiment.session().next + 1")
        t = run_trial(driver, t, schedule_for(position))
    return t


def test_the_experimenters_window_never_shows_the_condition(driver, studies: dict[str, Path]) -> None:  # noqa: ANN001
    """At every trial (attention-getter, during the trial, looking and away) and on the end screen the
    experimenter's window shows the trial number, the phase, the looking clock and the criterion, and
    no task, outcome, pair, episode or video; the saved rows still hold them."""
    from selenium.webdriver.common.by import By

    study = study_of(studies["plain"])
    open_study(driver, studies["plain"])
    start(driver, "p01", order=2)
    order = study["orders"]["2"]
    t, seen = 5000.0, 0
    while driver.execute_script("return window.bibExperiment.state()") != "done":
        n = driver.execute_script("return window.bibExperiment.session().next")
        row = order[n]
        text = window_text(driver)
        assert_blind(text, study, f"attention before trial {n + 1}")
        assert f"trial {n + 1}/20 · {row['phase']}" in text and "attention-getter" in text
        set_clock(driver, t)
        key(driver, "space", True)
        set_clock(driver, t + 1500)
        text = window_text(driver)
        assert_blind(text, study, f"trial {n + 1}, looking")
        assert "LOOKING" in text and "trial 1.5 s · looking 1.5 s · 1 look" in text, text
        assert "criterion: armed (a look-away of 2.0 s ends the trial)" in text  # 1.5 s >= min-on 1 s
        key(driver, "space", False)
        set_clock(driver, t + 2500)
        text = window_text(driver)
        assert_blind(text, study, f"trial {n + 1}, away")
        assert "away" in text and "criterion: away 1.0 s of 2.0 s" in text, text
        set_clock(driver, t + 4000)  # the look-away criterion ends the trial at 3.5 s
        t += 5000
        seen += 1
    assert seen == 20
    text = window_text(driver)
    assert_blind(text, study, "end screen")
    assert "Session of p01 saved (20 trials)" in text and "download folder" in text
    headers = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#summary th")]
    assert headers == ["trial", "phase", "looking (s)", "ended by", "error", "exclusion"]
    trials = rows_of(wait_file(driver.downloads, "tiny-study_p01_trials.csv"))
    assert [r["outcome"] for r in trials] == [r["outcome"] for r in order]  # the data keep what the window hides
    assert [r["task"] for r in trials] == [r["task"] for r in order]
    assert {r["looking_time_s"] for r in trials} == {"1.500"}


def test_participant_records_codes_and_consent(driver, studies: dict[str, Path], tmp_path: Path,  # noqa: ANN001
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Age in days from the dates; a date of birth after the test date is refused; trial codes given
    during and after a trial, session codes, a no-good flag and notes go into every row; the recording
    consent is not carried over; bib analyze excludes and counts them by reason."""
    from selenium.webdriver.common.by import By

    open_study(driver, studies["plain"])
    assert not driver.find_element(By.ID, "record").is_selected()
    # a date of birth after the test date: refused before anything starts
    driver.find_element(By.ID, "pid").send_keys("p40")
    set_dates(driver, "2026-03-02", "2026-03-01")
    assert driver.find_element(By.ID, "age-shown").text == "the date of birth is after the test date"
    driver.find_element(By.ID, "start").click()
    assert driver.execute_script("return window.bibExperiment.state()") == "setup"
    assert driver.find_element(By.ID, "warning").text == (
        "Date of birth: it must be a date on or before the test date (2026-03-01).")
    # across a leap day and a daylight-saving change
    set_dates(driver, "2023-12-10", "2024-11-03")
    want = (dt.date(2024, 11, 3) - dt.date(2023, 12, 10)).days
    assert driver.find_element(By.ID, "age-shown").text == f"age {want} days"
    driver.find_element(By.ID, "record").click()  # the parent consents for this session
    start(driver, "p40")
    assert driver.execute_script("return window.bibExperiment.state()") == "attention"
    assert driver.execute_script("return window.bibExperiment.session().recording_consent") == "yes"
    assert not driver.find_element(By.ID, "record").is_selected()
    # trial 1: coded while it runs
    set_clock(driver, 1000)
    key(driver, "space", True)
    choose(driver, "trial-code", "fussiness")
    key(driver, "space", False)
    set_clock(driver, 20000)
    assert driver.execute_script("return window.bibExperiment.state()") == "attention"
    # trial 2 runs, then is coded between trials (the last trial)
    t = run_trial(driver, 21000, schedule_for(2))
    assert driver.find_element(By.ID, "trial-code-label").text == "trial 2"
    choose(driver, "trial-code", "parent_interference")
    notes = driver.find_element(By.ID, "session_notes")
    notes.send_keys("sibling in the room, r y space")  # keys typed in the notes are not look keys
    assert driver.execute_script("return window.bibExperiment.state()") == "attention"
    choose(driver, "session_exclusion", "outside_interference")
    t = finish_session(driver, t)
    trials = rows_of(wait_file(driver.downloads, "tiny-study_p40_trials.csv"))
    assert len(trials) == 20 and {r["age_days"] for r in trials} == {str(want)}
    assert {r["session_date"] for r in trials} == {"2024-11-03"}
    assert [r["trial_exclusion"] for r in trials[:3]] == ["fussiness", "parent_interference", ""]
    assert {r["trial_exclusion"] for r in trials[2:]} == {""}
    assert {r["session_exclusion"] for r in trials} == {"outside_interference"}
    assert {r["session_notes"] for r in trials} == {"sibling in the room, r y space"}
    assert {r["recording_consent"] for r in trials} == {"yes"}
    # the end screen changes a trial's code; the stored session keeps it
    selects = driver.find_elements(By.CSS_SELECTOR, "#summary select.row-code")
    assert len(selects) == 20
    from selenium.webdriver.support.ui import Select

    Select(selects[4]).select_by_value("equipment")
    stored = driver.execute_script("return JSON.parse(localStorage.getItem(Object.keys(localStorage)"
                                   ".find(k => k.endsWith('/p40')))).trials[4].trial_exclusion")
    assert stored == "equipment"

    # the next family: consent not ticked, its rows say no, no recording is made
    driver.find_element(By.ID, "again").click()
    assert not driver.find_element(By.ID, "record").is_selected()
    assert driver.find_element(By.ID, "dob").get_attribute("value") == ""
    start(driver, "p41")
    assert driver.execute_script("return window.bibExperiment.recording()") == ""
    choose(driver, "session_ok", "no-good")
    finish_session(driver, 1000.0)
    p41 = rows_of(wait_file(driver.downloads, "tiny-study_p41_trials.csv"))
    assert {r["recording_consent"] for r in p41} == {"no"} and {r["session_ok"] for r in p41} == {"no-good"}
    assert {r["age_days"] for r in p41} == {""}

    # three uncoded sessions, then bib analyze on the folder: exclusions applied and counted by reason
    for pid in ("p42", "p43", "p44"):
        open_study(driver, studies["plain"])
        start(driver, pid)
        finish_session(driver, 1000.0)
        wait_file(driver.downloads, f"tiny-study_{pid}_trials.csv")
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for pid in ("p40", "p41", "p42", "p43", "p44"):
        shutil.copy(driver.downloads / f"tiny-study_{pid}_trials.csv", sessions)
    code, out, err = run_cli(capsys, "analyze", str(sessions), "--json")
    assert code == 0, err
    ex = json.loads(out)["exclusions"]
    assert ex["participants_by_reason"] == [{"reason": "outside interference", "participants": 1},
                                            {"reason": "marked no-good", "participants": 1}]
    codes = [s for s in ex["summary"] if s["step"] == "codes"]
    assert codes == [{"step": "codes", "reason": "session: outside interference", "rows": 20},
                     {"step": "codes", "reason": "session marked no-good", "rows": 20}]
    assert {r["participant_id"] for r in ex["excluded"] if r["step"] == "codes"} == {"p40", "p41"}
    code, out, _ = run_cli(capsys, "analyze", str(sessions))
    assert "participants excluded by the experimenter's codes: 1 outside interference, 1 marked no-good" in out


def test_a_folder_with_another_criteria_session_is_refused(driver, studies: dict[str, Path], tmp_path: Path,  # noqa: ANN001
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Every row carries the study id and the criteria hash; sessions of the same set run under other
    criteria are refused by bib analyze with one line naming the files; they do not share storage."""
    from bib.experiment import build

    plain, timed = study_of(studies["plain"]), study_of(studies["timed"])
    assert plain["id"] == timed["id"] and plain["criteria_hash"] != timed["criteria_hash"]
    assert plain["criteria_hash"] == build.Criteria(**plain["criteria"]).digest()
    open_study(driver, studies["plain"])
    start(driver, "p70")
    finish_session(driver, 1000.0)
    a = rows_of(wait_file(driver.downloads, "tiny-study_p70_trials.csv"))
    assert {r["study_id"] for r in a} == {plain["id"]} and {r["criteria_hash"] for r in a} == {OLD_RULE.digest()}
    sessions = tmp_path / "mixed"
    sessions.mkdir()
    (driver.downloads / "tiny-study_p70_trials.csv").rename(sessions / "tiny-study_p70_trials.csv")
    open_study(driver, studies["timed"])
    start(driver, "p70")  # the same id in the other study: no "already has a session" prompt
    assert driver.execute_script("return window.bibExperiment.state()") == "attention"
    start_t = 1000.0
    while driver.execute_script("return window.bibExperiment.state()") != "done":
        start_t = run_trial(driver, start_t, [])
    b = rows_of(wait_file(driver.downloads, "tiny-study_p70_trials.csv"))
    assert {r["criteria_hash"] for r in b} == {TIMED.digest()}
    shutil.copy(driver.downloads / "tiny-study_p70_trials.csv", sessions / "tiny-study_p71_trials.csv")
    code, out, err = run_cli(capsys, "analyze", str(sessions))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err == (f"bib: error: {sessions}: sessions of different trial criteria (column criteria_hash: "
                   f"{OLD_RULE.digest()} in tiny-study_p70_trials.csv; {TIMED.digest()} in tiny-study_p71_trials.csv); "
                   "analyse each study on its own\n")


SHORT = Criteria(lookaway=0.5, max_trial=2.0, min_on=0.2, play_through=False, measure_from="start")


@pytest.fixture(scope="module")
def short_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny set's study with short trials, so a session runs in real time in a few seconds."""
    from browser_sets import tiny_set

    from bib.experiment import build_experiment

    out = tmp_path_factory.mktemp("lab") / "short"
    build_experiment(tiny_set(tmp_path_factory), out, SHORT, command="bib experiment tiny --out short")
    return out


def real_ms(driver) -> float:  # noqa: ANN001
    return driver.execute_script("return performance.now()")


def webm_duration_ms(path: Path) -> tuple[float, int]:
    """The recording's length from its packets (PyAV): the last frame's time plus one frame, and the frame count."""
    import av

    with av.open(str(path)) as box:
        stream = box.streams.video[0]
        times = sorted(float(p.pts * p.time_base) * 1000 for p in box.demux(stream) if p.pts is not None)
    gaps = sorted(b - a for a, b in zip(times, times[1:]) if b > a)
    return times[-1] + gaps[len(gaps) // 2], len(times)


def coding_page(driver, study: Path, looks: Path, recording: Path | None) -> None:  # noqa: ANN001
    from selenium.webdriver.common.by import By

    driver.get(study.joinpath("code.html").as_uri() + "?clock=manual")
    driver.find_element(By.ID, "looks-file").send_keys(str(looks))
    if recording is not None:
        driver.find_element(By.ID, "recording-file").send_keys(str(recording))
    driver.find_element(By.ID, "code-start").click()


def coded(driver, ms: float, down: bool | None = None, how: str = "set") -> None:  # noqa: ANN001
    driver.execute_script(f"window.bibCoding.clock.{how}(arguments[0])", ms)
    if down is not None:
        key(driver, "space", down)


def press(driver, name: str) -> None:  # noqa: ANN001
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).key_down(name).key_up(name).perform()


def test_the_coding_tool_frames_speed_timeline_undo_and_recoding(driver, short_study: Path, tmp_path: Path,  # noqa: ANN001
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A session recorded in real time (the fake webcam); the second coder codes it frame by frame in
    the coding tool: coding a span twice counts it once, coding it again replaces it, undo restores the
    last look, frame steps move by the recording's own frame rate (read from the WebM, checked with
    PyAV), speed 0.25-2x; a cut recording is refused; bib reliability compares the two files."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    study = study_of(short_study)
    open_study(driver, short_study)
    driver.find_element(By.ID, "record").click()
    set_clock(driver, real_ms(driver))
    start(driver, "p80")
    WebDriverWait(driver, 20).until(lambda d: d.execute_script("return window.bibExperiment.recording()") == "recording")
    for _ in range(3):  # look 0.3 s, then a 0.5 s look-away ends the trial: the page clock is the real one
        set_clock(driver, real_ms(driver))
        key(driver, "space", True)
        time.sleep(0.3)
        set_clock(driver, real_ms(driver))
        key(driver, "space", False)
        time.sleep(0.7)
        set_clock(driver, real_ms(driver))
        assert driver.execute_script("return window.bibExperiment.state()") == "attention"
    time.sleep(1.0)
    set_clock(driver, real_ms(driver))
    key(driver, "y", True)
    key(driver, "y", False)
    looks_file = driver.downloads / "tiny-study_p80_looks.csv"
    trials_a = driver.downloads / "tiny-study_p80_trials.csv"
    wait_file(driver.downloads, looks_file.name)
    wait_file(driver.downloads, trials_a.name)
    recording = driver.downloads / "tiny-study_p80_recording.webm"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (recording.is_file() and recording.stat().st_size > 0
                                               and not list(driver.downloads.glob("*.crdownload"))):
        time.sleep(0.1)
    pyav_ms, n_frames = webm_duration_ms(recording)

    coding_page(driver, short_study, looks_file, recording)
    WebDriverWait(driver, 20).until(lambda d: d.execute_script("return window.bibCoding.plan() !== null")
                                    or d.find_element(By.ID, "code-error").is_displayed())
    assert not driver.find_element(By.ID, "code-error").is_displayed(), driver.find_element(By.ID, "code-error").text
    plan = driver.execute_script("return window.bibCoding.plan()")
    fps = driver.execute_script("return window.bibCoding.fps()")
    assert abs(plan["recording_ms"] - pyav_ms) <= 1000 / fps + 1e-6  # the page's reading of the file equals PyAV's
    assert plan["recording_ms"] >= plan["trials"][-1]["end"] - plan["recording_start"]
    # the fake webcam's rate falls with the machine's load (6 fps at load 7 in CI, 30 when idle): a rate, not a value
    assert 1 <= fps <= 60 and n_frames >= 10
    driver.set_script_timeout(60)
    small = driver.execute_async_script(  # read in 4 KiB windows: elements across every window's end
        "var done = arguments[arguments.length - 1];"
        "window.bibCoding.webmTiming(document.getElementById('recording-file').files[0], 4096).then(done)")
    assert small["duration_ms"] == plan["recording_ms"] and small["frames"] == n_frames
    s1, s2 = plan["trials"][0]["start"], plan["trials"][1]["start"]

    coded(driver, s1, how="seek")
    coded(driver, s1 + 100, True)
    coded(driver, s1 + 400, False)
    assert driver.execute_script("return window.bibCoding.looks()") == [[s1 + 100, s1 + 400]]
    coded(driver, s1, how="seek")  # rewind and code the same look again: counted once
    coded(driver, s1 + 100, True)
    coded(driver, s1 + 400, False)
    coded(driver, s1 + 450)
    assert driver.execute_script("return window.bibCoding.looks()") == [[s1 + 100, s1 + 400]]
    coded(driver, s1 + 50, how="seek")  # code the span again with a shorter look: it replaces the first
    coded(driver, s1 + 150, True)
    coded(driver, s1 + 250, False)
    coded(driver, s1 + 450)
    assert driver.execute_script("return window.bibCoding.looks()") == [[s1 + 150, s1 + 250]]
    press(driver, "u")  # undo the last look: what was coded before it
    assert driver.execute_script("return window.bibCoding.looks()") == [[s1 + 100, s1 + 400]]

    # frame by frame in trial 2: 6 frames looking ("." with SPACE held), 3 away (ArrowRight), 2 back (",")
    from selenium.webdriver.common.keys import Keys

    coded(driver, s2, how="seek")
    key(driver, "space", True)
    for _ in range(6):
        press(driver, ".")
    key(driver, "space", False)
    for _ in range(3):
        press(driver, Keys.ARROW_RIGHT)
    for _ in range(2):
        press(driver, ",")
    frame = 1000 / fps
    got = driver.execute_script("return window.bibCoding.looks()")
    assert got[0] == [s1 + 100, s1 + 400] and got[1] == pytest.approx([s2, s2 + 6 * frame], abs=1e-6) and len(got) == 2
    assert driver.execute_script("return window.bibCoding.clock.now()") == pytest.approx(s2 + 7 * frame, abs=1e-6)

    options = [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "#speed option")]
    assert options == ["0.25", "0.5", "0.75", "1", "1.5", "2"]
    Select(driver.find_element(By.ID, "speed")).select_by_value("0.25")
    assert driver.execute_script("return [window.bibCoding.rate(), document.getElementById('replay').playbackRate]") == [0.25, 0.25]
    bars = driver.execute_script("return [document.querySelectorAll('#timeline .tl-trial').length,"
                                 " document.querySelectorAll('#timeline .tl-look').length]")
    assert bars == [3, 2]
    assert_blind(window_text(driver), study, "coding page")

    driver.find_element(By.ID, "code-save").click()
    b_rows = rows_of(wait_file(driver.downloads, "tiny-study_p80_coderB_trials.csv"))
    want = []
    for t in plan["trials"]:
        want.append(sum(max(0.0, min(b, t["end"]) - max(a, t["start"])) for a, b in got) / 1000)
    assert [float(r["looking_time_s"]) for r in b_rows] == pytest.approx(want, abs=5e-4)
    assert float(b_rows[0]["looking_time_s"]) == pytest.approx(0.3, abs=5e-4)  # not 0.6: coded twice, counted once
    assert {r["recording"] for r in b_rows} == {recording.name} and {r["study_id"] for r in b_rows} == {study["id"]}

    # a recording cut to 40% of its bytes, under the session's name: refused, its length read from the file
    cut = tmp_path / recording.name
    cut.write_bytes(recording.read_bytes()[: int(recording.stat().st_size * 0.4)])
    coding_page(driver, short_study, looks_file, cut)
    WebDriverWait(driver, 20).until(lambda d: d.find_element(By.ID, "code-error").is_displayed())
    text = driver.find_element(By.ID, "code-error").text
    m = re.fullmatch(r"tiny-study_p80_recording\.webm: the recording lasts (\d+\.\d{3}) s, the session (\d+\.\d{3}) s from the "
                     r"recording's start: shorter than the session \(cut, or another session's\)", text)
    assert m and float(m.group(1)) < float(m.group(2)) - 0.5, text
    assert driver.execute_script("return window.bibCoding.plan()") is None

    # bib reliability on the two coders' files; a coder file naming another session's recording is refused
    b_file = driver.downloads / "tiny-study_p80_coderB_trials.csv"
    code, out, err = run_cli(capsys, "reliability", str(trials_a), str(b_file), "--json")
    assert code == 0, err
    assert json.loads(out)["n_trials"] == 3
    wrong = tmp_path / "wrong.csv"
    wrong.write_text(b_file.read_text(encoding="utf-8").replace(recording.name, "tiny-study_p81_recording.webm"), encoding="utf-8")
    code, _, err = run_cli(capsys, "reliability", str(trials_a), str(wrong))
    assert code == 2 and err.startswith(f"bib: error: {wrong}: line 2: recording tiny-study_p81_recording.webm does not match its session")


def balance_table(driver) -> dict[str, int]:  # noqa: ANN001
    rows = driver.execute_script("return Array.from(document.querySelectorAll('#balance tbody tr'))"
                                 ".map(tr => Array.from(tr.cells).map(td => td.textContent))")
    return {r[0].removeprefix("order "): int(r[3]) for r in rows}


def test_orders_are_assigned_to_balance_the_sessions_seen(driver, short_study: Path) -> None:  # noqa: ANN001
    """The suggested order is the one with the fewest sessions kept in this browser (ties: the lowest);
    the setup page's balance table counts them; an order chosen by hand is kept and shows up as
    imbalance; practice sessions do not count."""
    from selenium.webdriver.common.by import By

    open_study(driver, short_study)
    driver.find_element(By.ID, "practice").click()  # a practice session: never counted
    finish_session(driver, 1000.0)
    driver.find_element(By.ID, "again").click()
    seen = []
    for k in range(4):
        counts = balance_table(driver)
        assert list(counts) == ["1", "2", "3", "4"]
        least = min(counts.values())
        want = next(o for o, n in counts.items() if n == least)
        assert driver.find_element(By.ID, "order").get_attribute("value") == want, counts
        start(driver, f"p9{k}")
        assert driver.execute_script("return String(window.bibExperiment.session().order)") == want
        finish_session(driver, 1000.0)
        driver.find_element(By.ID, "again").click()
        seen.append(want)
        after = balance_table(driver)
        assert after == {**counts, want: counts[want] + 1}
    assert max(after.values()) - min(after.values()) <= 1
    assert driver.find_element(By.ID, "balance-note").text.endswith("balanced (orders differ by at most one session)")
    # an order chosen by hand is kept; twice on the fullest order, the table says so
    full = max(after, key=lambda o: (after[o], -int(o)))
    for pid in ("p98", "p99"):
        start(driver, pid, order=int(full))
        assert driver.execute_script("return String(window.bibExperiment.session().order)") == full
        finish_session(driver, 1000.0)
        driver.find_element(By.ID, "again").click()
    final = balance_table(driver)
    spread = max(final.values()) - min(final.values())
    assert final[full] == after[full] + 2 and spread >= 2
    assert driver.find_element(By.ID, "balance-note").text.endswith(f"unbalanced: orders differ by {spread} sessions")
    assert driver.find_element(By.ID, "order").get_attribute("value") == min(final, key=lambda o: (final[o], int(o)))


HABITUATION = Criteria(lookaway=2.0, max_trial=10.0, min_on=1.0, play_through=False, measure_from="start", habituation=True,
                       hab_window=3, hab_ratio=0.5, hab_basis="first", hab_max_trials=10, hab_recovery=True)


def test_a_habituation_design_runs(driver, tmp_path_factory: pytest.TempPathFactory) -> None:  # noqa: ANN001
    """Infant-controlled familiarization: pair 1's looking falls (6, 5, 4, 2, 2, 1.5 s) and meets the
    criterion (below half the first three trials) at its 6th trial; pair 2's stays at 5 s and runs to
    the maximum, 10 trials (its 8 familiarization videos, then the first two again); each block then shows its two test trials and a recovery trial with the
    other block's first video. The rows record the role, habituated_at, why it ended and the
    criterion, equal to bib.stimuli.timing.habituation_end; the window stays blind."""
    from browser_sets import tiny_set

    from bib.analysis.importers import read_looking_times
    from bib.experiment import build_experiment
    from bib.stimuli.timing import habituation_end

    out = tmp_path_factory.mktemp("lab") / "hab"
    build_experiment(tiny_set(tmp_path_factory), out, HABITUATION, command="bib experiment tiny --out hab --habituation")
    study = study_of(out)
    open_study(driver, out)
    assert driver.find_element("id", "criteria").text.endswith(
        "; habituation: looking on 3 trials in a row below 50% of the first 3 trials, at most 10 trials, "
        "then the test trials and a recovery trial")
    start(driver, "p60", order=1)
    falling, t, looked = [6.0, 5.0, 4.0, 2.0, 2.0, 1.5], 1000.0, []
    while driver.execute_script("return window.bibExperiment.state()") != "done":
        hab = driver.execute_script("return window.bibExperiment.session().hab")
        look = (falling[hab["k"]] if hab["block"] == 0 else 5.0) if hab["stage"] == "hab" else 3.0
        assert_blind(window_text(driver), study, f"habituation {hab}")
        if hab["stage"] == "hab":
            assert f"block {hab['block'] + 1}/2, habituation trial {hab['k'] + 1}/10" in window_text(driver)
        looked.append((hab["block"], hab["stage"], look))
        set_clock(driver, t)
        key(driver, "space", True)
        set_clock(driver, t + look * 1000)
        key(driver, "space", False)
        set_clock(driver, t + (look + 2.5) * 1000)  # the 2 s look-away ends it
        t += 20000
    rows = rows_of(wait_file(driver.downloads, "tiny-study_p60_trials.csv"))
    assert [int(r["trial_num"]) for r in rows] == list(range(1, 23))
    assert [float(r["looking_time_s"]) for r in rows] == [x[2] for x in looked]
    roles = [r["hab_role"] for r in rows]
    assert roles == ["habituation"] * 6 + ["test"] * 2 + ["recovery"] + ["habituation"] * 10 + ["test"] * 2 + ["recovery"]
    first = habituation_end(falling, HABITUATION)
    second = habituation_end([5.0] * 10, HABITUATION)
    assert first == (6, "criterion", pytest.approx(7.5)) and second == (10, "max_trials", pytest.approx(7.5))
    assert {(r["habituated_at"], r["hab_end"]) for r in rows[:9]} == {("6", "criterion")}
    assert {(r["habituated_at"], r["hab_end"]) for r in rows[9:]} == {("10", "max_trials")}
    assert [r["hab_criterion_s"] for r in rows[:3]] == ["0.000", "0.000", "7.500"] and rows[7]["hab_criterion_s"] == "7.500"
    order = study["orders"]["1"]
    fam1 = [r["position"] for r in order if r["pair_id"] == order[0]["pair_id"] and r["phase"] == "familiarization"]
    fam2 = [r["position"] for r in order if r["pair_id"] == order[-1]["pair_id"] and r["phase"] == "familiarization"]
    assert [int(r["position"]) for r in rows[:6]] == fam1[:6]
    assert [int(r["position"]) for r in rows[9:19]] == fam2 + fam2[:2]  # the videos again, in turn
    assert [r["phase"] for r in rows[6:8]] == ["test", "test"] and {r["outcome"] for r in rows[6:8]} == {"expected", "unexpected"}
    assert int(rows[8]["position"]) == fam2[0] and int(rows[21]["position"]) == fam1[0]  # recovery: the other block's video
    assert rows[8]["phase"] == "familiarization"
    table = read_looking_times(driver.downloads / "tiny-study_p60_trials.csv").table  # trial numbers stay unique
    assert len(table) == 22
    # the coding tool reads the session: repeated positions are separate trials, numbered as the trials file
    coding_page(driver, out, driver.downloads / "tiny-study_p60_looks.csv", None)
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 10).until(lambda d: d.execute_script("return window.bibCoding.plan() !== null"))
    plan = driver.execute_script("return window.bibCoding.plan()")
    assert [x["trial_num"] for x in plan["trials"]] == list(range(1, 23))
    assert [x["position"] for x in plan["trials"]] == [int(r["position"]) for r in rows]


TIMING = Criteria(lookaway=1.0, max_trial=6.0, min_on=0.2, play_through=True, measure_from="outcome")


def test_presented_frames_stalls_and_the_outcome_frame_shown(driver, tmp_path_factory: pytest.TempPathFactory) -> None:  # noqa: ANN001
    """With the real clock: the stimulus window reports the frames it presents (requestVideoFrameCallback).
    Trial 2's video is paused 600 ms before its outcome: the stall is logged with its length, the
    outcome frame is shown later than nominal, and looking is measured from the frame shown: the saved
    looking time and trial length equal the rule applied to the look log with the presented outcome
    time and, for play-through, the video's real end."""
    from browser_sets import tiny_set
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    from test_browser_experiment import stimulus_window

    from bib.experiment import build_experiment
    from bib.experiment.build import looking_time

    out = tmp_path_factory.mktemp("lab") / "timing"
    build_experiment(tiny_set(tmp_path_factory), out, TIMING, command="bib experiment tiny --out timing")
    study = study_of(out)
    driver.get(out.joinpath("index.html").as_uri())
    WebDriverWait(driver, 20).until(lambda d: d.execute_script("return window.bibExperiment !== undefined"))
    start(driver, "p33", order=1)
    control, screen = stimulus_window(driver)
    try:
        for n in (1, 2):
            WebDriverWait(driver, 20).until(lambda d: d.execute_script("return window.bibExperiment.state()") == "attention")
            key(driver, "space", True)
            if n == 2:
                driver.switch_to.window(screen)
                driver.set_script_timeout(20)
                driver.execute_async_script(
                    "var done = arguments[arguments.length - 1], v = document.getElementById('stimulus');"
                    "(function poll() { if (v.currentTime > 0.2 && !v.paused) { v.pause();"
                    " setTimeout(function () { v.play(); done(v.currentTime); }, 600); } else setTimeout(poll, 5); })();")
                driver.switch_to.window(control)
            time.sleep(2.5 if n == 1 else 1.9)
            key(driver, "space", False)
        WebDriverWait(driver, 20).until(lambda d: d.execute_script("return window.bibExperiment.state()") == "attention")
        key(driver, "y", True)
        key(driver, "y", False)
        report = driver.find_element(By.ID, "timing-report").text
    finally:
        driver.switch_to.window(control)
    rows = rows_of(wait_file(driver.downloads, "tiny-study_p33_trials.csv"))
    log = rows_of(wait_file(driver.downloads, "tiny-study_p33_looks.csv"))
    assert len(rows) == 2
    order, ends = study["orders"]["1"], []
    for r, row in zip(rows, order[:2], strict=True):
        mine = [x for x in log if x["position"] == r["position"]]
        start_ms = next(float(x["clock_ms"]) for x in mine if x["event"] == "trial_start")
        shown = next(float(x["clock_ms"]) for x in mine if x["event"] == "video_outcome_shown")
        assert float(r["outcome_shown_s"]) == pytest.approx((shown - start_ms) / 1000, abs=1e-3)
        assert r["looking_from_s"] == r["outcome_shown_s"]  # looking is measured from the frame shown
        assert float(r["outcome_offset_ms"]) == pytest.approx((shown - start_ms) - row["outcome_s"] * 1000, abs=0.2)
        frames = round(row["video_s"] * row["fps"])
        assert frames - 2 <= int(r["frames_shown"]) <= frames, (r["frames_shown"], frames)
        events = [(float(x["t_s"]), "on" if x["event"] == "look_on" else "off") for x in mine if x["event"] in ("look_on", "look_off")]
        ended = next(float(x["t_s"]) for x in mine if x["event"] == "video_ended")  # play-through: the video's real end
        lt, duration, reason = looking_time(events, TIMING, video_s=ended, outcome_s=float(r["outcome_shown_s"]))
        assert float(r["looking_time_s"]) == pytest.approx(lt, abs=1e-3) and reason == r["end_reason"] == "lookaway"
        assert float(r["trial_duration_s"]) == pytest.approx(duration, abs=1e-3)
        ends.append(ended - row["video_s"])
    stalls = [x for x in log if x["event"].startswith("video_stall:") and x["position"] == rows[1]["position"]]
    assert int(rows[1]["stalls"]) >= 1 and stalls
    longest = float(rows[1]["stall_max_ms"])
    assert 450 <= longest <= 2000, longest  # the 600 ms pause, less the frame it was due in
    assert max(float(x["event"].split(":")[1]) for x in stalls) * 1000 == pytest.approx(longest, abs=1)
    assert float(rows[1]["outcome_offset_ms"]) >= 450 + float(rows[0]["outcome_offset_ms"]) - 100  # the stall delayed the outcome
    assert ends[1] >= 0.45 + ends[0] - 0.1  # and the video's end: look-aways counted from the real end
    assert {r["session_max_stall_ms"] for r in rows} == {f"{max(float(x['stall_max_ms']) for x in rows):.1f}"}
    assert "worst stall" in report and "(trial 2)" in report, report


def test_the_pages_habituation_rule_equals_pythons(driver, studies: dict[str, Path]) -> None:  # noqa: ANN001
    """habituation.js and bib.stimuli.timing.habituation_end on 600 seeded random sequences (each basis,
    windows 2-4, ratios 0.3-0.7, looking that falls, rises or wanders): the same ending trial, reason
    and criterion."""
    from dataclasses import asdict

    import numpy as np

    from bib.stimuli.timing import habituation_end

    open_study(driver, studies["plain"])
    rng = np.random.default_rng(40)
    cases = []
    for k in range(600):
        w = int(rng.integers(2, 5))
        crit = Criteria(habituation=True, hab_window=w, hab_ratio=float(rng.choice([0.3, 0.5, 0.7])),
                        hab_basis=("first", "sliding", "max")[k % 3], hab_max_trials=int(rng.integers(2 * w, 15)))
        trend = rng.choice([-0.6, 0.0, 0.4])
        looks = [round(max(0.0, 8 + trend * i + rng.normal(0, 2.5)), 3) for i in range(int(rng.integers(1, 16)))]
        cases.append((asdict(crit), looks, habituation_end(looks, crit)))
    got = driver.execute_script(
        "return arguments[0].map(c => { const r = window.bibHabituation.end(c[1], c[0]); return [r.n, r.reason, r.crit]; })",
        [[c, looks] for c, looks, _ in cases])
    assert [tuple(g) for g in got] == [(n, reason, crit) for _, _, (n, reason, crit) in cases]
    reasons = {reason for _, _, (_, reason, _) in cases}
    assert reasons == {"criterion", "max_trials", ""}
