"""`bib experiment SET --ratings` in headless Chromium (issue 43): AGENT's surprise-rating study from
file://, the rater's plan, a page that never shows the task, pair or outcome, and session files that
`bib compare --ratings` joins."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from test_browser_experiment import rows_of, wait_file

from bib.report import browser

pytestmark = pytest.mark.skipif(browser.missing() is not None, reason=f"no browser: {browser.missing()}")

SEED = 4


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from browser_sets import tiny_set

    from bib.experiment.ratings import build_rating_study

    out = tmp_path_factory.mktemp("ratings") / "study"
    build_rating_study(tiny_set(tmp_path_factory), out, command="bib experiment tiny --ratings --out study", seed=SEED, raters=6)
    return out


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    downloads = tmp_path_factory.mktemp("ratings-downloads")
    with browser.chromium(1000, 800, downloads=downloads) as d:
        d.downloads = downloads  # type: ignore[attr-defined]
        yield d


def study_of(folder: Path) -> dict:
    text = (folder / "study.js").read_text(encoding="utf-8")
    return json.loads(text.split("=", 1)[1].rstrip().rstrip(";"))


def test_the_study_folder_hides_outcomes_in_file_names(study: Path) -> None:
    doc = study_of(study)
    assert len(doc["pairs"]) == 2 and len(doc["plans"]) == 6
    assert all(re.fullmatch(r"videos/[0-9a-f]{16}\.mp4", v) for p in doc["pairs"] for v in
               [*p["familiarization"], *(t["video"] for t in p["tests"])])
    assert all((study / v).is_file() for p in doc["pairs"] for v in p["familiarization"])
    assert not [f for f in (study / "videos").iterdir() if "expected" in f.name]
    for page in ("ratings.html", "ratings.js"):
        assert "http://" not in (study / page).read_text() and "https://" not in (study / page).read_text()


def run_rater(driver, study: Path, pid: str, rater: int, values: list[int], play_first: bool = False) -> list[dict[str, str]]:  # noqa: ANN001
    """Rate every scene with ``values`` (slider moved by key presses); the videos are skipped, except with
    ``play_first`` those of the first scene, which play through one after the other by themselves."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    doc = study_of(study)
    forbidden = {"unexpected", *(p["task"] for p in doc["pairs"]), *(p["pair_id"] for p in doc["pairs"]),
                 *(t["episode_id"] for p in doc["pairs"] for t in p["tests"])}
    driver.get(study.joinpath("ratings.html").as_uri() + f"?rater={rater}")
    browser.wait_for(driver, "return window.bibRatings !== undefined && window.bibRatings.state() === 'setup'")
    driver.find_element(By.ID, "pid").send_keys(pid)
    driver.find_element(By.ID, "start").click()
    for k, value in enumerate(values):
        # the first video really plays (its time advances), the rest are skipped to keep the test short
        assert browser.wait_for(driver, "return document.getElementById('video').currentTime > 0 || window.bibRatings.state() === 'rate'")
        if play_first and k == 0:
            n_fam = len(doc["pairs"][driver.execute_script("return window.bibRatings.session().plan[0][0]")]["familiarization"])
            assert browser.wait_for(driver, "return window.bibRatings.state() === 'rate'", timeout=120)
            assert driver.execute_script("return window.bibRatings.session().clip") == n_fam  # every video, then the test
        while driver.execute_script("return window.bibRatings.state()") == "video":
            text = driver.execute_script("return document.body.innerText")
            assert not [w for w in forbidden if w in text] and not re.search(r"\bexpected\b", text), text
            driver.execute_script("window.bibRatings.skipVideo()")
        assert driver.execute_script("return window.bibRatings.state()") == "rate"
        assert f"Scene {k + 1} of {len(values)}" in driver.execute_script("return document.body.innerText")
        nxt = driver.find_element(By.ID, "next")
        assert not nxt.is_enabled()  # no answer until the slider is moved
        slider = driver.find_element(By.ID, "slider")
        slider.send_keys(Keys.HOME)  # a real key press on the slider: 0
        for _ in range(value):
            slider.send_keys(Keys.ARROW_RIGHT)
        assert nxt.is_enabled()
        nxt.click()
    assert browser.wait_for(driver, "return window.bibRatings.state() === 'done'")
    return rows_of(wait_file(driver.downloads, f"tiny-study_{pid}_ratings.csv"))


