"""Bounded input (issue 39): specs, configs and report inputs nested 5,000 deep; render speeds that
overflow or ask for gigabytes; numbers written as booleans or text; a FIFO where a legacy set's
``spec.toml`` should be. Each is one line, never a traceback, a hang or a swelling. (A FIFO ``render.json``
falls back to the set's spec.toml: tests/test_guard.py, since a success does not fit this corpus.)"""

from __future__ import annotations

import os
from pathlib import Path

from hostile import Case
from hostile.build import chain, write
from hostile.cases_formulas import LOOKING_TIMES

DEEP_TOML = "x = " + "[" * 5000 + "]" * 5000 + "\n"
DEEP_INLINE = "x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n"
DEEP_JSON = "[" * 5000 + "]" * 5000
SPEC = 'name = "x"\nseed = 1\n[[tasks]]\nid = "single-object"\nn = 1\n[render]\nvideo = true\n'


def _spec(render: str) -> str:
    return SPEC + render + "\n"


def _legacy_with_fifo_spec(out: Path) -> None:
    """A set generated before provenance.json existed, whose spec.toml is a FIFO."""
    out.mkdir()
    (out / "manifest.csv").write_text((Path(__file__).parents[1] / "bad_inputs" / "set" / "manifest.csv").read_text())
    os.mkfifo(out / "spec.toml")


CASES = [
    Case("generate-spec-nested-5000", ["generate", "{in}/deep.toml", "--out", "{out}"],
         build=write("deep.toml", DEEP_TOML), culprit="{in}/deep.toml: TOML nested too deeply (more than 64 levels)"),
    Case("generate-spec-inline-tables-nested-5000", ["generate", "{in}/deep.toml", "--out", "{out}"],
         build=write("deep.toml", DEEP_INLINE), culprit="{in}/deep.toml: TOML nested too deeply"),
    Case("analyze-spec-nested-5000", ["analyze", "{in}/lt.csv", "--spec", "{in}/deep.toml"],
         build=chain(write("lt.csv", LOOKING_TIMES), write("deep.toml", DEEP_TOML)),
         culprit="{in}/deep.toml: TOML nested too deeply"),
    Case("train-config-nested-5000", ["train", "bc-mlp", "{in}/set", "--config", "{in}/deep.toml", "--out", "{out}"],
         build=write("deep.toml", DEEP_TOML), culprit="{in}/deep.toml: TOML nested too deeply"),
    Case("report-json-nested-5000", ["report", "{in}/deep.json", "--out", "{out}"],
         build=write("deep.json", DEEP_JSON), culprit="{in}/deep.json: JSON nested too deeply"),
    Case("evaluate-table-json-nested-65", ["report", "{in}/deep.json", "--out", "{out}"],
         build=write("deep.json", '{"conditions": ' + "[" * 65 + "]" * 65 + "}"),
         culprit="{in}/deep.json: JSON nested too deeply (more than 64 levels)"),
    *[Case(f"generate-render-speed-{name}", ["generate", "{in}/s.toml", "--out", "{out}"],
           build=write("s.toml", _spec(f"speed = {value}")), culprit=f"field 'render.speed': Input should be {why}")
      for name, value, why in [("5e-324", "5e-324", "greater than or equal to 0.1"),
                               ("1e-7", "1e-7", "greater than or equal to 0.1"),
                               ("nan", "nan", "a finite number"), ("inf", "inf", "a finite number"),
                               ("bool", "true", "a valid number"), ("text", '"2.5"', "a valid number")]],
    Case("generate-render-fps-bool", ["generate", "{in}/s.toml", "--out", "{out}"],
         build=write("s.toml", _spec("fps = true")), culprit="field 'render.fps': Input should be a valid integer"),
    Case("generate-render-cell-px-float", ["generate", "{in}/s.toml", "--out", "{out}"],
         build=write("s.toml", _spec("cell_px = 20.5")), culprit="field 'render.cell_px'"),
    Case("generate-legacy-spec-toml-is-a-fifo", ["generate", "--task", "single-object", "--n", "1", "--out", "{out}"],
         setup=_legacy_with_fifo_spec, culprit="{out}: folder holds"),
]
