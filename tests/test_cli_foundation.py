"""The foundation commands end to end: generate (determinism, resume), validate, render, bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bib.cli import main
from bib.stimuli.manifest import COLUMNS, read_manifest


def run(capsys, *argv):
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")


def files(root):
    """Every file of a folder but provenance.json (which records times and the command line)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name != "provenance.json"}


def test_generate_is_byte_identical_for_any_worker_count(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert run(capsys, "generate", "--task", "single-object", "--n", "3", "--seed", "9", "--out", str(a), "--video")[0] == 0
    assert run(capsys, "generate", "--task", "single-object", "--n", "3", "--seed", "9", "--out", str(b), "--video",
               "--workers", "2")[0] == 0
    fa, fb = files(a), files(b)
    assert fa == fb
    assert sorted(fa) == ["complete.json", "episodes/single-object-000000.json", "episodes/single-object-000001.json",
                          "episodes/single-object-000002.json", "manifest.csv", "render.json", "videos/single-object-000000.mp4",
                          "videos/single-object-000001.mp4", "videos/single-object-000002.mp4"]
    rows = read_manifest(a)
    assert list(rows[0]) == COLUMNS and [r["n_trials"] for r in rows] == ["9"] * 3
    c = tmp_path / "c"
    run(capsys, "generate", "--task", "single-object", "--n", "3", "--seed", "10", "--out", str(c))
    assert files(c)["episodes/single-object-000000.json"] != fa["episodes/single-object-000000.json"]


def test_generate_resumes_and_repairs(tmp_path, capsys):
    out, fresh = tmp_path / "out", tmp_path / "fresh"
    run(capsys, "generate", "--task", "single-object", "--n", "5", "--out", str(fresh))
    run(capsys, "generate", "--task", "single-object", "--n", "5", "--out", str(out))
    (out / "episodes" / "single-object-000001.json").unlink()
    (out / "episodes" / "single-object-000003.json").write_text("tampered")
    code, text, _ = run(capsys, "generate", "--task", "single-object", "--n", "5", "--out", str(out))
    assert code == 0 and "2 units generated, 3 kept" in text
    assert files(out) == files(fresh)


def test_validate_accepts_generated_and_locates_problems(tmp_path, capsys):
    out = tmp_path / "set"
    run(capsys, "generate", "--task", "single-object", "--n", "3", "--out", str(out))
    (out / "spec.json").write_text('{"name": "set metadata, not an episode"}')
    code, text, _ = run(capsys, "validate", str(out))
    assert code == 0 and "3 valid, 0 invalid of 3" in text
    target = out / "episodes" / "single-object-000002.json"
    d = json.loads(target.read_text())
    cell = d["trials"][5]["path"][1]
    d["trials"][5]["walls"].append(cell)
    target.write_text(json.dumps(d))
    (out / "episodes" / "zz.json").write_text("{not json")
    code, text, _ = run(capsys, "validate", str(out / "episodes"))  # loose files: the rules only
    assert code == 1
    assert f"episode single-object-000002, trial 5, step 1, cell [{cell[0]}, {cell[1]}]: move" in text
    assert "zz.json: malformed JSON" in text and "2 valid, 2 invalid of 4" in text
    code, text, _ = run(capsys, "validate", str(out))  # the set: also against its manifest
    assert code == 1
    assert "single-object-000002.json: sha256 differs from the manifest's" in text
    assert "zz.json: not in the manifest" in text and "2 valid, 2 invalid of 4 episode files in 1 set" in text
    code, _, err = run(capsys, "validate", str(tmp_path / "nothing"))
    assert code == 2 and "no such file or folder" in err


def test_render_command(tmp_path, capsys):
    out = tmp_path / "set"
    run(capsys, "generate", "--task", "single-object", "--n", "1", "--out", str(out))
    ep = out / "episodes" / "single-object-000000.json"
    code, text, _ = run(capsys, "render", str(ep), "--out", str(tmp_path / "v"), "--contact-sheet", "--per-trial")
    assert code == 0 and (tmp_path / "v" / "single-object-000000.mp4").stat().st_size > 0
    assert (tmp_path / "v" / "contact_sheet.png").exists() and len(list((tmp_path / "v" / "trials").glob("*.mp4"))) == 9
    d = json.loads(ep.read_text())
    d["trials"][0]["path"].insert(1, d["trials"][0]["path"][0][:])
    d["trials"][0]["path"][1][0] += 2
    ep.write_text(json.dumps(d))
    code, _, err = run(capsys, "render", str(ep), "--out", str(tmp_path / "x"))
    assert code == 2 and "trial 0, step 1" in err and "not adjacent" in err
    assert not (tmp_path / "x").exists()


def test_bad_input_exits_2_with_one_line(tmp_path, capsys):
    code, _, err = run(capsys, "generate", "--task", "no-such-task", "--n", "1", "--out", str(tmp_path / "o"))
    assert code == 2 and err.startswith("bib: error: unknown task id 'no-such-task'; known:") and err.count("\n") == 1
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run(capsys, "generate", "--task", "single-object", "--n", "1", "--out", str(blocker / "sub"))
    assert code == 2 and err == f"bib: error: {blocker / 'sub'}: cannot create the output folder ({blocker} is a file)\n"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "other/1"}))
    code, _, err = run(capsys, "render", str(bad), "--out", str(tmp_path / "b"))
    assert code == 2 and "bad.json: field 'schema'" in err


