"""The policy network (tiny training, checkpoints) and the probes on its activations."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from bib.agency.env import MOVES, load_grid
from bib.agency.policy_net import (
    CHANNELS,
    PAD,
    READOUTS,
    PolicyNet,
    PolicyNetAgent,
    checkpoint_meta,
    encode,
    load,
    save,
    train,
    training_states,
)
from bib.agency.probes import (
    EOS,
    MAP_CLASSES,
    PlanProbe,
    Steps,
    capture,
    cell_labels,
    collect,
    plan_metrics,
    plan_targets,
    run_map_probes,
    run_plan_probe,
)
from bib.cli import app
from bib.errors import BibInputError
from bib.observers.device import torch_threads


@pytest.fixture(scope="module")
def tiny_model() -> PolicyNet:
    with torch_threads(1):
        x, y = training_states({"navigation": 6, "key-door": 2}, seed=7)
        return train(x, y, epochs=1, batch=128, seed=0)


def test_training_targets_are_uniform_over_pi_star() -> None:
    x, y = training_states({"navigation": 2, "key-door": 1}, seed=3)
    assert x.shape[1:] == (len(CHANNELS), PAD, PAD) and len(x) == len(y)
    np.testing.assert_allclose(y.sum(1), 1.0, rtol=1e-6)
    assert set(np.unique(np.round(y * 6))) <= {0, 2, 3, 6}  # 1, 1/2 or 1/3 per optimal move
    assert (x[:, CHANNELS.index("agent")].sum(axis=(1, 2)) == 1).all()
    assert x[:, CHANNELS.index("carrying")].max() == 1  # key grids add states with the key in hand


def test_checkpoint_round_trip_and_bad_files(tmp_path, tiny_model) -> None:
    path = tmp_path / "net.pt"
    save(tiny_model, path, meta={"why": "test"})
    again = load(path)
    grid = load_grid("navigation", 3, 0)
    x = torch.from_numpy(encode(grid.layout, [grid.start]))
    with torch.inference_mode():
        assert torch.equal(tiny_model(x), again(x))
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(BibInputError, match=r"bad\.pt: not a readable checkpoint \(not a torch weights file\)$"):
        load(tmp_path / "bad.pt")
    with pytest.raises(BibInputError, match="no such checkpoint"):
        load(tmp_path / "missing.pt")
    agent = PolicyNetAgent(again, np.random.default_rng(0), temperature=0)
    probs = agent.probabilities(grid.layout, [grid.start])
    assert agent.act(grid.layout, grid.start) == MOVES[int(probs.argmax())]


def test_capture_reads_the_named_modules_and_removes_its_hooks(tiny_model) -> None:
    grid = load_grid("navigation", 12, 0)
    x = torch.from_numpy(encode(grid.layout, [grid.start, grid.start]))
    out, seen = capture(tiny_model, READOUTS, x)
    assert set(seen) == set(READOUTS)
    with torch.inference_mode():
        assert torch.allclose(out, tiny_model.head(seen["hidden"]))
        assert torch.allclose(seen["hidden"], tiny_model.hidden(torch.cat([seen["agent_readout"], seen["global_readout"]], 1)))
    assert all(not m._forward_hooks for m in tiny_model.modules())
    with pytest.raises(ValueError, match="no module"):
        capture(tiny_model, ["nope"], x)


def test_map_labels_and_plan_targets() -> None:
    grid = load_grid("navigation", 5, 0)  # 7 x 7
    lab = cell_labels(grid, grid.layout.agent.home)
    counts = np.bincount(lab.ravel(), minlength=len(MAP_CLASSES))
    assert counts[MAP_CLASSES.index("agent")] == 1 and counts[MAP_CLASSES.index("goal")] == 1
    assert counts[MAP_CLASSES.index("padding")] == PAD * PAD - 49
    assert counts[MAP_CLASSES.index("wall")] == len(grid.layout.walls)
    steps = Steps({}, np.zeros(3, int), np.zeros(3, int), np.zeros((3, 2), int), np.zeros(3, int),
                  np.zeros(3, bool), [[6, 2], [0] * 10, [4]], [grid])
    keep, targets = plan_targets(steps)
    assert keep.tolist() == [True, False, True]
    assert targets[0, :3].tolist() == [0, 1, EOS] and (targets[0, 3:] == -100).all()
    assert targets[1, :2].tolist() == [3, EOS]
    pred = np.array([[0, 1, EOS] + [0] * 7, [3, 0] + [0] * 8])
    m = plan_metrics(pred, targets)
    assert m["token_accuracy"] == pytest.approx(4 / 5) and m["exact"] == 0.5
    assert m["prefix_1"] == 1.0 and m["prefix_2"] == 0.5 and m["prefix_3"] == 1.0 and np.isnan(m["prefix_4"])
    probe = PlanProbe([3, 4, 5], hidden=16, layers=1, heads=2)
    assert probe([torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(2, 5)]).shape == (2, 10, 5)
    with pytest.raises(ValueError, match="1 to 4"):
        PlanProbe([3], layers=5)


def test_plan_probe_reads_a_plan_that_is_in_the_activations(tiny_model) -> None:
    with torch_threads(1):
        steps = collect(tiny_model, range(30), rollouts=1)
    code = np.zeros((len(steps.actions), 4), dtype=np.float32)  # plant the next move in one readout
    for i, a in enumerate(steps.actions):
        code[i, MOVES.index(int(a))] = 1.0
    steps.acts["agent_readout"] = code
    with torch_threads(1):
        res = run_plan_probe(steps, layers=1, hidden=32, epochs=10, lr=3e-3)
    assert res["prefix_1"] > 0.9 and res["prefix_1"] > res["baseline_prefix_1"] + 0.2
    assert 0.0 <= res["baseline"] <= 1.0


def test_map_probe_and_consistency_fields(tiny_model) -> None:
    with torch_threads(1):
        steps = collect(tiny_model, range(30), rollouts=1)
        rows = run_map_probes(steps, kinds=("mlp",), queries=16, epochs=2)
    (row,) = rows
    assert 0.0 <= row["accuracy"] <= 1.0 and 0.0 <= row["baseline"] <= 1.0
    assert row["test_rows"] % (PAD * PAD) == 0  # held-out steps are decoded on every cell
    assert 0.0 <= row["optimal_on_decoded"] <= 1.0
    assert row["recovered"] <= row["nonoptimal_moves"]


def test_probe_cli_writes_probes_json_and_report(tmp_path, monkeypatch, tiny_model) -> None:
    ckpt = tmp_path / "net.pt"
    save(tiny_model, ckpt)
    res = CliRunner().invoke(app, ["agency", "probe", "--out", str(tmp_path / "p"), "--checkpoint", str(ckpt),
                                   "--grids", "1", "--rollouts", "1", "--layers", "1", "--map-epochs", "1",
                                   "--plan-epochs", "1", "--plan-hidden", "32"])
    assert res.exit_code == 0, res.output
    payload = json.loads((tmp_path / "p" / "probes.json").read_text())
    assert [r["probe"] for r in payload["rows"]] == ["map-linear", "map-mlp", "plan-1L"]
    assert payload["rows"][2]["hidden"] == 32
    res = CliRunner().invoke(app, ["agency", "report", str(tmp_path / "p")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "p" / "plots" / "probes.png").is_file() and "map-mlp" in res.output
    res = CliRunner().invoke(app, ["agency", "probe", "--out", str(tmp_path / "q"), "--layers", "9"])
    assert res.exit_code == 2 and "Invalid value for '--layers'" in res.output and not (tmp_path / "q").exists()
    # beside a run: probes.json is added and the run's own files stay; another job's folder is refused
    run = tmp_path / "run"
    res = CliRunner().invoke(app, ["agency", "run", "--agent", "optimal", "--suite", "keys", "--grids", "1", "--no-meg",
                                   "--out", str(run)])
    assert res.exit_code == 0, res.output
    kept = {f: (run / f).read_bytes() for f in ("grids.csv", "rollouts.jsonl", "run.json", "provenance.json")}
    probe = ["agency", "probe", "--checkpoint", str(ckpt), "--grids", "1", "--rollouts", "1", "--layers", "1",
             "--map-epochs", "1", "--plan-epochs", "1", "--plan-hidden", "32", "--out"]
    res = CliRunner().invoke(app, [*probe, str(run)])
    assert res.exit_code == 0, res.output
    assert {f: (run / f).read_bytes() for f in kept} == kept and (run / "probes.json").is_file()
    assert "key-door" in (run / "tables.md").read_text() and "map-mlp" in (run / "tables.md").read_text()
    res = CliRunner().invoke(app, ["agency", "train-policy", "--grids", "1", "--epochs", "1",
                                   "--out", str(tmp_path / "net")])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, [*probe, str(tmp_path / "net")])
    assert isinstance(res.exception, BibInputError) and "folder holds the output of" in str(res.exception)
    assert not (tmp_path / "net" / "probes.json").exists()


def test_shipped_checkpoint_loads_safely_and_navigates_open_rooms() -> None:
    from bib.agency.env import run_rollouts
    from bib.agency.metrics import grid_metrics
    from bib.agency.policy_net import DEFAULT_CHECKPOINT, checkpoint_meta

    model = load(DEFAULT_CHECKPOINT)  # weights_only=True inside
    assert "bib agency train-policy" in checkpoint_meta(DEFAULT_CHECKPOINT)["command"]
    for index in (0, 6, 12, 36):  # open rooms (density 0) of sizes 7, 9, 11, 9: greedy moves are all optimal
        grid = load_grid("navigation", index, 0)
        ros = run_rollouts([PolicyNetAgent(model, np.random.default_rng(0), temperature=0)], grid)
        row = grid_metrics(grid, ros, meg=False)
        assert row["accuracy"] == 1.0 and row["success"] == 1.0


def test_train_policy_writes_into_an_out_folder_and_checks_it_first(tmp_path, monkeypatch) -> None:
    from bib.cli import main

    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    res = CliRunner().invoke(app, ["agency", "train-policy", "--out", str(tmp_path / "net"), "--grids", "1", "--epochs", "1"])
    assert res.exit_code == 0, res.output
    assert {p.name for p in (tmp_path / "net").iterdir()} == {"policy_net.pt", "provenance.json"}
    assert "bib agency train-policy" in checkpoint_meta(tmp_path / "net" / "policy_net.pt")["command"]
    load(tmp_path / "net" / "policy_net.pt")
    blocker = tmp_path / "net.pt"
    blocker.write_text("not a folder")
    with pytest.raises(SystemExit) as exc:
        main(["agency", "train-policy", "--out", str(blocker), "--grids", "1", "--epochs", "1"])
    assert exc.value.code == 2 and blocker.read_text() == "not a folder"
