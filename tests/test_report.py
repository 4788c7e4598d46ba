"""`bib report` and `bib experiment` without a browser: inputs, pages, links, determinism, bad input."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from bib.cli import main
from bib.errors import BibInputError
from bib.experiment import Criteria
from bib.experiment.build import looking_time

EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "looking_times" / "example.csv"
PILOT_SPEC = Path(__file__).resolve().parent.parent / "analysis" / "infant-pilot.toml"
TABLE = Path(__file__).resolve().parent.parent / "baselines" / "results.csv"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny set with videos and orders, an evaluation JSON of it, an analysis report with plots."""
    from browser_sets import tiny_set

    from bib.analysis.analyze import analyze, jsonable
    from bib.analysis.importers import read_looking_times
    from bib.analysis.plots import analysis_plots
    from bib.analysis.spec import load_spec
    from bib.evaluation import evaluate, evaluation_json, find_episodes, write_results
    from bib.stimuli.manifest import read_manifest, write_manifest

    folder = tmp_path_factory.mktemp("report-inputs")
    root = tiny_set(tmp_path_factory)
    found = find_episodes(root)
    surprise = {r.id: (1.0 if r.outcome == "unexpected" else 0.0) for r in found.refs}
    evaluation = folder / "oracle.json"
    evaluation.write_text(json.dumps(evaluation_json(evaluate(found.refs, surprise), "max", sets=found.sets)), encoding="utf-8")
    spec = load_spec(PILOT_SPEC)
    result = analyze(read_looking_times(EXAMPLE, None, spec), spec)
    analysis = folder / "analysis"
    analysis.mkdir()
    (analysis / "report.json").write_text(json.dumps(jsonable(result.report)), encoding="utf-8")
    analysis_plots(result.data, result.report, spec.scale, analysis)
    audit = folder / "audit"
    with pytest.raises(SystemExit):  # exit code 1: the tiny set fails the audit
        main(["audit", str(root), "--out", str(audit)])
    write_results(folder / "oracle.csv", surprise)
    # the tiny set's noise-free agents have no beta, hence no evidence: a copy of its episodes whose
    # manifest gets evidence values by hand, so the evaluation has a difficulty curve to show
    graded = folder / "graded"
    shutil.copytree(root, graded, ignore=shutil.ignore_patterns("*.mp4"))
    rows = read_manifest(graded)
    pairs = sorted({r["pair_id"] for r in rows if r["pair_id"]})
    for r in rows:
        r["evidence"] = f"{(-0.5, 0.5, 3.0, 20.0)[pairs.index(r['pair_id']) % 4]:.4f}" if r["pair_id"] else ""
    write_manifest(graded, rows)
    with pytest.raises(SystemExit) as done:
        main(["evaluate", str(graded), str(folder / "oracle.csv"), "--out", str(folder / "oracle-eval")])
    assert done.value.code in (None, 0)
    profiles = folder / "profiles"
    with pytest.raises(SystemExit) as done:
        main(["profile", "rational", "random", "--seeds", "1", "--condition", "preference", "--agency-grids", "1",
              "--observer", "closest-object", "--no-episodes", "--out", str(profiles)])
    assert done.value.code in (None, 0)
    return {"set": root, "evaluation": evaluation, "analysis": analysis, "folder": folder, "audit": audit,
            "evaluation_dir": folder / "oracle-eval", "profiles": profiles}


def build(inputs: dict[str, Path], out: Path, *extra: str) -> None:
    args = ["report", str(inputs["set"]), str(inputs["evaluation"]), str(TABLE), str(inputs["analysis"]),
            str(inputs["profiles"]), str(inputs["profiles"] / "rational" / "profile.json"), "--out", str(out), *extra]
    with pytest.raises(SystemExit) as done:
        main(args)
    assert done.value.code in (None, 0)


def links(page: Path) -> list[str]:
    html = page.read_text(encoding="utf-8")
    return re.findall(r'(?:href|src)="([^"#]+)"', html)


