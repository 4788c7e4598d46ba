"""The symbolic states' mud and occluder channels: what a viewer of the videos sees, in the grids the learned
observers, ``bib.data`` and the Gymnasium environments hand out; and checkpoints trained on the channels before them
(the legacy list), fed exactly what they were trained on."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch
from tiny_models import MODELS, TINY

from bib.errors import BibInputError
from bib.observers.bc import BCMLPObserver
from bib.observers.encoders import (
    DYNAMIC_CHANNELS,
    LEGACY_SYMBOLIC_CHANNELS,
    STATIC_CHANNELS,
    SYMBOLIC_CHANNELS,
    InputSpec,
    collate,
    encode_episode,
    frame_floats,
    frame_states,
    symbolic_states,
)
from bib.observers.learned import TrainConfig, read_checkpoint, save_checkpoint, torch_threads
from bib.observers.registry import make_observer
from bib.observers.training import run_training
from bib.tasks import make_unit

os.environ.setdefault("BIB_NO_PROGRESS", "1")

MUD, OCCLUDER = SYMBOLIC_CHANNELS.index("mud"), SYMBOLIC_CHANNELS.index("occluder")


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def agent_episodes():
    """A pair of each of AGENT's two families (cost-reward: mud; unobserved-constraints: an occluder)."""
    return make_unit("cost-reward", 0, 3) + make_unit("unobserved-constraints", 0, 3)


def mask(cells, height: int, width: int) -> np.ndarray:
    out = np.zeros((height, width), dtype=np.float32)
    for x, y in cells:
        out[y, x] = 1.0
    return out


def test_the_new_channels_are_appended_and_every_old_index_keeps_its_value():
    assert len(LEGACY_SYMBOLIC_CHANNELS) == 31
    assert SYMBOLIC_CHANNELS == (*LEGACY_SYMBOLIC_CHANNELS, "mud", "occluder")
    assert SYMBOLIC_CHANNELS[:5] == ("wall", "barrier", "lock", "key", "home")
    assert DYNAMIC_CHANNELS == tuple(range(23, 31))  # agent, carrying, agent shape, agent RGB: as before
    assert STATIC_CHANNELS == (*range(23), 31, 32)  # the layout's, the two new ones appended


def test_mud_cells_appear_in_every_state_of_a_cost_reward_episode(agent_episodes):
    ep = agent_episodes[0]
    assert ep.condition == "cost-reward"
    for trial in ep.trials:
        lay = trial.layout
        assert lay.terrain and trial.occluder is None
        s = symbolic_states(trial)
        assert s.shape == (len(trial.path), 33, lay.height, lay.width)
        want = mask(lay.terrain, lay.height, lay.width)  # independent of the encoder: the layout's own cells
        assert all(np.array_equal(state[MUD], want) for state in s)
        assert s[:, OCCLUDER].sum() == 0


def test_the_occluder_rectangle_appears_in_the_states_of_an_unobserved_constraints_episode(agent_episodes):
    ep = agent_episodes[2]
    assert ep.condition == "unobserved-constraints"
    occluded = [t for t in ep.trials if t.occluder is not None]
    assert len(occluded) == len(ep.trials) - 1 and ep.trials[-1].occluder is None  # familiarization only
    for trial in ep.trials:
        lay = trial.layout
        s = symbolic_states(trial)
        want = np.zeros((lay.height, lay.width), dtype=np.float32)
        if trial.occluder is not None:
            o = trial.occluder
            want[o.y0 : o.y1 + 1, o.x0 : o.x1 + 1] = 1.0  # the rectangle from its corners
            assert want.sum() >= 2
        assert all(np.array_equal(state[OCCLUDER], want) for state in s)
        assert s[:, MUD].sum() == 0
        # the agent walks over the occluder: its own channel still marks it there
        assert all(state[SYMBOLIC_CHANNELS.index("agent"), y, x] == 1 for state, (x, y) in zip(s, trial.path))


