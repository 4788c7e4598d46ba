"""`bib validate SET` checks a set against its manifest (issue 17 item 3), and every reader refuses
an episode `validate` rejects (score as render does)."""

from __future__ import annotations

import csv
import json

import pytest

from bib.cli import main
from bib.stimuli.check import check_path


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")


def run(capsys, *argv):
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    out = tmp_path_factory.mktemp("sets") / "pref"
    with pytest.raises(SystemExit) as exc:
        main(["generate", "--task", "preference", "--n", "3", "--seed", "4", "--out", str(out)])
    assert exc.value.code == 0
    return out


@pytest.fixture
def set_(pristine, tmp_path):
    import shutil

    out = tmp_path / "pref"
    shutil.copytree(pristine, out)
    return out


def rows(root):
    with open(root / "manifest.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def write_rows(root, rs):
    with open(root / "manifest.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rs[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rs)


def test_valid_set(set_, capsys):
    code, text, _ = run(capsys, "validate", str(set_), "--workers", "2")
    assert code == 0 and text.strip() == "6 valid, 0 invalid of 6 episode files in 1 set"


def test_deleted_episode_is_missing(set_, capsys):
    (set_ / "episodes" / "preference-000001-expected.json").unlink()
    code, text, _ = run(capsys, "validate", str(set_))
    assert code == 1
    assert "preference-000001-expected.json: missing (manifest row 4, episode preference-000001-expected)" in text
    assert text.strip().endswith("5 valid, 1 invalid of 6 episode files in 1 set; 1 problems")


def test_half_built_pair_left_by_an_interrupted_run(set_, capsys):
    # an interrupted run wrote a unit's first file, not its manifest rows, and a temporary file
    (set_ / "episodes" / "preference-000003-expected.json").write_text(
        (set_ / "episodes" / "preference-000000-expected.json").read_text())
    (set_ / "episodes" / ".preference-000003-unexpected.json.abc.tmp").write_text("{")
    code, text, _ = run(capsys, "validate", str(set_))
    assert code == 1
    assert "preference-000003-expected.json: not in the manifest (a unit an interrupted run left half-built" in text
    assert ".preference-000003-unexpected.json.abc.tmp: leftover temporary file of an interrupted run" in text


def test_incomplete_pair_and_hash_mismatch(set_, capsys):
    rs = rows(set_)
    write_rows(set_, [r for r in rs if r["episode_id"] != "preference-000002-unexpected"])
    (set_ / "episodes" / "preference-000002-unexpected.json").unlink()
    f = set_ / "episodes" / "preference-000000-unexpected.json"
    f.write_text(f.read_text().replace('"seed"', '"seed" ', 1))
    code, text, _ = run(capsys, "validate", str(set_))
    assert code == 1
    assert "pair preference-000002 is incomplete (has expected; needs one expected and one unexpected episode)" in text
    assert "preference-000000-unexpected.json: sha256 differs from the manifest's" in text


def test_twin_that_does_not_name_it_back(set_, capsys):
    rs = rows(set_)
    for r in rs:
        if r["pair_id"] == "preference-000000":
            r["twin_id"] = "preference-000001"
    write_rows(set_, rs)
    report = check_path(set_)
    assert "pref/manifest.csv: pair preference-000000: twin 'preference-000001' does not name it back" in "\n".join(report.problems)
    for r in rs:
        if r["pair_id"] == "preference-000000":
            r["twin_id"] = "preference-000009"
    write_rows(set_, rs)
    assert "twin 'preference-000009' is not in the set" in "\n".join(check_path(set_).problems)


def test_malformed_manifest_is_a_problem_not_a_crash(set_, capsys):
    (set_ / "manifest.csv").write_text("episode_id,oops\nx,y\n")
    code, text, _ = run(capsys, "validate", str(set_))
    assert code == 1 and "manifest.csv: header" in text


def test_score_refuses_an_episode_whose_path_goes_through_a_wall(set_, tmp_path, capsys):
    f = set_ / "episodes" / "preference-000001-unexpected.json"
    d = json.loads(f.read_text())
    cell = d["trials"][2]["path"][1]
    d["trials"][2]["walls"].append(cell)
    loose = tmp_path / "loose"
    loose.mkdir()
    for g in (set_ / "episodes").glob("*.json"):
        (loose / g.name).write_text(g.read_text())
    (loose / f.name).write_text(json.dumps(d))
    code, _, err = run(capsys, "render", str(loose / f.name), "--out", str(tmp_path / "video"))
    assert code == 2 and "trial 2, step 1" in err
    code, _, err = run(capsys, "score", "random", str(loose), "--out", str(tmp_path / "run"))
    assert code == 2
    assert err.startswith(f"bib: error: {loose / f.name}: episode preference-000001-unexpected, trial 2, step 1")
    assert not (tmp_path / "run").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["loose", "pref"]
