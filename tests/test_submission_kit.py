"""A submitter's kit (issue 42 item 6): the README and sample submission `bib blind` writes into a kit, and
`bib check-submission KIT RESULTS`, which checks a submission's format with the rules `bib evaluate` uses."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run_cli

os.environ["BIB_NO_PROGRESS"] = "1"


def _ctrl_sizes() -> tuple[int, int]:
    """(episodes, conditions) of bib-ctrl at ``--limit 1``: one unit per task, a twinned unit is two pairs."""
    from bib.stimuli.spec import load_spec

    spec = load_spec(Path(__file__).resolve().parents[1] / "stimuli" / "bib-ctrl.toml")
    return sum(4 if t.twins else 2 for t in spec.tasks), len(spec.tasks)


EPISODES, CONDITIONS = _ctrl_sizes()  # 28 and 9 before issue 43's unobserved-constraints


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A secret bib-ctrl set (1 unit per task: EPISODES episodes), its kit and key, and path-length's `bib score` run on the kit."""
    from bib.cli import main

    root = tmp_path_factory.mktemp("submission")
    paths = {"root": root, "set": root / "set", "kit": root / "kit", "key": root / "private" / "key.csv",
             "run": root / "run"}

    def cli(*argv: str) -> None:
        with pytest.raises(SystemExit) as info:
            main(list(argv))
        assert info.value.code in (0, None), argv

    cli("generate", "bib-ctrl", "--secret-seed", "--limit", "1", "--out", str(paths["set"]))
    cli("blind", str(paths["set"]), "--out", str(paths["kit"]), "--key", str(paths["key"]))
    cli("score", "path-length", str(paths["kit"]), "--out", str(paths["run"]))
    return paths


def _ids(kit: Path) -> list[str]:
    return [line.split(",")[0] for line in (kit / "kit.csv").read_text().splitlines()[1:]]


def _copy_run(kit: dict[str, Path], where: Path) -> Path:
    """A copy of the `bib score` run's results.csv and results.steps.parquet (to break one thing in)."""
    where.mkdir()
    for name in ("results.csv", "results.steps.parquet"):
        shutil.copyfile(kit["run"] / name, where / name)
    return where / "results.csv"


def _check(capsys: pytest.CaptureFixture[str], kit: Path, results: Path) -> tuple[int, str, str]:
    return run_cli(capsys, "check-submission", str(kit), str(results))


def _readme_names_every_file(folder: Path) -> str:
    """Assert that the kit's README names each of its files (an episode's as `<folder>/<id>.<suffix>`); the README."""
    readme = (folder / "README.md").read_text()
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    ids = set(_ids(folder))
    assert {"README.md", "kit.csv", "sample-submission/results.csv", "sample-submission/results.steps.parquet"} <= set(files)
    assert len([f for f in files if f.startswith("episodes/")]) == len(ids)
    for f in files:
        where, _, name = f.rpartition("/")
        stem, dot, suffix = name.partition(".")
        shown = f"{where}/<id>{dot}{suffix}" if stem in ids else f
        assert f"`{shown}`" in readme, shown
    return readme


def test_the_readme_names_every_file_the_kit_holds(kit: dict[str, Path]) -> None:
    readme = _readme_names_every_file(kit["kit"])
    assert len(_ids(kit["kit"])) == EPISODES
    assert "videos/" not in readme and "bib-json/" not in readme  # only what this kit holds
    for column in ("`episode_id`", "`step`", "`surprise`", "a string", "an integer", "a floating-point number"):
        assert column in readme
    assert "bib check-submission KIT RUN" in readme and "bib score inverse-planner KIT --out RUN" in readme
    assert "SAMPLE" in readme
    secret = kit["key"].read_text()
    assert not any(line.split(",")[-1] in readme for line in secret.splitlines()[2:])  # no real id


