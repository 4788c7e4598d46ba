"""Complete sets only (issue 39 item 5): generate and import write ``complete.json`` last; a set that is
being written or was never finished is refused by every reader of sets (bib.stimuli.complete)."""

from __future__ import annotations

import json

import pytest

from bib.errors import BibInputError
from bib.io import sha256_file
from bib.stimuli import build as build_module
from bib.stimuli.build import build
from bib.stimuli.complete import COMPLETE, check_complete
from bib.stimuli.sets import find_episodes

UNITS = [("preference", 3)]


def test_a_set_killed_mid_write_is_refused_and_its_rerun_accepted(tmp_path, monkeypatch):
    out = tmp_path / "set"
    real = build_module.build_unit
    calls = []

    def dies_on_the_third(job):  # noqa: ANN001, ANN202
        calls.append(job)
        if len(calls) == 3:
            raise KeyboardInterrupt  # as a Ctrl-C or a kill mid-run
        return real(job)

    monkeypatch.setattr(build_module, "build_unit", dies_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        build(UNITS, 7, out)
    assert json.loads((out / COMPLETE).read_text()) == {"complete": False}
    assert len((out / "manifest.csv").read_text().splitlines()) == 1 + 2 * 2  # two finished units listed
    with pytest.raises(BibInputError, match=rf"^{out}: the set was never finished \(its complete.json says"):
        find_episodes(out)
    monkeypatch.setattr(build_module, "build_unit", real)
    summary = build(UNITS, 7, out)  # the rerun resumes and finishes
    assert (summary.built, summary.kept) == (1, 2)
    doc = json.loads((out / COMPLETE).read_text())
    assert doc == {"complete": True, "episodes": 6, "manifest_sha256": sha256_file(out / "manifest.csv")}
    assert len(find_episodes(out).refs) == 6
    # the marker is the same bytes for the same seed: sets stay byte-identical
    fresh = build(UNITS, 7, tmp_path / "fresh")
    assert (fresh.out / COMPLETE).read_bytes() == (out / COMPLETE).read_bytes()


def test_older_sets_without_a_marker_migrate(tmp_path):
    out = tmp_path / "set"
    build(UNITS, 7, out)
    (out / COMPLETE).unlink()  # a set bib wrote before the marker existed, without provenance.json
    check_complete(out)  # every listed episode is there: accepted
    (out / "provenance.json").write_text("{}")
    (out / "episodes" / "preference-000002-expected.json").unlink()
    check_complete(out)  # bib finished it (provenance.json came last): accepted; `bib validate` checks it in full
    (out / "provenance.json").unlink()
    with pytest.raises(BibInputError, match="the set is incomplete: episodes/preference-000002-expected.json"):
        check_complete(out)


def test_generate_writes_the_marker_last(tmp_path, monkeypatch, capsys):
    from bib.cli import main

    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    out = tmp_path / "o"
    with pytest.raises(SystemExit) as exc:
        main(["generate", "--task", "single-object", "--n", "2", "--out", str(out)])
    assert exc.value.code == 0, capsys.readouterr()
    doc = json.loads((out / COMPLETE).read_text())
    assert doc["complete"] is True and doc["episodes"] == 2
