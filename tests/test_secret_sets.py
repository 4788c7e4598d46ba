"""Secret sets (issue 38 item 1): `bib generate --secret-seed`, and `bib blind` refusing a set anyone can rebuild.

The generator is public and seeded: a kit of a set built from a spec's own seed can be looked up in a
regenerated copy. Only a set whose seed was drawn from the operating system and kept in its own folder
makes a blind kit; any other needs --allow-public, and then the key and `bib evaluate KEY` say so.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import zlib
from pathlib import Path

import numpy as np
import pytest
from cli_run import run_cli

from bib.episode import load_episode
from bib.stimuli.origin import PUBLIC_NOTE, SECRET_BITS
from bib.tasks import make_unit, unit_seed
from bib.tasks.options import LEGACY

os.environ["BIB_NO_PROGRESS"] = "1"


def _job_sets(folder: Path) -> list[dict[str, object]]:
    return json.loads((folder / "provenance.json").read_text())["job"]["sets"]


def _results(kit: Path, path: Path) -> Path:
    ids = [line.split(",")[0] for line in (kit / "kit.csv").read_text().splitlines()[1:]]
    path.write_text("episode_id,surprise\n" + "".join(f"{i},{n % 3}\n" for n, i in enumerate(ids)))
    return path


@pytest.fixture(scope="module")
def secret(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A bib-ctrl set (2 units per task) generated with --secret-seed, and what the command printed."""
    from bib.cli import main

    out = tmp_path_factory.mktemp("secret") / "set"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit) as info:
        main(["generate", "bib-ctrl", "--secret-seed", "--limit", "2", "--out", str(out)])
    assert info.value.code in (0, None)
    return out, buf.getvalue()


def test_a_secret_seed_is_drawn_from_the_os_kept_in_the_set_and_said(secret: tuple[Path, str]) -> None:
    out, printed = secret
    (entry,) = _job_sets(out)
    seed = entry["seed"]
    assert entry["set"] == "bib-ctrl" and entry["secret"] is True and isinstance(seed, int)
    assert 0 <= seed < 2**SECRET_BITS
    assert f"seed = {seed}" in (out / "spec.toml").read_text().splitlines()  # the organiser's copy rebuilds from it
    assert "drawn from the operating system (128 bits)" in printed and f"keep {out} private" in printed
    assert str(out / "provenance.json") in printed and str(out / "spec.toml") in printed
    # every unit is the unit of that seed, whole: the high 64 bits count
    ep = load_episode(next((out / "episodes").glob("preference-000000-*.json")))
    assert ep.seed == unit_seed(seed, "preference", 0, ep_options(out, "preference"))


def ep_options(out: Path, task: str):  # noqa: ANN201 (TaskOptions)
    from bib.stimuli.spec import load_spec

    return load_spec(out / "spec.toml").options()[task]


def test_the_whole_128_bit_seed_counts_and_small_seeds_keep_their_units() -> None:
    big = 2**100 + 20211207
    assert unit_seed(big, "preference", 3) != unit_seed(big & (2**64 - 1), "preference", 3)
    # a seed below 2**64 gives the unit seed it always gave (the 64-bit masked entropy, computed here anew)
    for s in (0, 7, 20211207, 2**64 - 1):
        hi, lo = np.random.SeedSequence([s, zlib.crc32(b"preference"), 3]).generate_state(2)
        assert unit_seed(s, "preference", 3, LEGACY) == (int(hi) << 31) ^ int(lo)
    assert unit_seed(-1, "preference", 3) == unit_seed(2**64 - 1, "preference", 3)  # negatives as before


def test_secret_seeds_have_128_bits() -> None:
    from bib.stimuli.origin import draw_secret_seed

    seeds = [draw_secret_seed() for _ in range(64)]
    assert len(set(seeds)) == 64 and all(0 <= s < 2**128 for s in seeds)
    assert max(s.bit_length() for s in seeds) == 128  # fails one time in 2**64