def test_a_rater_rates_the_plan_and_the_sessions_join(driver, study: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from bib.analysis import ratings as rt
    from bib.analysis.compare import read_episode_index
    from bib.experiment.ratings import rating_pairs

    doc = study_of(study)
    pairs = rating_pairs(_set_of(study))
    rows3 = run_rater(driver, study, "rA", 3, [7, 64], play_first=True)
    rows4 = run_rater(driver, study, "rB", 4, [90, 12])
    assert list(rows3[0]) == list(rt.RATING_COLUMNS)
    for rows, rater, values in ((rows3, 3, [7, 64]), (rows4, 4, [90, 12])):
        plan = rt.rating_plan(len(pairs), rater, SEED)
        assert [r["pair_id"] for r in rows] == [pairs[p]["pair_id"] for p, _ in plan]
        assert [r["outcome"] for r in rows] == [("unexpected" if u else "expected") for _, u in plan]
        assert [r["episode_id"] for r in rows] == [pairs[p]["unexpected" if u else "expected"]["episode_id"] for p, u in plan]
        assert [int(r["rating"]) for r in rows] == values
        assert {r["study_id"] for r in rows} == {doc["id"]} and {r["criteria_hash"] for r in rows} == {doc["criteria_hash"]}
        assert {r["rater_number"] for r in rows} == {str(rater)} and {r["synthetic"] for r in rows} == {"false"}
        assert all(int(r["response_ms"]) >= 0 for r in rows)
    # raters 3 and 4 saw complementary outcomes: every test episode rated once
    assert sorted(r["episode_id"] for r in rows3 + rows4) == sorted(t["episode_id"] for p in doc["pairs"] for t in p["tests"])
    folder = tmp_path / "sessions"
    folder.mkdir()
    for pid in ("rA", "rB"):
        shutil.copy(driver.downloads / f"tiny-study_{pid}_ratings.csv", folder)
    table = rt.read_ratings(folder, read_episode_index(_set_of(study)))
    assert len(table) == 4 and sorted(table["rating"]) == [7, 12, 64, 90] and not table["synthetic"].any()
    # the page suggests the next unused rater number in this browser
    driver.get(study.joinpath("ratings.html").as_uri())
    browser.wait_for(driver, "return window.bibRatings !== undefined")
    assert driver.execute_script("return document.getElementById('rater').value") == "1"
    assert not browser.console_errors(driver)


def _set_of(study: Path) -> Path:
    from browser_sets import _BUILT

    return _BUILT["tiny"]


def test_the_form_refuses_a_missing_id_and_a_rater_number_without_a_plan(driver, study: Path) -> None:  # noqa: ANN001
    from selenium.webdriver.common.by import By

    driver.get(study.joinpath("ratings.html").as_uri())
    browser.wait_for(driver, "return window.bibRatings !== undefined")
    driver.find_element(By.ID, "start").click()
    assert driver.find_element(By.ID, "warning").text == "Enter the rater id."
    driver.find_element(By.ID, "pid").send_keys("r9")
    box = driver.find_element(By.ID, "rater")
    box.clear()
    box.send_keys("7")
    driver.find_element(By.ID, "start").click()
    assert driver.find_element(By.ID, "warning").text == "The rater number must be from 1 to 6."
    assert driver.execute_script("return window.bibRatings.state()") == "setup"


def test_a_reload_resumes_at_the_next_scene_and_a_finished_id_is_refused(driver, study: Path) -> None:  # noqa: ANN001
    """Rater rC (number 5) rates scene 1, the page is reloaded, the same id continues at scene 2 with its plan;
    the saved file has both scenes, the first with the rating given before the reload."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from bib.analysis import ratings as rt

    driver.get(study.joinpath("ratings.html").as_uri() + "?rater=5&id=rC")
    browser.wait_for(driver, "return window.bibRatings !== undefined")
    driver.find_element(By.ID, "start").click()
    while driver.execute_script("return window.bibRatings.state()") == "video":
        driver.execute_script("window.bibRatings.skipVideo()")
    slider = driver.find_element(By.ID, "slider")
    slider.send_keys(Keys.END)  # 100
    driver.find_element(By.ID, "next").click()
    assert driver.execute_script("return window.bibRatings.session().trial") == 1
    driver.get(study.joinpath("ratings.html").as_uri() + "?id=rC")  # the reload; the number field is not given
    browser.wait_for(driver, "return window.bibRatings !== undefined")
    driver.find_element(By.ID, "start").click()
    assert "Scene 2 of 2" in driver.execute_script("return document.body.innerText")
    run_rater_rest(driver, [33])
    rows = rows_of(wait_file(driver.downloads, "tiny-study_rC_ratings.csv"))
    plan = rt.rating_plan(2, 5, SEED)
    assert [int(r["rating"]) for r in rows] == [100, 33] and {r["rater_number"] for r in rows} == {"5"}
    assert [r["trial_num"] for r in rows] == ["1", "2"]
    assert [r["outcome"] for r in rows] == [("unexpected" if u else "expected") for _, u in plan]
    driver.get(study.joinpath("ratings.html").as_uri() + "?id=rC")
    browser.wait_for(driver, "return window.bibRatings !== undefined")
    driver.find_element(By.ID, "start").click()
    assert driver.find_element(By.ID, "warning").text == "Rater rC has already finished in this browser; give another id."


def run_rater_rest(driver, values: list[int]) -> None:  # noqa: ANN001
    """Rate the running session's remaining scenes with ``values`` (videos skipped)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    for value in values:
        while driver.execute_script("return window.bibRatings.state()") == "video":
            driver.execute_script("window.bibRatings.skipVideo()")
        slider = driver.find_element(By.ID, "slider")
        slider.send_keys(Keys.HOME)
        for _ in range(value):
            slider.send_keys(Keys.ARROW_RIGHT)
        driver.find_element(By.ID, "next").click()
    assert browser.wait_for(driver, "return window.bibRatings.state() === 'done'")
