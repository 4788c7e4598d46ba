"""The Codabench bundle of a kit (issue 38 item 4), its scoring program run as Codabench runs it.

Codabench unpacks the scoring program into a folder ($program), the reference data into $input/ref,
the participant's zip into $input/res, and runs the command of the program's metadata.yaml with the
three folders substituted; the leaderboard reads $output/scores.json. The tests lay a temporary folder
out the same way and run that command in a shell, with the bib of this environment first on PATH (as
in the Docker image, where bib is installed from its wheel).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from cli_run import run_cli

os.environ["BIB_NO_PROGRESS"] = "1"


@pytest.fixture(scope="module")
def challenge(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A secret bib-ctrl set (1 unit per task), its kit, key and bundle, and a submission (path-length's results)."""
    from bib.cli import main

    root = tmp_path_factory.mktemp("codabench")
    paths = {"set": root / "set", "kit": root / "kit", "key": root / "private" / "key.csv",
             "bundle": root / "private" / "bundle.zip", "run": root / "run"}

    def cli(*argv: str) -> None:
        with pytest.raises(SystemExit) as info:
            main(list(argv))
        assert info.value.code in (0, None), argv

    cli("generate", "bib-ctrl", "--secret-seed", "--limit", "1", "--out", str(paths["set"]))
    cli("blind", str(paths["set"]), "--out", str(paths["kit"]), "--key", str(paths["key"]),
        "--codabench", str(paths["bundle"]), "--docker-image", "me/bib-voe:test")
    cli("score", "path-length", str(paths["kit"]), "--out", str(paths["run"]))
    return paths


