"""Stimulus-set specs: the three shipped specs, one-line errors naming the field, CLI overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from bib.cli import main
from bib.errors import BibInputError
from bib.stimuli.spec import builtin_specs, load_spec, override, parse_spec, task_spec
from bib.tasks import REGISTRY, bib_folders, conditions, task_ids

ROOT = Path(__file__).resolve().parents[1]
EVAL_IDS = [c for c in conditions() if c in bib_folders("evaluation")]  # BIB's (AGENT's families have no BIB folder)
BACKGROUND_IDS = [t for t in task_ids("background") if t in bib_folders("background")]


def _need(ids: list[str]) -> None:
    missing = [i for i in ids if i not in REGISTRY]
    if missing:
        pytest.skip(f"tasks not registered yet: {', '.join(missing)}")


def test_bib_eval_spec_has_the_nine_conditions_sized_as_v11() -> None:
    _need(EVAL_IDS)
    spec = load_spec(ROOT / "stimuli" / "bib-eval.toml")
    sizes = dict(spec.units)
    assert sorted(sizes) == sorted(EVAL_IDS)
    assert sizes["instrumental-blocking"] == 327 and sizes["instrumental-inconsequential"] == 330
    assert sizes["inaccessible-goal"] == 1111 and sizes["efficiency-path"] == 1500
    assert sum(sizes.values()) == 8267
    assert (spec.render.cell_px, spec.render.fps) == (20, 25)
    assert spec.render.settings().frame_size(10, 10) == (200, 200)


def test_bib_background_spec_sizes() -> None:
    _need(BACKGROUND_IDS)
    spec = load_spec(ROOT / "stimuli" / "bib-background.toml")
    assert [t for t, _ in spec.units] == BACKGROUND_IDS
    assert [n for _, n in spec.units] == [10000, 10000, 4000, 4000]
    assert sum(n for _, n in spec.units) == 28000


def test_infant_pilot_spec_renders_for_a_lab() -> None:
    _need(["preference", "efficiency-path"])
    spec = load_spec(ROOT / "stimuli" / "infant-pilot.toml")
    assert [t.id for t in spec.tasks] == ["preference", "efficiency-path"]
    r = spec.render
    assert r.fps == 30 and r.video and r.per_trial and r.codec == "h264"
    s = r.settings()
    assert s.frame_size(10, 10) == (1280, 720)
    assert 10 * s.cell_px <= 720 and s.cell_px >= 40
    assert spec.orders is not None and spec.orders.n_orders % 4 == 0


KNOWN = sorted(REGISTRY)
GOOD = {"name": "x", "seed": 1, "tasks": [{"id": "single-object", "n": 3}]}


def _with(**changes):
    data = {k: (list(v) if isinstance(v, list) else v) for k, v in GOOD.items()}
    data.update(changes)
    return data


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        (_with(colour="red"), "colour", "unknown field"),
        (_with(tasks=[{"id": "single-object", "n": 1}, {"id": "single-object", "n": 1, "count": 2}]), "tasks[1].count", "unknown field"),
        (_with(tasks=[{"id": "single-object", "n": -1}]), "tasks[0].n", "greater than or equal to 0"),
        (_with(tasks=[{"id": "single-object", "n": 10**9}]), "tasks[0].n", "less than or equal"),
        (_with(tasks=[{"id": KNOWN[0], "n": 1}, {"id": KNOWN[-1], "n": 1}, {"id": "no-such-task", "n": 1}]),
         "tasks[2].id", "unknown task id 'no-such-task'"),
        (_with(tasks=[{"id": "single-object", "n": 1}, {"id": "single-object", "n": 2}]), "tasks[1].id", "already listed"),
        (_with(tasks=[]), "tasks", "at least 1"),
        (_with(tasks=[{"id": "single-object"}]), "tasks[0].n", "missing"),
        (_with(render={"cell_px": 2}), "render.cell_px", "greater than or equal to 4"),
        (_with(render={"cell_px": 80, "canvas": [1280, 720]}), "render.canvas", "cannot hold the 800 x 800 px grid"),
        (_with(render={"canvas": [301, 300]}), "render.canvas", "even frame sizes"),
        (_with(render={"codec": "divx"}), "render.codec", "unknown codec"),
        (_with(render={"per_trial": True}), "render.per_trial", "needs render.video"),
        (_with(render={"fps": "fast"}), "render.fps", "valid integer"),
        (_with(name="a b"), "name", "pattern"),
        (_with(orders={"n_orders": 4}), "orders", "evaluation conditions"),
    ],
)
def test_bad_specs_name_the_field_in_one_line(data, field, words) -> None:
    with pytest.raises(BibInputError) as info:
        parse_spec(data, "stimuli/x.toml")
    msg = str(info.value)
    assert msg.startswith(f"stimuli/x.toml: field '{field}': "), msg
    assert words in msg and "\n" not in msg


def test_orders_must_balance_across_tasks() -> None:
    _need(["preference", "efficiency-path"])
    data = _with(tasks=[{"id": "preference", "n": 2}, {"id": "efficiency-path", "n": 2}], orders={"n_orders": 6})
    with pytest.raises(BibInputError, match=r"field 'orders.n_orders': 6 cannot balance .* multiple of 4"):
        parse_spec(data, "s.toml")
    assert parse_spec({**data, "orders": {"n_orders": 8}}, "s.toml").orders.n_orders == 8


def test_load_spec_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[[tasks]]\nid = "single-object"\nn = \n')
    with pytest.raises(BibInputError, match=r"bad.toml: malformed TOML"):
        load_spec(bad)
    with pytest.raises(BibInputError, match=r"missing.toml: no such spec file"):
        load_spec(tmp_path / "missing.toml")
    ok = tmp_path / "ok.toml"
    ok.write_text('name = "ok"\nseed = 7\n[render]\nfps = 30\n[[tasks]]\nid = "single-object"\nn = 2\n')
    spec = load_spec(ok)
    assert spec.seed == 7 and spec.units == [("single-object", 2)] and spec.render.settings().fps == 30


def test_built_in_specs_load_by_name_from_any_folder(tmp_path: Path, monkeypatch) -> None:
    """The checkout's stimuli/*.toml are the packaged specs (so a wheel has them), found by a bare name."""
    checkout = sorted(p.name for p in (ROOT / "stimuli").glob("*.toml"))
    assert sorted(f"{name}.toml" for name in builtin_specs()) == checkout and len(checkout) >= 4
    monkeypatch.chdir(tmp_path)
    for name in ("bib-eval", "bib-ctrl.toml"):
        assert load_spec(name) == load_spec(ROOT / "stimuli" / (name.removesuffix(".toml") + ".toml"))
    with pytest.raises(BibInputError, match=r"^nope: no such spec file, and not a built-in spec \(bib-background, bib-ctrl, "
                       r"bib-eval, infant-pilot\)$"):
        load_spec("nope")
    (tmp_path / "bib-eval").write_text('name = "mine"\n[[tasks]]\nid = "single-object"\nn = 1\n')
    assert load_spec("bib-eval").name == "mine"  # a file of that name wins over the built-in
    with pytest.raises(BibInputError, match=r"^sub/bib-eval.toml: no such spec file$"):
        load_spec("sub/bib-eval.toml")  # a path with a folder is never a built-in name