def test_site_pages_and_every_link_resolves(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(inputs, out)
    pages = sorted(p.name for p in out.glob("*.html"))
    assert pages == ["analysis-infant-pilot.html", "evaluation.html", "index.html", "profile-rational.html",
                     "profiles-profiles-random.html", "profiles-profiles-rational.html", "profiles-profiles.html",
                     "set-tiny-study-efficiency-path.html", "set-tiny-study-manifest.html", "set-tiny-study-orders.html",
                     "set-tiny-study-preference.html", "set-tiny-study.html"]
    for page in out.glob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert "Made by <code class=\"command\">bib report " in html, page.name
        assert "http://" not in html and "https://" not in html, page.name  # no CDN, nothing remote
        for link in links(page):
            assert (page.parent / link).exists(), f"{page.name}: {link}"
    pref = (out / "set-tiny-study-preference.html").read_text(encoding="utf-8")
    videos = re.findall(r'<video [^>]*src="([^"]+)"', pref)
    # expected and unexpected side by side, linked (not copied) from the set
    assert [Path(v).name for v in videos] == ["preference-000000-expected.mp4", "preference-000000-unexpected.mp4"]
    assert all((out / v).resolve() == (inputs["set"] / "videos" / Path(v).name).resolve() for v in videos)
    assert not list(out.rglob("*.mp4"))
    # a contact sheet per episode, and a poster (the video's first frame) for each player: no black "0:00" box
    assert len(list((out / "sheets").rglob("*-poster.png"))) == 4 and len(list((out / "sheets").rglob("*.png"))) == 8
    posters = re.findall(r'<video [^>]*poster="([^"]+)"', pref)
    assert len(posters) == 2 and all((out / p).is_file() for p in posters)
    import cv2

    from bib.episode import load_episode
    from bib.render.frames import trial_frames
    from bib.report.build import sheet_settings
    from bib.report.inputs import read_stimulus_set

    first = next(trial_frames(load_episode(inputs["set"] / "episodes" / "preference-000000-expected.json").trials[0],
                              sheet_settings(read_stimulus_set(inputs["set"])), only={0}))
    assert (cv2.imread(str(out / posters[0]))[:, :, ::-1] == first).all()
    evaluation = (out / "evaluation.html").read_text(encoding="utf-8")
    assert "oracle" in evaluation and "HBToM" in evaluation and "inverse-planner" in evaluation
    # AGENT's Table 1 beside ours (issue 43): its scenarios and blocks, and the file the numbers come from
    assert "AGENT (Shu et al. 2021, Table 1)" in evaluation and "BIPaCK (G2)" in evaluation
    assert "data/published/agent_table1.csv" in evaluation
    # the tiny set has 1 pair per condition: each accuracy carries the few-pairs warning
    assert evaluation.count("Warning: ") >= 2 and "preference: only 1 pair (fewer than 10)" in evaluation
    assert (out / "figures" / "evaluation.svg").read_text(encoding="utf-8").startswith("<?xml")
    analysis = (out / "analysis-infant-pilot.html").read_text(encoding="utf-8")  # named after the study, not its folder
    assert "0.397" in analysis and "trial error: fussiness" in analysis  # the estimate and an exclusion reason
    orders = (out / "set-tiny-study-orders.html").read_text(encoding="utf-8")
    assert orders.count("<h2>Order ") == 4


def test_profile_pages_show_the_profiles_numbers_figure_and_command(inputs: dict[str, Path], tmp_path: Path) -> None:
    from bib.profile.result import HEADLINE_COLUMNS, fmt_summary, fmt_value

    out = tmp_path / "site"
    with pytest.raises(SystemExit) as done:
        main(["report", str(inputs["profiles"]), "--out", str(out)])
    assert done.value.code in (None, 0)
    assert sorted(p.name for p in out.glob("*.html")) == ["index.html", "profiles-profiles-random.html",
                                                         "profiles-profiles-rational.html", "profiles-profiles.html"]
    table = json.loads((inputs["profiles"] / "profiles.json").read_text(encoding="utf-8"))
    html = (out / "profiles-profiles.html").read_text(encoding="utf-8")
    for agent in table["agents"]:
        cells = "".join(f'<td class="num">{fmt_summary(agent[k], d, sg)}</td>' for k, _, d, sg in HEADLINE_COLUMNS)
        assert f'<a href="profiles-profiles-{agent["agent"]}.html">{agent["agent"]}</a></td>{cells}</tr>' in html
    assert f"Input made by <code>{table['command']}</code>" in html  # the command that made the profiles
    svg = out / "figures" / "profiles-profiles.svg"
    assert svg.read_bytes() == (inputs["profiles"] / "profiles.svg").read_bytes()
    doc = json.loads((inputs["profiles"] / "random" / "profile.json").read_text(encoding="utf-8"))
    page = (out / "profiles-profiles-random.html").read_text(encoding="utf-8")
    sr = doc["self_reflection"]
    assert f"<b>{fmt_summary(sr['plain']['score'], 4, True)}</b>; its reality check RC(agent): " \
           f"<b>{fmt_summary(sr['reality_check']['score'], 4, True)}</b>" in page
    mirror = sr["plain"]["environments"]
    assert (f"<tr><td>MirrorWorld</td><td class=\"num\">{fmt_value(mirror['MirrorWorld'], 3, True)}</td>"
            f"<td class=\"num\">{fmt_value(mirror['opposite(MirrorWorld)'], 3, True)}</td>") in page
    meg, act = doc["meg"]["per_condition"]["preference"], doc["actor"]["per_condition"]["preference"]
    cells = [fmt_value(act["steps"], 1), fmt_value(act["reached_goal"], 2), fmt_value(act["optimal"], 2),
             fmt_value(meg["known"], 2), fmt_value(meg["unknown"], 2)]
    assert "<tr><td>preference</td>" + "".join(f'<td class="num">{c}</td>' for c in cells) + "</tr>" in page
    assert "Classic integer battery: no adapter" in page and "closest-object" in page
    assert f"Input made by <code>{doc['command']}</code>" in page
    assert (out / "figures" / "profiles-profiles-random.svg").read_bytes() == (inputs["profiles"] / "random" / "profile.svg").read_bytes()
    for p in out.glob("*.html"):
        for link in links(p):
            assert (out / link).exists(), (p.name, link)


def test_a_profile_without_its_figure_or_agent_folders_still_has_a_page(inputs: dict[str, Path], tmp_path: Path) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copyfile(inputs["profiles"] / "profiles.json", alone / "profiles.json")  # no svg, no agent folders
    one = tmp_path / "one.json"
    shutil.copyfile(inputs["profiles"] / "rational" / "profile.json", one)  # no svg: the figure is drawn
    out = tmp_path / "site"
    with pytest.raises(SystemExit) as done:
        main(["report", str(alone), str(one), "--out", str(out)])
    assert done.value.code in (None, 0)
    assert sorted(p.name for p in out.glob("*.html")) == ["index.html", "profile-one.html", "profiles-alone.html"]
    html = (out / "profiles-alone.html").read_text(encoding="utf-8")
    assert "<td>rational</td>" in html and "<td>random</td>" in html and "<img" not in html
    assert (out / "figures" / "profile-one.svg").read_text(encoding="utf-8").startswith("<?xml")


def test_audit_and_difficulty_on_the_evaluation_page(inputs: dict[str, Path], tmp_path: Path) -> None:
    from bib.observers.audit import read_audit

    out = tmp_path / "site"
    with pytest.raises(SystemExit) as done:
        main(["report", str(inputs["evaluation_dir"]), str(inputs["audit"]), "--out", str(out)])
    assert done.value.code in (None, 0)
    assert sorted(p.name for p in out.glob("*.html")) == ["evaluation.html", "index.html"]
    html = (out / "evaluation.html").read_text(encoding="utf-8")
    audit = read_audit(inputs["audit"] / "audit.json")
    assert f"Shortcut audit: {'passed' if audit['passed'] else 'FAILED'} (audit)" in html
    cells = re.findall(r'<td class="num (ok|fail|exempt)"', html)
    assert len(cells) == sum(len(c["shortcuts"]) for c in audit["conditions"].values())
    assert cells.count("fail") == sum(s["status"] == "FAIL" for c in audit["conditions"].values() for s in c["shortcuts"].values())
    assert "Accuracy per difficulty bin" in html and (out / "figures" / "evaluation-oracle-eval-difficulty.svg").is_file()
    assert (out / "figures" / "audit-audit.svg").is_file()
    for link in links(out / "evaluation.html"):
        assert (out / link).exists(), link


def test_same_inputs_give_the_same_site(inputs: dict[str, Path], tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    build(inputs, a)
    build(inputs, b)
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file() and p.name != "provenance.json")
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file() and p.name != "provenance.json")
    for f in files:
        ta, tb = (a / f).read_bytes(), (b / f).read_bytes()
        assert ta.replace(str(a).encode(), b"X") == tb.replace(str(b).encode(), b"X"), f