@pytest.mark.parametrize("name", list(MODELS))
def test_a_checkpoint_without_a_channel_record_is_fed_the_legacy_channels(tmp_path, agent_episodes, name):
    cls, sizes = MODELS[name]
    old = cls(**sizes, channels=LEGACY_SYMBOLIC_CHANNELS)  # a model of the 31 channels before mud and occluder
    raw = old.checkpoint()
    del raw["config"]["channels"]  # written before checkpoints recorded them
    save_checkpoint(raw, tmp_path / "old.pt")
    loaded = make_observer(name, tmp_path / "old.pt")
    assert loaded.spec.channel_names == LEGACY_SYMBOLIC_CHANNELS and loaded.spec.channels == 31
    got = loaded.surprise_many(agent_episodes)
    # the same weights fed today's states cut to their first 31 channels, by hand
    full = InputSpec(grid=(10, 10))
    assert full.channels == 33
    batch = collate([encode_episode(ep, full) for ep in agent_episodes])
    assert batch.variants.shape[1] == 33 and batch.variants[:, OCCLUDER].sum() > 0 and batch.variants[:, MUD].sum() > 0
    batch.variants = batch.variants[:, :31].contiguous()
    old.net.eval()
    with torch.inference_mode():
        want = old.net.step_errors(batch).double().numpy()
    want = np.split(want, np.cumsum(batch.query_counts)[:-1])
    assert len(got) == len(want) == 4
    assert all(np.array_equal(g, w) for g, w in zip(got, want))  # byte-identical
    # and a model of today's channels is another model: 33 channels in
    assert cls(**sizes).spec.channels == 33


def test_a_new_checkpoint_records_its_channels_and_a_list_it_cannot_feed_is_refused(tmp_path):
    obs = BCMLPObserver(**TINY)
    raw = obs.checkpoint()
    assert raw["config"]["channels"] == list(SYMBOLIC_CHANNELS)
    save_checkpoint(raw, tmp_path / "new.pt")
    assert make_observer("bc-mlp", tmp_path / "new.pt").spec.channel_names == SYMBOLIC_CHANNELS
    for channels, diff in [
        ([*SYMBOLIC_CHANNELS, "comet"], "unknown comet"),
        ([*LEGACY_SYMBOLIC_CHANNELS, "occluder", "mud"], "reordered: channel 31 is occluder, here mud"),
        (list(LEGACY_SYMBOLIC_CHANNELS[:-1]), "missing agent:b"),
        ([], "missing wall, .*"),
        ("wall", "unreadable"),
        (7, "unreadable"),
        (["wall", 1], "unreadable"),
    ]:
        raw["config"]["channels"] = channels
        save_checkpoint(raw, tmp_path / "other.pt")
        with pytest.raises(BibInputError, match=rf"other\.pt: checkpoint was trained with other input channels "
                                                rf"\({diff}\); retrain it$"):
            make_observer("bc-mlp", tmp_path / "other.pt")
    with pytest.raises(BibInputError, match=r"^input channels: reordered: channel 0 is barrier, here wall \(a model is "
                                            r"fed the first channels of today's symbolic states\)$"):
        InputSpec(channel_names=("barrier", "wall", *LEGACY_SYMBOLIC_CHANNELS[2:]))
    frames = BCMLPObserver(**TINY, input="frames", image_size=32, cell_px=4).checkpoint()
    assert frames["config"]["channels"] == ["r", "g", "b"]
    del frames["config"]["channels"]  # a frames checkpoint of before: RGB
    save_checkpoint(frames, tmp_path / "frames.pt")
    assert make_observer("bc-mlp", tmp_path / "frames.pt").spec.channels == 3


def test_training_records_the_channels_in_the_checkpoint_and_its_log(tmp_path, agent_episodes):
    obs = BCMLPObserver(**TINY)
    eps = [make_unit("single-object", i, 5)[0] for i in range(4)] + agent_episodes
    run_training(obs, eps[:6], eps[6:], TrainConfig(epochs=1, batch_size=4, loader_workers=0),
                 out=tmp_path / "checkpoint.pt", log=lambda _: None)
    assert read_checkpoint(tmp_path / "checkpoint.pt")["config"]["channels"] == list(SYMBOLIC_CHANNELS)
    log = json.loads((tmp_path / "checkpoint.log.json").read_text())
    assert log["provenance"]["options"]["channels"] == list(SYMBOLIC_CHANNELS)


