"""bib.data: episode sets as torch datasets (map-style and streaming), symbolic and frame states, padding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from bib.data import CHANNELS, EpisodeDataset, EpisodeStream, pad_collate
from bib.episode import load_episode
from bib.errors import BibInputError
from bib.observers.encoders import frame_states, symbolic_states, trial_actions
from bib.stimuli.build import build

UNITS = [("preference", 2), ("single-object", 2)]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("set")
    build(UNITS, 5, out)
    return out


def test_dataset_items_are_the_encoders_states(made: Path) -> None:
    ds = EpisodeDataset(made)
    files = sorted((made / "episodes").glob("*.json"))
    assert len(ds) == len(files) == 2 * 2 + 2
    for i in range(len(ds)):
        item = ds[i]
        ep = load_episode(made / "episodes" / f"{item['id']}.json")
        assert item["condition"] == ep.condition and "outcome" not in item and "pair_id" not in item
        assert torch.equal(item["test_states"], torch.from_numpy(symbolic_states(ep.test)))
        assert torch.equal(item["test_actions"], torch.from_numpy(trial_actions(ep.test)))
        fam = ep.familiarization
        assert item["familiarization_lengths"].tolist() == [len(t.path) for t in fam]
        assert torch.equal(item["familiarization_states"], torch.from_numpy(np.concatenate([symbolic_states(t) for t in fam])))
        assert item["test_states"].shape[1:] == (len(CHANNELS), ep.height, ep.width)


def test_frames_at_any_size_and_one_phase(made: Path) -> None:
    ds = EpisodeDataset(made, input="frames", size=24, phases=["test"], conditions=["single-object"])
    assert len(ds) == 2
    item = ds[0]
    assert set(item) == {"id", "condition", "test_states", "test_actions", "test_lengths"}
    ep = load_episode(made / "episodes" / f"{item['id']}.json")
    expected = frame_states(ep.test, 24, 4).astype(np.float32) / 255.0  # 10 cells -> 3 px would be < 4: 4 px cells
    assert item["test_states"].shape == (ep.test.n_steps + 1, 3, 24, 24)
    assert torch.equal(item["test_states"], torch.from_numpy(expected))
    assert 0.0 <= float(item["test_states"].min()) and float(item["test_states"].max()) <= 1.0


def test_stream_generates_what_the_set_on_disk_holds(made: Path) -> None:
    on_disk = {it["id"]: it for it in EpisodeDataset(made)}
    streamed = list(EpisodeStream.generate(dict(UNITS), seed=5))
    assert sorted(it["id"] for it in streamed) == sorted(on_disk)
    for it in streamed:
        for key in ("familiarization_states", "test_states", "test_actions"):
            assert torch.equal(it[key], on_disk[it["id"]][key])


def test_stream_is_split_across_workers_without_repeats(made: Path) -> None:
    loader = DataLoader(EpisodeStream(made, phases=["test"]), batch_size=None, num_workers=2)
    ids = [it["id"] for it in loader]
    assert sorted(ids) == sorted(it["id"] for it in EpisodeDataset(made, phases=["test"]))


def test_pad_collate_pads_and_masks(made: Path) -> None:
    items = [it for it in EpisodeDataset(made, phases=["test"])][:3]
    batch = pad_collate(items)
    n = [it["test_states"].shape[0] for it in items]
    assert batch["test_states"].shape[:2] == (3, max(n))
    assert batch["test_mask"].sum(dim=1).tolist() == n
    for b, it in enumerate(items):
        assert torch.equal(batch["test_states"][b, : n[b]], it["test_states"])
        assert not batch["test_states"][b, n[b]:].any()
    assert batch["id"] == [it["id"] for it in items]


@pytest.mark.parametrize("kwargs, message", [
    ({"input": "pixels"}, "input must be one of symbolic, frames"),
    ({"phases": ["training"]}, "phases must be a non-empty subset"),
    ({"size": 2}, "size must be at least 8"),
])
def test_bad_options_are_one_line_errors(made: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(BibInputError, match=message):
        EpisodeDataset(made, **kwargs)


def test_unknown_task_and_missing_set_are_refused(tmp_path: Path) -> None:
    with pytest.raises(BibInputError, match="unknown task id 'nope'"):
        EpisodeStream.generate({"nope": 1})
    with pytest.raises(BibInputError, match="no such file or folder"):
        EpisodeDataset(tmp_path / "missing")