def test_console_script_has_help_and_no_traceback(tmp_path):
    cmd = [sys.executable, "-m", "bib.cli"]
    help_text = subprocess.run(cmd + ["--help"], capture_output=True, text=True, check=True).stdout
    for name in ("generate", "render", "validate", "demo"):
        assert name in help_text
    bad = tmp_path / "m.json"
    bad.write_text("{")
    proc = subprocess.run(cmd + ["render", str(bad), "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "m.json: malformed JSON" in proc.stderr


def test_second_task_into_the_same_folder_needs_append_and_keeps_the_first(tmp_path, capsys):
    out = tmp_path / "mixed"
    run(capsys, "generate", "--task", "single-object", "--n", "2", "--out", str(out))
    before = files(out)
    code, _, err = run(capsys, "generate", "--task", "no-navigation", "--n", "1", "--out", str(out))
    assert code == 2 and err == (f"bib: error: {out}: folder holds the set single-object (seed 0); use --append to add "
                                 "no-navigation (seed 0) to it, --force to replace it, or choose another --out\n")
    assert files(out) == before
    code, text, _ = run(capsys, "generate", "--task", "no-navigation", "--n", "1", "--out", str(out), "--append")
    assert code == 0 and text.startswith("3 episodes in")
    assert json.loads((out / "provenance.json").read_text())["job"]["sets"] == [
        {"set": "single-object", "seed": 0}, {"set": "no-navigation", "seed": 0}]
    assert [r["task"] for r in read_manifest(out)] == ["single-object", "single-object", "no-navigation"]
    assert run(capsys, "validate", str(out))[0] == 0
    code, text, _ = run(capsys, "generate", "--task", "single-object", "--n", "2", "--out", str(out))  # resumes
    assert code == 0 and "0 units generated, 2 kept" in text


def test_a_folder_from_before_provenance_is_named_by_its_tasks(tmp_path, capsys):
    """A set written before provenance.json (no spec.toml either) is named by its manifest's tasks, without a seed."""
    out = tmp_path / "old"
    run(capsys, "generate", "--task", "single-object", "--n", "1", "--out", str(out))
    (out / "provenance.json").unlink()
    code, _, err = run(capsys, "generate", "--task", "no-navigation", "--n", "1", "--out", str(out))
    assert code == 2 and err == (f"bib: error: {out}: folder holds the set tasks single-object; use --append to add "
                                 "no-navigation (seed 0) to it, --force to replace it, or choose another --out\n")


def test_spec_set_into_a_folder_of_another_set_is_refused_and_force_replaces(tmp_path, capsys):
    spec = tmp_path / "a.toml"
    spec.write_text('name = "set-a"\nseed = 3\n[[tasks]]\nid = "single-object"\nn = 2\n')
    out = tmp_path / "out"
    assert run(capsys, "generate", str(spec), "--out", str(out))[0] == 0
    assert "set-a" in (out / "spec.toml").read_text()
    other = tmp_path / "b.toml"
    other.write_text('name = "set-b"\nseed = 3\n[[tasks]]\nid = "no-navigation"\nn = 1\n')
    code, _, err = run(capsys, "generate", str(other), "--out", str(out))
    assert code == 2 and "folder holds the set set-a (seed 3); use --append to add set-b (seed 3)" in err
    code, text, _ = run(capsys, "generate", str(other), "--out", str(out), "--force")
    assert code == 0 and text.startswith("1 episodes in")
    assert [r["task"] for r in read_manifest(out)] == ["no-navigation"] and "set-b" in (out / "spec.toml").read_text()
    code, text, _ = run(capsys, "generate", str(spec), "--out", str(out), "--append")
    assert code == 0 and not (out / "spec.toml").exists()  # it would name one of two sets
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    code, _, err = run(capsys, "generate", str(spec), "--out", str(tmp_path / "mine"))
    assert code == 2 and "holds files not written by `bib generate`" in err


def test_orders_with_a_condition_whose_outcomes_differ_in_familiarization_is_refused_before_work(tmp_path, capsys):
    spec = tmp_path / "lab.toml"
    spec.write_text('name = "lab"\n[orders]\nn_orders = 2\n[[tasks]]\nid = "efficiency-irrational"\nn = 2\n')
    code, _, err = run(capsys, "generate", str(spec), "--out", str(tmp_path / "lab"))
    assert code == 2 and "task efficiency-irrational (tasks[0]) shows its expected and unexpected outcomes" in err
    assert not (tmp_path / "lab").exists()
