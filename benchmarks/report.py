"""`bib report` and `bib experiment` speed: site build time for a 200-pair set, page load times in
headless Chromium, and how closely the experiment's recorded looks follow real key presses.

1. A 200-pair set (preference and efficiency-path, 100 pairs each, seed 0) is generated without
   video; one real H.264 episode video is rendered and hard-linked to every episode's video path
   (the manifest is rewritten with the library's writer), so the report links 400 videos exactly as
   it would for a rendered set while the benchmark skips 400 encodes. The report never opens the
   videos, it only checks they exist. Reference in the same process: reading the set (manifest,
   episodes' existence, spec), which every build does before drawing anything.
2. Every page of the site is opened in headless Chromium; the load time is the navigation entry's
   ``loadEventEnd`` (HTML, CSS, scripts, images and video metadata requests started by the parser).
3. The experiment runs with its real clock: key presses are sent through the DevTools protocol at
   scheduled wall-clock times; the looking times the page records are compared with the schedule
   (target: within 40 ms) and with PyHab's rule applied to the page's own recorded key times.

Usage: ``python benchmarks/report.py [--workers 2] [--keep DIR] [--smoke]``. Needs Chromium for parts 2-3.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("BIB_NO_PROGRESS", "1")

SPEC = """\
name = "bench-{total}"
seed = 0
[[tasks]]
id = "preference"
n = {n}
[[tasks]]
id = "efficiency-path"
n = {n}
"""


def make_set(folder: Path, n: int = 100) -> Path:
    """A set of ``n`` preference and ``n`` efficiency-path pairs whose videos link one rendered video."""
    from bib.episode import load_episode
    from bib.render.video import render_episode
    from bib.stimuli.build import build_spec
    from bib.stimuli.manifest import read_manifest, write_manifest
    from bib.stimuli.spec import load_spec

    spec = folder / "bench.toml"
    spec.write_text(SPEC.format(total=2 * n, n=n), encoding="utf-8")
    root = folder / "set"
    build_spec(load_spec(spec), root, video=False, workers=2)
    rows = read_manifest(root)
    (root / "videos").mkdir(exist_ok=True)
    one = root / "videos" / "_one.mp4"
    render_episode(load_episode(root / rows[0]["episode_path"]), one)
    for row in rows:
        row["video_path"] = f"videos/{row['episode_id']}.mp4"
        os.link(one, root / row["video_path"])
    write_manifest(root, rows)
    return root


def bench_build(root: Path, site: Path, workers: int) -> dict[str, float]:
    from bib.report import build_report
    from bib.report.inputs import read_inputs

    t = time.perf_counter()
    read_inputs([root])
    reference = time.perf_counter() - t
    out = {"read_set_s": reference}
    for w in sorted({1, workers}):
        shutil.rmtree(site, ignore_errors=True)
        t, cpu = time.perf_counter(), time.process_time()
        build_report([root], site, command="bib report set --out site", workers=w)
        out[f"build_{w}w_s"] = time.perf_counter() - t
        if w == 1:
            out["build_1w_cpu_s"] = time.process_time() - cpu
    return out


def bench_pages(site: Path) -> dict[str, float]:
    from bib.report import browser

    times = {}
    with browser.chromium() as driver:
        driver.get((site / "index.html").as_uri())  # warm the browser
        for page in sorted(site.glob("*.html")):
            driver.get(page.as_uri())
            ms = browser.wait_for(driver, "var n = performance.getEntriesByType('navigation')[0]; return n && n.loadEventEnd",
                                  timeout=10.0, every=0.05)
            times[page.name] = float(ms) / 1000
    return times


def bench_experiment(root_folder: Path, n_trials: int = 20) -> dict[str, float]:
    from browser_sets import build_tiny_set  # tests/browser_sets.py

    from bib.experiment import Criteria, build_experiment
    from bib.experiment.build import looking_time
    from bib.report import browser

    crit = Criteria(lookaway=1.0, max_trial=4.0, min_on=0.2, play_through=False, measure_from="start")
    study = root_folder / "study"
    build_experiment(build_tiny_set(root_folder), study, crit, command="bib experiment tiny --out study")
    downloads = root_folder / "downloads"
    downloads.mkdir()
    schedule = [(0.8, "off"), (1.3, "on"), (2.1, "off")]  # looking 0.8 + 0.8 = 1.6 s; ends at 3.1 s
    devs, rule = [], []
    with browser.chromium(downloads=downloads) as driver:
        driver.get(study.joinpath("index.html").as_uri())
        driver.find_element("id", "pid").send_keys("bench")
        driver.find_element("id", "start").click()

        def key(kind: str) -> None:
            driver.execute_cdp_cmd("Input.dispatchKeyEvent", {"type": kind, "key": " ", "code": "Space",
                                                              "windowsVirtualKeyCode": 32, "text": " " if kind == "keyDown" else ""})

        for _ in range(n_trials):
            time.sleep(0.3)
            start = time.monotonic()
            key("keyDown")
            for t, kind in schedule:
                time.sleep(max(0.0, start + t - time.monotonic()))
                key("keyDown" if kind == "on" else "keyUp")
            while driver.execute_script("return window.bibExperiment.state()") == "trial":
                time.sleep(0.05)
        if n_trials < 20:  # end the session early (the experimenter's end key) so that its files are saved
            driver.execute_cdp_cmd("Input.dispatchKeyEvent", {"type": "keyDown", "key": "y", "code": "KeyY",
                                                              "windowsVirtualKeyCode": 89, "text": "y"})
        for _ in range(100):
            if (downloads / "tiny-study_bench_looks.csv").is_file():
                break
            time.sleep(0.1)
        trials = list(csv.DictReader(io.StringIO((downloads / "tiny-study_bench_trials.csv").read_text())))
        looks = list(csv.DictReader(io.StringIO((downloads / "tiny-study_bench_looks.csv").read_text())))
    for r in trials:
        devs.append(abs(float(r["looking_time_s"]) - 1.6))
        events = [(float(e["t_s"]), e["event"][5:]) for e in looks
                  if e["position"] == r["position"] and e["event"] in ("look_on", "look_off")]
        lt, _, _ = looking_time(events, crit)
        rule.append(abs(lt - float(r["looking_time_s"])))
    return {"trials": len(trials), "max_dev_from_schedule_ms": 1000 * max(devs), "mean_dev_ms": 1000 * sum(devs) / len(devs),
            "max_dev_from_rule_on_recorded_times_ms": 1000 * max(rule)}


def main() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None, help="keep the set and site here")
    parser.add_argument("--smoke", action="store_true",
                        help="2 + 2 pairs, 2 experiment trials: CI's check that the script runs")
    args = parser.parse_args()
    pairs, n_trials = (2, 2) if args.smoke else (100, 20)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bib-bench-report-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    root = folder / "set" if (folder / "set" / "manifest.csv").is_file() else make_set(folder, pairs)
    build = bench_build(root, folder / "site", args.workers)
    print(f"build ({2 * pairs} pairs, {4 * pairs} linked videos, {4 * pairs} contact sheets): "
          + ", ".join(f"{k} {v:.2f}" for k, v in build.items()) + f"; load average {os.getloadavg()[0]:.1f}")
    from bib.report import browser

    if browser.missing():
        print(f"browser parts skipped: {browser.missing()}")
        return
    pages = bench_pages(folder / "site")
    worst = max(pages, key=pages.get)
    print(f"page load: {len(pages)} pages, max {pages[worst]:.3f} s ({worst}), "
          f"median {sorted(pages.values())[len(pages) // 2]:.3f} s; load average {os.getloadavg()[0]:.1f}")
    exp_folder = Path(tempfile.mkdtemp(prefix="bib-bench-experiment-"))
    timing = bench_experiment(exp_folder, n_trials)
    print("experiment, real clock, keys via DevTools: " + ", ".join(f"{k} {v:.1f}" for k, v in timing.items())
          + f"; load average {os.getloadavg()[0]:.1f}")
    if args.keep is None:
        shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(exp_folder, ignore_errors=True)


if __name__ == "__main__":
    main()