def test_override_revalidates_and_keeps_other_fields() -> None:
    spec = parse_spec(_with(render={"fps": 30, "cell_px": 40}), "s.toml")
    new = override(spec, "s.toml", seed=9, cell_px=None, fps=12)
    assert (new.seed, new.render.fps, new.render.cell_px) == (9, 12, 40)
    with pytest.raises(BibInputError, match=r"^cli: field 'render.cell_px'"):
        override(spec, "cli", cell_px=1)


def test_task_spec_for_generate_task() -> None:
    spec = task_spec("single-object", 5)
    assert spec.units == [("single-object", 5)] and spec.seed == 0 and not spec.render.video
    with pytest.raises(BibInputError, match=r"^unknown task id 'nope'; known: .*single-object"):
        task_spec("nope", 1)


def test_cli_reports_a_bad_spec_in_one_line(tmp_path: Path, capsys) -> None:
    spec = tmp_path / "x.toml"
    spec.write_text('name = "x"\n[[tasks]]\nid = "single-object"\nn = 1\n[[tasks]]\nid = "single-object"\nn = 1\n'
                    '[[tasks]]\nid = "bogus"\nn = 2\n')
    with pytest.raises(SystemExit) as info:
        main(["generate", str(spec), "--out", str(tmp_path / "o")])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"bib: error: {spec}: field 'tasks[1].id'") or err.startswith(f"bib: error: {spec}: field 'tasks[2].id'")
    assert "\n" not in err
    with pytest.raises(SystemExit) as info:
        main(["generate", "--out", str(tmp_path / "o")])
    assert info.value.code == 2
    assert "exactly one of SPEC or --task ID" in capsys.readouterr().err