def test_a_rerun_resumes_with_the_kept_seed_and_two_sets_differ(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_cli(capsys, "generate", "--task", "preference", "--n", "2", "--secret-seed", "--out", str(a))[0] == 0
    manifest = (a / "manifest.csv").read_bytes()
    code, out, _ = run_cli(capsys, "generate", "--task", "preference", "--n", "2", "--secret-seed", "--out", str(a))
    assert code == 0 and "0 units generated, 2 kept" in out and "the one this folder keeps" in out
    assert (a / "manifest.csv").read_bytes() == manifest
    assert "spec.toml" not in out and str(a / "provenance.json") in out  # --task sets keep no spec.toml
    assert run_cli(capsys, "generate", "--task", "preference", "--n", "2", "--secret-seed", "--out", str(b))[0] == 0
    assert _job_sets(a)[0]["seed"] != _job_sets(b)[0]["seed"]
    trials = {f.name: load_episode(f).trials for f in (a / "episodes").iterdir()}
    assert all(load_episode(f).trials != trials[f.name] for f in (b / "episodes").iterdir())


def test_seed_and_secret_seed_are_refused_together(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "generate", "bib-ctrl", "--seed", "3", "--secret-seed", "--out", str(tmp_path / "s"))
    assert code == 2 and err.strip() == "bib: error: give at most one of --seed and --secret-seed"
    assert not (tmp_path / "s").exists()


def test_blind_refuses_every_set_anyone_can_rebuild(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bib.episode import save_episode

    spec_seed, chosen, loose = tmp_path / "spec-seed", tmp_path / "chosen", tmp_path / "loose"
    assert run_cli(capsys, "generate", "--task", "preference", "--n", "2", "--out", str(spec_seed))[0] == 0
    assert run_cli(capsys, "generate", "--task", "preference", "--n", "2", "--seed", "99", "--out", str(chosen))[0] == 0
    loose.mkdir()
    for ep in make_unit("preference", 0, 5):
        save_episode(ep, loose / f"{ep.id}.json")
    assert run_cli(capsys, "export", str(spec_seed), "--out", str(tmp_path / "bib"))[0] == 0
    assert run_cli(capsys, "import", str(tmp_path / "bib"), "--out", str(tmp_path / "imported"))[0] == 0
    cases = {spec_seed: "the set preference was generated from seed 0, not from a seed drawn by --secret-seed",
             chosen: "the set preference was generated from seed 99, not from a seed drawn by --secret-seed",
             loose: "an episode file of no generated set, so nothing records a secret seed",
             tmp_path / "imported": "imported from recordings (`bib import`), which are public"}
    for folder, why in cases.items():
        kit, key = tmp_path / f"kit-{folder.name}", tmp_path / f"key-{folder.name}.csv"
        code, out, err = run_cli(capsys, "blind", str(folder), "--out", str(kit), "--key", str(key))
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"bib: error: {folder}: anyone can rebuild this set (") and why in err
        assert "--secret-seed" in err and "--allow-public" in err
        assert not kit.exists() and not key.exists()


def test_a_secret_sets_kit_names_no_seed_and_evaluates_quietly(secret: tuple[Path, str], tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = secret
    seed = str(_job_sets(out)[0]["seed"])
    kit, key = tmp_path / "kit", tmp_path / "key.csv"
    code, printed, _ = run_cli(capsys, "blind", str(out), "--out", str(kit), "--key", str(key))
    assert code == 0 and PUBLIC_NOTE not in printed
    header = json.loads(key.read_text().splitlines()[0].removeprefix("# bib blind key "))
    assert header["sets"] == [{"limited": True, "name": "bib-ctrl", "seed": "secret"}] and "public" not in header
    assert seed not in key.read_text() and not [f for f in kit.rglob("*") if f.is_file() and seed.encode() in f.read_bytes()]
    code, table, _ = run_cli(capsys, "evaluate", str(key), str(_results(kit, tmp_path / "r.csv")), "--json")
    doc = json.loads(table)
    assert code == 0 and "note" not in doc and doc["set"]["seed"] == "secret"
    # evaluated on the set itself, the seed still shows as "secret" (evaluation.json may be published)
    code, table, _ = run_cli(capsys, "score", "random", str(out), "--out", str(tmp_path / "run"))
    code, table, _ = run_cli(capsys, "evaluate", str(out), str(tmp_path / "run"), "--json")
    assert code == 0 and seed not in table and json.loads(table)["sets"][0]["seed"] == "secret"


def test_allow_public_writes_the_note_into_the_key_and_evaluate_prints_it(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    folder, kit, key = tmp_path / "set", tmp_path / "kit", tmp_path / "key.csv"
    assert run_cli(capsys, "generate", "--task", "preference", "--n", "3", "--out", str(folder))[0] == 0
    code, printed, _ = run_cli(capsys, "blind", str(folder), "--out", str(kit), "--key", str(key), "--allow-public")
    why = "the set preference was generated from seed 0, not from a seed drawn by --secret-seed"
    assert code == 0 and f"{PUBLIC_NOTE} (" in printed and why in printed
    header = json.loads(key.read_text().splitlines()[0].removeprefix("# bib blind key "))
    assert header["public"] is True and header["note"].startswith("public: scores are not blind (") and why in header["note"]
    results = _results(kit, tmp_path / "r.csv")
    code, table, _ = run_cli(capsys, "evaluate", str(key), str(results))
    assert code == 0 and table.splitlines()[0] == header["note"]
    code, table, _ = run_cli(capsys, "evaluate", str(key), str(results), "--json")
    assert code == 0 and json.loads(table)["note"] == header["note"]
    import bib

    assert bib.evaluate(key, results).note == header["note"]


def test_the_public_generator_rebuilds_none_of_a_secret_set(secret: tuple[Path, str], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The attack of issue 38: regenerate the shipped spec from its seed and look every episode up by its
    trials. On the spec's own seed every episode is found; on the secret set none is."""
    out, _ = secret
    public = tmp_path / "public"
    assert run_cli(capsys, "generate", "bib-ctrl", "--limit", "2", "--out", str(public))[0] == 0

    def shown(folder: Path) -> set[str]:
        return {json.dumps([[t.layout, t.path] for t in load_episode(f).trials], default=str)
                for f in (folder / "episodes").iterdir()}

    looked_up = shown(public)
    assert len(looked_up) > 30
    assert not shown(out) & looked_up
    assert run_cli(capsys, "generate", "bib-ctrl", "--limit", "2", "--out", str(tmp_path / "again"))[0] == 0
    assert shown(tmp_path / "again") == looked_up  # the attack works on a public set


def test_the_demo_runs_the_organisers_protocol_on_a_secret_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bib.challenge.demo import run_blind
    from bib.demo import STEPS

    assert ("blind scoring: a --secret-seed set, its kit scored and evaluated against the key",
            "bib.challenge.demo:run_blind") in STEPS
    run_blind(tmp_path)
    printed = capsys.readouterr().out
    (entry,) = _job_sets(tmp_path / "blind" / "set")
    assert entry["secret"] is True and "drawn from the operating system (128 bits)" in printed
    header = json.loads((tmp_path / "blind" / "key.csv").read_text().splitlines()[0].removeprefix("# bib blind key "))
    assert header["sets"][0]["seed"] == "secret" and "public" not in header
    assert "inverse-planner on the kit, against the key (bib evaluate KEY RESULTS): mean of conditions" in printed
    kit = tmp_path / "blind" / "kit"
    assert "bib check-submission" in (kit / "README.md").read_text()  # the kit a submitter gets from bib blind
    assert sorted(p.name for p in (kit / "sample-submission").iterdir())
    run_blind(tmp_path)  # a rerun resumes the set with its kept seed and writes a new kit
    assert _job_sets(tmp_path / "blind" / "set") == [entry] and "the one this folder keeps" in capsys.readouterr().out
