"""Screenshots of the report and experiment pages for docs/report.md and docs/experiment.md.

Usage: ``python docs/screenshots.py SET/ [--out docs/img] [--experiment-only]`` where SET is a generated set with
videos, per-trial videos and orders (e.g. ``bib generate demo-study.toml --out SET``; the
docs used 2 preference + 2 efficiency-path pairs at 32 px cells). It scores SET with the inverse
planner, evaluates it (`bib evaluate --out`), audits it (`bib audit`), analyses the synthetic example looking times, adds the
committed profiles of the built-in agents (``baselines/profiles``, `bib profile`), builds the site and a study
into a temporary folder and photographs them in headless Chromium (1200 x 900).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("BIB_NO_PROGRESS", "1")


def inputs(root: Path, work: Path) -> list[Path]:
    from bib.analysis.analyze import analyze, jsonable
    from bib.analysis.importers import read_looking_times
    from bib.analysis.plots import analysis_plots
    from bib.analysis.spec import load_spec
    from bib.cli import main
    from bib.resources import resource

    for args in (["score", "inverse-planner", str(root), "--out", str(work / "scores")],
                 ["evaluate", str(root), str(work / "scores"), "--out", str(work / "inverse-planner")],
                 ["audit", str(root), "--out", str(work / "audit")]):
        try:
            main(args)
        except SystemExit as done:  # bib audit exits 1 when a shortcut passes a condition
            assert done.code in (None, 0, 1), args
    spec = load_spec(resource("analysis/infant-pilot.toml"))
    result = analyze(read_looking_times(resource("looking_times/example.csv"), None, spec), spec)
    analysis = work / "infant-pilot-example"
    analysis.mkdir()
    (analysis / "report.json").write_text(json.dumps(jsonable(result.report)), encoding="utf-8")
    analysis_plots(result.data, result.report, spec.scale, analysis)
    table = Path(__file__).resolve().parent.parent / "baselines" / "results.csv"
    return [root, work / "inverse-planner", work / "audit", table, analysis, PROFILES]


#: The committed `bib profile` table of the built-in agents (docs/profile.md).
PROFILES = Path(__file__).resolve().parent.parent / "baselines" / "profiles"
#: The agent whose own profile page is photographed.
PROFILE_AGENT = "learner"


def main() -> None:
    from bib.experiment import Criteria, build_experiment
    from bib.report import browser, build_report

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("set", type=Path)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "img")
    parser.add_argument("--experiment-only", action="store_true", help="Only the experiment's screenshots (no site).")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bib-shots-"))
    study = work / "study"
    build_experiment(args.set, study, Criteria(), command=f"bib experiment {args.set} --out study")
    if args.experiment_only:
        with browser.chromium(1200, 900) as d:
            experiment_shots(d, study, args.out)
        print(f"screenshots in {args.out}; study in {work}")
        return
    site = work / "site"
    build_report(inputs(args.set, work), site, command=f"bib report {args.set} ... --out site")
    slug = next(site.glob("set-*-manifest.html")).name[len("set-"):-len("-manifest.html")]
    pages = {"report-set": f"set-{slug}.html", "report-condition": f"set-{slug}-preference.html",
             "report-evaluation": "evaluation.html", "report-audit": "evaluation.html#audit-1", "report-analysis": next(site.glob("analysis-*.html")).name,
             "report-manifest": f"set-{slug}-manifest.html", "report-orders": f"set-{slug}-orders.html",
             "report-profiles": "profiles-profiles.html", "report-profile": f"profiles-profiles-{PROFILE_AGENT}.html"}
    with browser.chromium(1200, 900) as d:
        for name, page in pages.items():
            file, _, fragment = page.partition("#")
            browser.screenshot(d, (site / file).as_uri() + (f"#{fragment}" if fragment else ""), args.out / f"{name}.png")
            time.sleep(0.5)
            d.save_screenshot(str(args.out / f"{name}.png"))
        experiment_shots(d, study, args.out)
    print(f"screenshots in {args.out}; site and study in {work}")


def experiment_shots(d, study: Path, out: Path) -> None:  # noqa: ANN001 (a selenium driver)
    """The experiment's screenshots: setup, the stimulus window, the experimenter's window during a
    trial, the end screen and the overwrite prompt."""
    url = study.joinpath("index.html").as_uri() + "?clock=manual"
    d.get(url)
    d.find_element("id", "pid").send_keys("p07")
    d.save_screenshot(str(out / "experiment-setup.png"))
    d.find_element("id", "start").click()
    time.sleep(0.8)
    control = d.current_window_handle
    (screen,) = [h for h in d.window_handles if h != control]  # the stimulus window the study opens
    d.switch_to.window(screen)
    d.save_screenshot(str(out / "experiment-attention.png"))
    d.switch_to.window(control)
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    d.execute_script("window.bibExperiment.clock.set(1000)")
    ActionChains(d).key_down(Keys.SPACE).perform()
    time.sleep(1.5)
    d.save_screenshot(str(out / "experiment-control.png"))
    d.switch_to.window(screen)
    d.save_screenshot(str(out / "experiment-trial.png"))
    d.switch_to.window(control)
    ActionChains(d).key_up(Keys.SPACE).perform()
    for k in range(3):
        d.execute_script("window.bibExperiment.clock.set(arguments[0])", 1000 + 5000 * k + 4000)
        if k < 2:
            ActionChains(d).key_down(Keys.SPACE).perform()
            d.execute_script("window.bibExperiment.clock.set(arguments[0])", 1000 + 5000 * k + 6500)
            ActionChains(d).key_up(Keys.SPACE).perform()
    ActionChains(d).key_down("y").key_up("y").perform()
    time.sleep(0.5)
    d.save_screenshot(str(out / "experiment-done.png"))
    d.get(url)
    d.find_element("id", "pid").send_keys("p07")
    d.find_element("id", "start").click()
    time.sleep(0.3)
    d.save_screenshot(str(out / "experiment-overwrite.png"))


if __name__ == "__main__":
    main()