def test_the_sample_submission_passes_and_scores_chance(kit: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    sample = kit["kit"] / "sample-submission"
    code, out, err = _check(capsys, kit["kit"], sample)
    assert (code, err) == (0, "")
    assert out.startswith(f"OK: {sample / 'results.csv'}: {EPISODES} episodes of kit ") and "steps, counts match" in out
    rows = (sample / "results.csv").read_text().splitlines()
    assert rows[0] == "episode_id,surprise" and [r.split(",")[0] for r in rows[1:]] == _ids(kit["kit"])
    assert {r.split(",")[1] for r in rows[1:]} == {"0.0"}
    from bib.episode import load_episode

    table = pq.read_table(sample / "results.steps.parquet")
    assert table.schema.field("step").type == pa.int32() and table.schema.field("surprise").type == pa.float64()
    assert table.num_rows == sum(load_episode(kit["kit"] / "episodes" / f"{i}.json").test.n_steps
                                 for i in _ids(kit["kit"]))
    code, out, _ = run_cli(capsys, "evaluate", str(kit["key"]), str(sample), "--json")
    assert code == 0 and {v["accuracy"] for v in json.loads(out)["conditions"].values()} == {0.5}


def test_a_bib_score_run_passes(kit: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _check(capsys, kit["kit"], kit["run"])
    assert (code, err) == (0, "") and f"{EPISODES} episodes" in out
    n = pq.read_metadata(kit["run"] / "results.steps.parquet").num_rows
    assert f"results.steps.parquet: {n} steps" in out
    code, out, _ = run_cli(capsys, "check-submission", str(kit["kit"]), str(kit["run"] / "results.csv"), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["ok"] is True and doc["episodes"] == EPISODES and doc["n_steps"] == n
    assert sum(doc["conditions"].values()) == EPISODES and len(doc["conditions"]) == CONDITIONS
    lone = kit["root"] / "lone.csv"  # the CSV alone (no Parquet beside it) is a submission too
    shutil.copyfile(kit["run"] / "results.csv", lone)
    code, out, _ = _check(capsys, kit["kit"], lone)
    assert code == 0 and out.rstrip().endswith("; no per-step Parquet")


def _rewrite_csv(path: Path, edit) -> None:  # type: ignore[no-untyped-def]
    lines = path.read_text().splitlines()
    path.write_text("\n".join(edit(lines)) + "\n")


def _rewrite_steps(path: Path, edit) -> None:  # type: ignore[no-untyped-def]
    pq.write_table(edit(pq.read_table(path)), path)


CSV_CASES = {
    "missing": (lambda ls: ls[:-1], r"results\.csv: 1 episode\(s\) have no row: e[0-9a-f]{16}$"),
    "foreign": (lambda ls: [*ls, "e0000000000000000,1.0"], rf"row {EPISODES + 2}: unknown episode id 'e0000000000000000'$"),
    "twice": (lambda ls: [*ls, ls[1]], rf"row {EPISODES + 2}: episode 'e[0-9a-f]{{16}}' appears again \(first at row 2\)$"),
    "nan": (lambda ls: [ls[0], ls[1].split(",")[0] + ",nan", *ls[2:]], r"row 2: surprise of 'e[0-9a-f]{16}' is nan \(must be finite\)$"),
    "text": (lambda ls: [ls[0], ls[1].split(",")[0] + ",high", *ls[2:]], r"row 2: surprise 'high' is not a number$"),
    "header": (lambda ls: ["id,score", *ls[1:]], r"header must be 'episode_id,surprise', got 'id,score'$"),
    "other kit": (lambda ls: [ls[0], *(f"f{line[1:]}" for line in ls[1:])],
                  rf"none of its {EPISODES} episode ids is in the kit .*; these are results on another kit$"),
}


@pytest.mark.parametrize("case", list(CSV_CASES))
def test_a_bad_results_csv_is_one_line(kit: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       case: str) -> None:
    edit, message = CSV_CASES[case]
    results = _copy_run(kit, tmp_path / "run")
    (tmp_path / "run" / "results.steps.parquet").unlink()
    _rewrite_csv(results, edit)
    code, out, err = _check(capsys, kit["kit"], tmp_path / "run")
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("bib: error: "), err
    assert re.search(message, err.rstrip()), err


def _longest_rows(t: pa.Table) -> list[int]:
    """The rows of the episode with the most steps (the set is drawn from a secret seed, so its first episode's test
    trial may be as short as two steps: an edit that needs three steps takes the longest episode)."""
    ids = t.column("episode_id").to_pylist()
    longest = max(set(ids), key=lambda e: (ids.count(e), e))
    return [i for i, e in enumerate(ids) if e == longest]


def _drop_last_step(t: pa.Table) -> pa.Table:
    last = _longest_rows(t)[-1]
    return t.take([i for i in range(t.num_rows) if i != last])


def _repeat_first_step(t: pa.Table) -> pa.Table:
    """The longest episode's steps 1, 2, 3, ... become 1, 1, 3, ..."""
    rows = _longest_rows(t)
    assert len(rows) >= 3, rows
    step = t.column("step").to_numpy().copy()
    step[rows[1]] = step[rows[0]]
    return t.set_column(1, "step", pa.array(step.astype(np.int32)))


def _set_value(t: pa.Table, value: float) -> pa.Table:
    values = t.column("surprise").to_numpy().copy()
    values[0] = value
    return t.set_column(2, "surprise", pa.array(values))


STEP_CASES = {
    "not parquet": (None, r"results\.steps\.parquet: not a readable Parquet file"),
    "no column": (lambda t: t.drop_columns(["step"]), r"no column 'step' \(the columns are episode_id, step, surprise\)$"),
    "step type": (lambda t: t.set_column(1, "step", t.column("step").cast(pa.float64())),
                  r"column 'step' is double, must be an integer$"),
    "surprise type": (lambda t: t.set_column(2, "surprise", t.column("surprise").cast(pa.string())),
                      r"column 'surprise' is string, must be a floating-point number$"),
    "null": (lambda t: t.set_column(2, "surprise", pa.array([None] + t.column("surprise").to_pylist()[1:], pa.float64())),
             r"column 'surprise' has 1 empty value\(s\)$"),
    "inf": (lambda t: _set_value(t, math.inf), r"row 1: surprise of 'e[0-9a-f]{16}' at step 1 is inf \(must be finite\)$"),
    "steps count": (_drop_last_step, r"episode 'e[0-9a-f]{16}' has \d+ steps; its test trial has \d+$"),
    "steps repeat": (_repeat_first_step,
                     r"episode 'e[0-9a-f]{16}': steps must be 1\.\.\d+, each once \(got 1, 1, 3"),
    "foreign": (lambda t: pa.concat_tables([t, pa.table({"episode_id": ["e0000000000000000"], "step": pa.array([1], pa.int32()),
                                                          "surprise": [1.0]})]),
                r"row \d+: unknown episode id 'e0000000000000000'$"),
    "missing": (lambda t: t.filter(pa.compute.not_equal(t.column("episode_id"), t.column("episode_id")[0])),
                r"no per-step surprise for 1 episode\(s\), e\.g\. e[0-9a-f]{16}$"),
    "max differs": (lambda t: _set_value(t, 1e6), r"episode 'e[0-9a-f]{16}': the max of its steps is 1000000\.0, but results\.csv says "),
}


@pytest.mark.parametrize("case", list(STEP_CASES))
def test_a_bad_steps_parquet_is_one_line(kit: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         case: str) -> None:
    import pyarrow.compute  # noqa: F401 (pa.compute in the cases)

    edit, message = STEP_CASES[case]
    _copy_run(kit, tmp_path / "run")
    steps = tmp_path / "run" / "results.steps.parquet"
    if edit is None:
        steps.write_bytes(b"PAR1 not a footer")
    else:
        _rewrite_steps(steps, edit)
    code, out, err = _check(capsys, kit["kit"], tmp_path / "run")
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("bib: error: "), err
    assert re.search(message, err.rstrip()), err
    if case != "steps count":  # the same rule refuses the file in `bib evaluate KEY RESULTS` (one source of the rules)
        code, _, err2 = run_cli(capsys, "evaluate", str(kit["key"]), str(tmp_path / "run"))
        assert code == 2 and err2 == err


def test_not_a_kit_is_one_line(kit: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _check(capsys, tmp_path, kit["run"])
    assert code == 2 and err == f"bib: error: {tmp_path}: no kit.csv inside (not a `bib blind` kit folder)\n"
    code, _, err = _check(capsys, kit["kit"], tmp_path / "nothing")
    assert code == 2 and err == f"bib: error: {tmp_path / 'nothing'}: no such file or folder\n"


def test_the_readme_of_a_kit_with_videos_and_bib_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bib.challenge.submission import write_kit_docs
    from bib.render.frames import RenderSettings
    from bib.stimuli.build import build
    from bib.stimuli.kit import make_kit

    build([("preference", 2), ("efficiency-path", 2)], 7, tmp_path / "set", video=True,
          settings=RenderSettings(cell_px=4, fps=5))
    make_kit(tmp_path / "set", tmp_path / "kit", tmp_path / "key.csv", fmt="bib-json", seed=2, progress=False,
             allow_public=True, extras=write_kit_docs)
    assert sorted(p.name for p in (tmp_path / "kit").iterdir()) == ["README.md", "bib-json", "episodes", "kit.csv",
                                                                     "sample-submission", "videos"]
    readme = _readme_names_every_file(tmp_path / "kit")
    assert "`videos/<id>.mp4`" in readme and "`bib-json/<id>.json`" in readme and "- preference: 4" in readme
    code, out, _ = _check(capsys, tmp_path / "kit", tmp_path / "kit" / "sample-submission")
    assert code == 0 and "8 episodes" in out