def test_rebuild_replaces_the_site_and_reuses_contact_sheets(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(inputs, out)
    (out / "stale.html").write_text("old", encoding="utf-8")
    sheet = next((out / "sheets").rglob("*.png"))
    before = sheet.read_bytes()
    build(inputs, out)
    assert not (out / "stale.html").exists() and sheet.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def _fails(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as done:
        main(args)
    assert done.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bib: error: ") and "\n" not in err
    return err


def test_bad_inputs_exit_2_with_no_site(inputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "site"
    stray = tmp_path / "notes.json"
    stray.write_text('{"hello": 1}', encoding="utf-8")
    assert str(stray) in _fails(["report", str(stray), "--out", str(out)], capsys)
    assert str(tmp_path) in _fails(["report", str(tmp_path), "--out", str(out)], capsys)  # an empty folder
    cut = tmp_path / "cut" / "profile.json"
    cut.parent.mkdir()
    doc = json.loads((inputs["profiles"] / "rational" / "profile.json").read_text(encoding="utf-8"))
    del doc["meg"]
    cut.write_text(json.dumps(doc), encoding="utf-8")
    err = _fails(["report", str(cut.parent), "--out", str(out)], capsys)
    assert str(cut) in err and "incomplete bib.profile/1 document (missing 'meg')" in err
    broken = tmp_path / "broken"
    shutil.copytree(inputs["set"], broken)
    video = next((broken / "videos").glob("*.mp4"))
    video.unlink()
    err = _fails(["report", str(broken), "--out", str(out)], capsys)
    assert str(video) in err and "missing" in err
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    other = tmp_path / "other"
    other.mkdir()
    (other / "mine.txt").write_text("x", encoding="utf-8")
    assert "--force" in _fails(["report", str(inputs["evaluation"]), "--out", str(other)], capsys)
    assert (other / "mine.txt").exists()


def test_experiment_bad_inputs(inputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "study"
    no_orders = tmp_path / "no-orders"
    shutil.copytree(inputs["set"], no_orders)
    (no_orders / "orders.csv").unlink()
    err = _fails(["experiment", str(no_orders), "--out", str(out)], capsys)
    assert str(no_orders / "orders.csv") in err and "no presentation orders" in err
    no_video = tmp_path / "no-video"
    shutil.copytree(inputs["set"], no_video)
    from bib.stimuli.orders import read_orders

    gone = no_video / read_orders(no_video)[0]["video_path"]
    gone.unlink()
    assert str(gone) in _fails(["experiment", str(no_video), "--out", str(out)], capsys)
    with pytest.raises(SystemExit) as done:  # the parser's range check (its usage message is the CLI's business)
        main(["experiment", str(inputs["set"]), "--out", str(out), "--lookaway", "0"])
    assert done.value.code == 2 and "--lookaway" in capsys.readouterr().err
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_experiment_study_folder(inputs: dict[str, Path], tmp_path: Path) -> None:
    from bib.analysis.schema import COLUMNS

    out = tmp_path / "study"
    with pytest.raises(SystemExit) as done:
        main(["experiment", str(inputs["set"]), "--out", str(out), "--lookaway", "1.5", "--lab", "babylab"])
    assert done.value.code in (None, 0)
    assert sorted(p.name for p in out.iterdir()) == ["code.html", "code.js", "experiment.css", "experiment.js", "habituation.js",
                                                     "index.html", "provenance.json", "stimulus.html", "stimulus.js", "study.js", "videos"]
    stimulus = (out / "stimulus.html").read_text(encoding="utf-8")
    body = re.sub(r"<!--.*?-->|<[^>]+>", "", stimulus.split("<body", 1)[1].split(">", 1)[1], flags=re.S)
    assert body.strip() == ""  # the infant's screen holds no text at all
    assert re.findall(r'<script src="([^"]+)"', stimulus) == ["stimulus.js"]
    study = json.loads((out / "study.js").read_text(encoding="utf-8").split("=", 1)[1].rstrip().rstrip(";"))
    assert study["columns"] == list(COLUMNS) and study["criteria"] == {
        "lookaway": 1.5, "max_trial": 60.0, "min_on": 2.0, "min_trial": 0.0, "play_through": True, "measure_from": "outcome",
        "habituation": False, "hab_window": 3, "hab_ratio": 0.5, "hab_basis": "first", "hab_max_trials": 14, "hab_recovery": False}
    # every trial carries its video's length and outcome time, from the set's orders.csv
    from bib.stimuli.orders import read_orders

    timing = {(int(r["order"]), int(r["position"])): r for r in read_orders(inputs["set"])}
    for order, trials in study["orders"].items():
        for t in trials:
            row = timing[(int(order), t["position"])]
            assert t["video_s"] == int(row["video_frames"]) / int(row["fps"]) and t["outcome_s"] == int(row["outcome_frame"]) / int(row["fps"])
    assert study["lab"] == "babylab" and sorted(study["orders"]) == ["1", "2", "3", "4"]
    assert all(len(t) == 20 for t in study["orders"].values())
    for trials in study["orders"].values():
        for t in trials:
            assert (out / t["video"]).is_file()
    html = (out / "index.html").read_text(encoding="utf-8")
    assert re.findall(r'<script src="([^"]+)"', html) == ["study.js", "habituation.js", "experiment.js"]
    assert "http" not in (out / "experiment.js").read_text(encoding="utf-8") + (out / "habituation.js").read_text(encoding="utf-8") + html


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ([(0, "on"), (1.234, "off"), (2.0, "on"), (4.5, "off")], (3.734, 6.5, "lookaway")),
        ([(0, "on"), (0.3, "off"), (3.3, "on"), (4.3, "off")], (1.3, 6.3, "lookaway")),  # min-on not met at 0.3 s
        ([(0, "on")], (10.0, 10.0, "max_trial")),
        ([(0, "on"), (2.5, "off"), (4.0, "on"), (9.9, "off")], (8.4, 10.0, "max_trial")),
        ([(0, "on"), (1.0, "off"), (3.0, "on")], (1.0, 3.0, "lookaway")),  # a look back exactly at the criterion is too late
        ([(0, "on"), (4.0, "end")], (4.0, 4.0, "ended")),
    ],
)
def test_looking_time_rule(events: list[tuple[float, str]], expected: tuple[float, float, str]) -> None:
    lt, duration, reason = looking_time(events, Criteria(2.0, 10.0, 1.0, play_through=False, measure_from="start"),
                                        video_s=5.6, outcome_s=4.0)
    assert (round(lt, 9), round(duration, 9), reason) == expected


# video 5.6 s, outcome at 4.0 s: looking counts after 4.0, look-aways after 5.6
@pytest.mark.parametrize(
    ("events", "min_trial", "expected"),
    [
        ([(0, "on"), (1.0, "off"), (2.0, "on"), (7.0, "off")], 0.0, (3.0, 9.0, "lookaway")),
        ([(0, "on"), (3.0, "off")], 0.0, (0.0, 10.0, "max_trial")),  # every look before the outcome: nothing counts
        ([(0, "on"), (5.0, "off")], 0.0, (1.0, 7.6, "lookaway")),  # the look-away counts from the video's end
        ([(0, "on"), (5.0, "off")], 8.0, (1.0, 8.0, "min_trial")),  # the criterion met at 7.6, the trial lasts 8 s
        ([(0, "on"), (5.0, "off"), (7.9, "on"), (8.5, "off")], 8.0, (1.6, 10.0, "max_trial")),  # back before 8 s
        ([(0, "on"), (5.0, "off"), (7.0, "on"), (7.5, "off")], 8.0, (1.5, 9.5, "lookaway")),
        ([(0, "on"), (4.5, "end")], 0.0, (0.5, 4.5, "ended")),
        ([(0, "on")], 0.0, (6.0, 10.0, "max_trial")),
    ],
)
def test_play_through_and_outcome_timing(events: list[tuple[float, str]], min_trial: float,
                                         expected: tuple[float, float, str]) -> None:
    c = Criteria(2.0, 10.0, 1.0, min_trial=min_trial, play_through=True, measure_from="outcome")
    lt, duration, reason = looking_time(events, c, video_s=5.6, outcome_s=4.0)
    assert (round(lt, 9), round(duration, 9), reason) == expected


def test_criteria_are_checked() -> None:
    with pytest.raises(BibInputError, match=r"lookaway = 0.0 is outside \[0.1, 60\] s"):
        Criteria(0.0, 10.0, 1.0)
    with pytest.raises(BibInputError, match=r"min_trial \(10 s\) must be below max_trial \(10 s\)"):
        Criteria(2.0, 10.0, 1.0, min_trial=10.0)
    with pytest.raises(BibInputError, match=r"measure_from = 'end': expected outcome or start"):
        Criteria(measure_from="end")


def test_study_timing_from_spec_and_options(inputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The set's [study] table gives the timing; the options override it; a bad value is one line, exit 2."""
    from bib.experiment import study_criteria
    from bib.stimuli.spec import load_spec, spec_to_toml

    timed = tmp_path / "timed"
    shutil.copytree(inputs["set"], timed)
    spec = (timed / "spec.toml").read_text(encoding="utf-8")
    (timed / "spec.toml").write_text(spec + "\n[study]\nmin_trial = 3.0\nmeasure_from = \"start\"\n", encoding="utf-8")
    assert study_criteria(timed) == Criteria(min_trial=3.0, measure_from="start")
    assert study_criteria(timed, min_trial=None, play_through=False) == Criteria(min_trial=3.0, measure_from="start",
                                                                                  play_through=False)
    loaded = load_spec(timed / "spec.toml")
    assert load_spec_text(spec_to_toml(loaded), tmp_path) == loaded  # [study] written back as read
    out = tmp_path / "study"
    with pytest.raises(SystemExit) as done:
        main(["experiment", str(timed), "--out", str(out), "--no-play-through", "--max-trial", "30"])
    assert done.value.code in (None, 0)
    study = json.loads((out / "study.js").read_text(encoding="utf-8").split("=", 1)[1].rstrip().rstrip(";"))
    assert study["criteria"] == {"lookaway": 2.0, "max_trial": 30.0, "min_on": 2.0, "min_trial": 3.0,
                                 "play_through": False, "measure_from": "start", "habituation": False, "hab_window": 3,
                                 "hab_ratio": 0.5, "hab_basis": "first", "hab_max_trials": 14, "hab_recovery": False}
    assert study["made_by"].endswith("--max-trial 30.0 --no-play-through")
    # habituation from [study], options over it
    (timed / "spec.toml").write_text(spec + "\n[study]\nhabituation = true\nhab_window = 2\nhab_max_trials = 10\n", encoding="utf-8")
    with pytest.raises(SystemExit) as done:
        main(["experiment", str(timed), "--out", str(tmp_path / "hab"), "--hab-basis", "max", "--recovery", "--hab-ratio", "0.6"])
    assert done.value.code in (None, 0)
    study = json.loads((tmp_path / "hab" / "study.js").read_text(encoding="utf-8").split("=", 1)[1].rstrip().rstrip(";"))
    assert {k: v for k, v in study["criteria"].items() if k.startswith("hab")} == {
        "habituation": True, "hab_window": 2, "hab_ratio": 0.6, "hab_basis": "max", "hab_max_trials": 10, "hab_recovery": True}
    assert study["made_by"].endswith("--hab-ratio 0.6 --hab-basis max --recovery")
    err = _fails(["experiment", str(timed), "--out", str(tmp_path / "hab2"), "--hab-window", "6"], capsys)
    assert err == ("bib: error: habituation: hab_max_trials (10) must be at least twice hab_window (6): "
                   "the criterion and the check each need a window")
    (timed / "spec.toml").write_text(spec + "\n[study]\nhabituation = true\nhab_window = 8\n", encoding="utf-8")
    err = _fails(["experiment", str(timed), "--out", str(tmp_path / "hab3")], capsys)
    assert err == (f"bib: error: {timed / 'spec.toml'}: field 'study.hab_max_trials': 14 must be at least twice "
                   "study.hab_window (8)")
    (timed / "spec.toml").write_text(spec + "\n[study]\nmin_trial = 3.0\nmeasure_from = \"start\"\n", encoding="utf-8")
    err = _fails(["experiment", str(timed), "--out", str(tmp_path / "s2"), "--min-trial", "40", "--max-trial", "30"], capsys)
    assert err == "bib: error: trial timing: min_trial (40 s) must be below max_trial (30 s)"
    (timed / "spec.toml").write_text(spec + "\n[study]\nmin_trial = 90.0\n", encoding="utf-8")
    err = _fails(["experiment", str(timed), "--out", str(tmp_path / "s3")], capsys)
    assert err == f"bib: error: {timed / 'spec.toml'}: field 'study.min_trial': 90 s must be below study.max_trial (60 s)"
    # a set generated before the trial timing was recorded: outcome timing needs it, the start rule does not
    legacy = tmp_path / "legacy"
    shutil.copytree(inputs["set"], legacy)
    lines = (legacy / "orders.csv").read_text(encoding="utf-8").splitlines()
    (legacy / "orders.csv").write_text("\n".join(",".join(x.split(",")[:10]) for x in lines) + "\n", encoding="utf-8")
    err = _fails(["experiment", str(legacy), "--out", str(tmp_path / "s4")], capsys)
    assert err.startswith(f"bib: error: {legacy / 'orders.csv'}: no trial timing (fps, video_frames, outcome_frame)")
    with pytest.raises(SystemExit) as done:
        main(["experiment", str(legacy), "--out", str(tmp_path / "s5"), "--no-play-through", "--measure-from", "start"])
    assert done.value.code in (None, 0)
    assert not (tmp_path / "s4").exists()


def load_spec_text(text: str, folder: Path):  # noqa: ANN201
    from bib.stimuli.spec import load_spec

    path = folder / "again.toml"
    path.write_text(text, encoding="utf-8")
    return load_spec(path)


def test_long_conditions_continue_on_further_pages(tmp_path: Path) -> None:
    """A condition's pairs are split into pages of --pairs-per-page (every pair once, in pair order),
    linked by a pager; --pairs-per-condition still bounds how many are shown in all."""
    from bib.stimuli.build import build_spec
    from bib.stimuli.manifest import read_manifest
    from bib.stimuli.spec import load_spec

    spec = tmp_path / "five.toml"
    spec.write_text('name = "five"\nseed = 3\n[[tasks]]\nid = "preference"\nn = 5\n', encoding="utf-8")
    root = tmp_path / "five"
    build_spec(load_spec(spec), root, video=False, workers=1)
    pairs = sorted({r["pair_id"] for r in read_manifest(root)})
    assert len(pairs) == 5
    out = tmp_path / "site"
    with pytest.raises(SystemExit) as done:
        main(["report", str(root), "--out", str(out), "--pairs-per-condition", "4", "--pairs-per-page", "2"])
    assert done.value.code in (None, 0)
    names = ["set-five-preference.html", "set-five-preference-page2.html"]
    assert sorted(p.name for p in out.glob("set-five-preference*.html")) == sorted(names)
    shown = []
    for k, name in enumerate(names):
        html = (out / name).read_text(encoding="utf-8")
        shown += re.findall(r'<section class="pair" id="([^"]+)">', html)
        assert f"{2 * k + 1}-{2 * k + 2} of 4:" in html and "Showing 4 of 5" in html
        other = names[1 - k]
        assert html.count(f'href="{other}"') == 4  # the page number and previous/next, above and below the pairs
        assert html.count(f"<b>{k + 1}</b>") == 2  # this page, not linked
        for link in links(out / name):
            assert (out / link).exists(), f"{name}: {link}"
    assert shown == pairs[:4]
    with pytest.raises(SystemExit) as done:  # one page: no pager
        main(["report", str(root), "--out", str(out), "--pairs-per-page", "5"])
    assert sorted(p.name for p in out.glob("set-five-preference*.html")) == names[:1]
    assert 'class="pager"' not in (out / names[0]).read_text(encoding="utf-8")


def trials_header_in_docs() -> list[str]:
    """The trials CSV header docs/experiment.md gives (the ```text block after "Its header, exactly")."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "experiment.md").read_text(encoding="utf-8")
    block = text.split("Its header, exactly", 1)[1].split("```text\n", 1)[1].split("\n```", 1)[0]
    return block.strip().split(",")


def test_docs_give_the_session_files_header() -> None:
    from bib.analysis.schema import COLUMNS
    from bib.experiment.build import EXTRA_COLUMNS

    assert trials_header_in_docs() == [*COLUMNS, *EXTRA_COLUMNS]
