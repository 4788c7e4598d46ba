"""A spec without the controlled-set options reproduces the sets of before them, byte for byte.

``tests/fixtures/legacy_hashes.json`` holds the hashes of a small set built by commit df2cb3c
(before Boltzmann agents, twins, catch pairs and graded difficulty; see
``tests/fixtures/make_legacy_hashes.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

from bib.stimuli.build import build

FIXTURES = Path(__file__).parent / "fixtures"


def _make_legacy():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_legacy_hashes", FIXTURES / "make_legacy_hashes.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_deterministic_set_is_byte_identical_to_the_legacy_build(tmp_path):
    want = json.loads((FIXTURES / "legacy_hashes.json").read_text(encoding="utf-8"))
    mod = _make_legacy()
    build([tuple(u) for u in want["units"]], want["seed"], tmp_path, workers=2)
    got = mod.digest(tmp_path)
    assert got["episodes"] == want["episodes"]
    assert got["manifest_old_columns"] == want["manifest_old_columns"]