def test_bib_data_and_the_gym_env_hand_out_the_full_list(agent_episodes):
    gym = pytest.importorskip("gymnasium")
    from bib.data import CHANNELS, LEGACY_CHANNELS, Encoding
    from bib.envs import GridworldEnv, env_id

    assert CHANNELS == SYMBOLIC_CHANNELS and len(CHANNELS) == 33 and CHANNELS[: len(LEGACY_CHANNELS)] == LEGACY_CHANNELS
    item = Encoding(phases=("familiarization",)).encode(agent_episodes[2])
    states = item["familiarization_states"]
    assert states.shape[1] == 33 and states[:, CHANNELS.index("occluder")].amax() == 1
    assert gym.make(f"bib.envs:{env_id('cost-reward')}").observation_space.shape == (33, 10, 10)
    env = GridworldEnv("cost-reward", grid=12)
    obs, _ = env.reset(seed=0)
    assert obs.shape == env.observation_space.shape == (33, 12, 12)
    lay = env._trial.layout
    want = np.zeros((12, 12), dtype=np.float32)
    want[: lay.height, : lay.width] = mask(lay.terrain, lay.height, lay.width)
    assert lay.terrain and np.array_equal(obs[MUD], want)
    env = GridworldEnv("unobserved-constraints", trial="any")
    for seed in range(20):  # a familiarization trial: the occluder is over it
        obs, _ = env.reset(seed=seed)
        if env._trial.occluder is not None:
            break
    o = env._trial.occluder
    assert o is not None
    want = np.zeros((10, 10), dtype=np.float32)
    want[o.y0 : o.y1 + 1, o.x0 : o.x1 + 1] = 1.0
    assert np.array_equal(obs[OCCLUDER], want)
    # the frames observation draws the grey block too: the trial's own first frame (the agent at home)
    frames = GridworldEnv("unobserved-constraints", trial="any", obs_type="frames", image_size=40)
    obs, _ = frames.reset(seed=seed)
    assert frames._trial.occluder == o
    assert np.array_equal(obs, frame_floats(frame_states(frames._trial, 40))[0])


@pytest.mark.parametrize("name", ["bc-mlp", "bc-rnn"])
def test_on_a_set_without_mud_or_occluder_training_gives_the_weights_and_scores_of_before(name, agent_episodes):
    """The appended channels' first-layer weights start at zero and the others are drawn as before: a 33-channel model
    trained on BIB's tasks (dropout on) is the 31-channel model of before, its two extra weight blocks zero."""
    cls, sizes = MODELS[name]
    sizes = {**sizes, "dropout": 0.2}
    background = [make_unit("single-object", i, 5)[0] for i in range(12)]
    evaluation = make_unit("preference", 0, 2) + make_unit("instrumental-no-barrier", 0, 2)
    cfg = TrainConfig(epochs=2, batch_size=4, loader_workers=0)
    old, new = cls(**sizes, channels=LEGACY_SYMBOLIC_CHANNELS), cls(**sizes)
    legacy = 31 * 100
    assert torch.equal(new.net.encoder.first.weight[:, :legacy], old.net.encoder.first.weight)
    for obs in (old, new):
        run_training(obs, background[:9], background[9:], cfg, log=lambda _: None)
    a, b = old.net.state_dict(), new.net.state_dict()
    first = "encoder.first.weight"
    assert b[first].shape == (32, 33 * 100) and b[first][:, legacy:].abs().max() == 0
    assert torch.equal(b[first][:, :legacy], a[first])
    assert all(torch.equal(a[k], b[k]) for k in a if k != first)
    assert all(np.array_equal(x, y) for x, y in zip(old.surprise_many(evaluation), new.surprise_many(evaluation)))
    # where mud and an occluder are shown, their weights get gradients (they learn)
    new.net.train()
    new.net.zero_grad()
    new.step_errors(collate([new.encode(ep) for ep in agent_episodes])).mean().backward()
    grad = new.net.encoder.first.weight.grad
    assert grad[:, legacy : legacy + 100].abs().max() > 0 and grad[:, legacy + 100 :].abs().max() > 0