def _codabench_run(bundle: Path, submission: dict[str, bytes], where: Path) -> tuple[int, str, str, Path]:
    """Lay ``where`` out as Codabench does and run the program's command: ``(exit code, stdout, stderr, $output)``."""
    program, ref, res, output = where / "program", where / "input" / "ref", where / "input" / "res", where / "output"
    for folder in (program, ref, res, output):
        folder.mkdir(parents=True)
    with zipfile.ZipFile(bundle) as zf:
        for name in zf.namelist():
            for prefix, dest in (("scoring_program/", program), ("reference_data/", ref)):
                if name.startswith(prefix) and not name.endswith("/"):
                    (dest / name[len(prefix):]).write_bytes(zf.read(name))
    buf = io.BytesIO()  # the participant's zip, unpacked into res/ as Codabench does
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in submission.items():
            zf.writestr(name, data)
    zipfile.ZipFile(buf).extractall(res)
    meta = (program / "metadata.yaml").read_text()
    command = next(line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("command:"))
    command = command.replace("$program", str(program)).replace("$input", str(where / "input")).replace(
        "$output", str(output))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(command, shell=True, cwd=where, env=env, capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr, output


def test_the_bundle_is_in_codabench_format(challenge: dict[str, Path]) -> None:
    yaml = pytest.importorskip("yaml")
    with zipfile.ZipFile(challenge["bundle"]) as zf:
        names = set(zf.namelist())
        comp = yaml.safe_load(zf.read("competition.yaml"))
        key_bytes = zf.read("reference_data/key.csv")
        template = zf.read("starting_kit/results.csv").decode()
        pages = {n: zf.read(n).decode() for n in names if n.startswith("pages/")}
        meta = yaml.safe_load(zf.read("scoring_program/metadata.yaml"))
        assert zf.read("logo.png").startswith(b"\x89PNG\r\n\x1a\n")
    assert comp["version"] == 2 and comp["image"] in names and comp["terms"] in names
    assert comp["docker_image"] == "me/bib-voe:test"
    assert all(p["file"] in names for p in comp["pages"])
    (task,) = comp["tasks"]
    assert task["reference_data"] == "reference_data/" and task["scoring_program"] == "scoring_program/"
    assert comp["phases"][0]["tasks"] == [0] and comp["phases"][0]["starting_kit"] == "starting_kit/"
    assert meta["command"] == "python3 $program/score.py $input $output"
    assert key_bytes == challenge["key"].read_bytes()  # the key is the reference data
    from bib.stimuli.kit import read_key
    from bib.tasks import table_order

    found, _ = read_key(challenge["key"])
    conds = [c for c in table_order() if c in {r.condition for r in found.refs}]
    columns = comp["leaderboards"][0]["columns"]
    assert [c["key"] for c in columns] == ["mean", *conds] and [c["index"] for c in columns] == list(range(len(columns)))
    kit_ids = [line.split(",")[0] for line in (challenge["kit"] / "kit.csv").read_text().splitlines()[1:]]
    assert template.splitlines() == ["episode_id,surprise", *(f"{i},0" for i in kit_ids)]
    # nothing outside the reference data names a real id or the seed
    seed = str(json.loads((challenge["set"] / "provenance.json").read_text())["job"]["sets"][0]["seed"])
    public = template + "".join(pages.values()) + yaml.safe_dump(comp)
    assert seed not in public and seed not in key_bytes.decode()
    assert not [r for r in found.refs if r.pair_id and r.pair_id in public]
    assert "episode_id,surprise" in pages["pages/submitting.md"] and "zip submission.zip results.csv" in pages["pages/submitting.md"]


def test_the_scoring_program_agrees_with_bib_evaluate_to_the_last_digit(challenge: dict[str, Path], tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    results = (challenge["run"] / "results.csv").read_bytes()
    code, out, err, output = _codabench_run(challenge["bundle"], {"results.csv": results}, tmp_path)
    assert code == 0, err
    scores = json.loads((output / "scores.json").read_text())
    code, text, _ = run_cli(capsys, "evaluate", str(challenge["key"]), str(challenge["run"] / "results.csv"), "--json")
    doc = json.loads(text)
    assert code == 0
    expected = {"mean": doc["overall"]["mean"], **{c: v["accuracy"] for c, v in doc["conditions"].items()}}
    assert scores == expected and json.loads(out) == expected  # floats equal to the last bit
    assert json.loads((output / "evaluation.json").read_text())["conditions"] == doc["conditions"]
    assert 0.3 < scores["mean"] < 0.9 and len(scores) == len(doc["conditions"]) + 1
    # a participant who zips a folder is scored all the same
    code, _, err, output = _codabench_run(challenge["bundle"], {"mine/results.csv": results}, tmp_path / "nested")
    assert code == 0 and json.loads((output / "scores.json").read_text()) == expected


def test_a_bad_submission_is_one_line(challenge: dict[str, Path], tmp_path: Path) -> None:
    from bib.cli import main

    good = (challenge["run"] / "results.csv").read_text().splitlines()
    other_kit = tmp_path / "other-kit"
    with pytest.raises(SystemExit):
        main(["blind", str(challenge["set"]), "--out", str(other_kit), "--key", str(tmp_path / "other.csv")])
    other_ids = [line.split(",")[0] for line in (other_kit / "kit.csv").read_text().splitlines()[1:]]
    cases = {
        "missing": ("\n".join(good[:-1]) + "\n", "1 episode(s) have no row: "),
        "other kit": ("episode_id,surprise\n" + "".join(f"{i},1\n" for i in other_ids),
                      f"none of its {len(other_ids)} episode ids is in the key"),
        "not finite": ("\n".join([good[0], good[1].split(",")[0] + ",nan", *good[2:]]) + "\n", "(must be finite)"),
        "infinite": ("\n".join([good[0], good[1].split(",")[0] + ",inf", *good[2:]]) + "\n", "(must be finite)"),
    }
    for n, (name, (text, says)) in enumerate(cases.items()):
        code, out, err, output = _codabench_run(challenge["bundle"], {"results.csv": text.encode()}, tmp_path / str(n))
        assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("bib: error: "), (name, err)
        assert says in err and "Traceback" not in err, (name, err)
        assert not (output / "scores.json").exists()
    code, _, err, output = _codabench_run(challenge["bundle"], {"notes.txt": b"hi"}, tmp_path / "none")
    assert code == 2 and "the submission holds no .csv file" in err and len(err.strip().splitlines()) == 1
    code, _, err, output = _codabench_run(challenge["bundle"], {"a.csv": b"x", "b.csv": b"y"}, tmp_path / "two")
    assert code == 2 and "holds 2 .csv files (a.csv, b.csv); submit only results.csv" in err


def test_a_zipped_per_step_parquet_is_checked_by_the_same_reader(challenge: dict[str, Path], tmp_path: Path) -> None:
    """A results.steps.parquet zipped beside results.csv is read with the rules `bib check-submission` applies."""
    csv_bytes = (challenge["run"] / "results.csv").read_bytes()
    steps = (challenge["run"] / "results.steps.parquet").read_bytes()
    code, _, err, output = _codabench_run(challenge["bundle"], {"results.csv": csv_bytes, "results.steps.parquet": steps},
                                          tmp_path / "good")
    assert code == 0 and err == "" and (output / "scores.json").is_file()
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(challenge["run"] / "results.steps.parquet")
    buf = io.BytesIO()  # steps as floats: read without a word before issue 42
    pq.write_table(table.set_column(1, "step", table.column("step").cast(pa.float64())), buf)
    for name, data, says in (("bad", b"PAR1 not a footer", "results.steps.parquet: not a readable Parquet file"),
                             ("float", buf.getvalue(), "results.steps.parquet: column 'step' is double, must be an integer")):
        code, _, err, output = _codabench_run(challenge["bundle"], {"results.csv": csv_bytes, "results.steps.parquet": data},
                                              tmp_path / name)
        assert code == 2 and len(err.strip().splitlines()) == 1 and says in err, (name, err)
        assert not (output / "scores.json").exists()


def test_the_bundle_bytes_follow_the_kit_and_key(challenge: dict[str, Path], tmp_path: Path) -> None:
    from bib.challenge import write_codabench

    day = dt.date(2027, 3, 4)
    a = write_codabench(challenge["key"], challenge["kit"], tmp_path / "a.zip", start=day)
    b = write_codabench(challenge["key"], challenge["kit"], tmp_path / "b.zip", start=day)
    assert a.read_bytes() == b.read_bytes()
    assert b"start: 3-4-2027" in zipfile.ZipFile(a).read("competition.yaml")


def test_bundle_paths_are_checked_before_anything_is_written(challenge: dict[str, Path], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    kit, key = tmp_path / "kit", tmp_path / "key.csv"
    existing = tmp_path / "old.zip"
    existing.write_bytes(b"old")
    cases = [
        (["--codabench", str(kit / "b.zip")], "inside the kit"),
        (["--codabench", str(tmp_path / "b.tar")], "name the bundle's .zip file"),
        (["--codabench", str(existing)], "exists; use --force to replace it"),
        (["--docker-image", "x/y:1"], "--docker-image goes with --codabench BUNDLE.zip"),
    ]
    for extra, says in cases:
        code, _, err = run_cli(capsys, "blind", str(challenge["set"]), "--out", str(kit), "--key", str(key), *extra)
        assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err
        assert not kit.exists() and not key.exists() and existing.read_bytes() == b"old"
