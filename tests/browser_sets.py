"""Small stimulus sets for the report and experiment tests (built once per test session)."""

from __future__ import annotations

from pathlib import Path

TINY_SPEC = """\
name = "tiny-study"
seed = 5
[render]
cell_px = 8
fps = 10
speed = 5.0
pause_start = 0.2
pause_end = 0.3
unlock_pause = 0.2
gap = 0.1
codec = "h264"
video = true
per_trial = true
[[tasks]]
id = "preference"
n = 1
[[tasks]]
id = "efficiency-path"
n = 1
[orders]
n_orders = 4
"""


def build_tiny_set(folder: Path) -> Path:
    """A 2-pair set (preference, efficiency-path) with videos, per-trial videos and 4 orders of 20 trials."""
    from bib.stimuli.build import build_spec
    from bib.stimuli.spec import load_spec

    spec_file = folder / "tiny.toml"
    spec_file.write_text(TINY_SPEC, encoding="utf-8")
    out = folder / "tiny"
    build_spec(load_spec(spec_file), out, video=True, workers=1, record=True)
    return out


_BUILT: dict[str, Path] = {}


def tiny_set(tmp_path_factory) -> Path:  # noqa: ANN001 (pytest's TempPathFactory)
    """The tiny set, built once per test process (read-only for the tests that share it)."""
    if "tiny" not in _BUILT:
        _BUILT["tiny"] = build_tiny_set(tmp_path_factory.mktemp("tiny-set"))
    return _BUILT["tiny"]
