"""bib.data: episode sets as torch datasets (map-style and streaming), symbolic and frame states, padding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from bib.data import CACHE_ENV, CHANNELS, EpisodeDataset, EpisodeStream, cache_dir, load, pad_collate
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
    ds = EpisodeDataset(made, open=True)
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
    ds = EpisodeDataset(made, input="frames", size=24, phases=["test"], conditions=["single-object"], open=True)
    assert len(ds) == 2
    item = ds[0]
    assert set(item) == {"id", "condition", "test_states", "test_actions", "test_lengths"}
    ep = load_episode(made / "episodes" / f"{item['id']}.json")
    # the one frame convention (issue 42): 8 px per cell (80 x 80), area-resized to 24, as the learned observers draw
    expected = frame_states(ep.test, 24, 8).astype(np.float32) / 255.0
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


def test_pad_collate_pads_every_axis_so_grid_sizes_mix() -> None:
    items = list(EpisodeStream.generate({"navigation": 2, "single-object": 1}, seed=0, phases=("test",)))
    sizes = [tuple(it["test_states"].shape[-2:]) for it in items]
    assert len(set(sizes)) > 1  # navigation's grids are smaller than BIB's 10 x 10
    batch = pad_collate(items)
    steps = max(it["test_states"].shape[0] for it in items)
    h, w = max(s[0] for s in sizes), max(s[1] for s in sizes)
    assert batch["test_states"].shape == (3, steps, len(CHANNELS), h, w)
    for b, it in enumerate(items):
        n, (hb, wb) = it["test_states"].shape[0], sizes[b]
        assert torch.equal(batch["test_states"][b, :n, :, :hb, :wb], it["test_states"])
        assert not batch["test_states"][b, n:].any() and not batch["test_states"][b, :, :, hb:].any()
        assert not batch["test_states"][b, :, :, :, wb:].any()
        assert batch["test_area"][b].sum() == hb * wb and batch["test_area"][b, :hb, :wb].all()
        assert batch["test_mask"][b].sum() == n
        assert torch.equal(batch["test_actions"][b, :n], it["test_actions"])
    with pytest.raises(BibInputError, match="'x' has 1 and 2 axes in different items"):
        pad_collate([{"x": torch.zeros(2)}, {"x": torch.zeros(2, 2)}])


def test_the_default_collate_takes_items_without_a_pair() -> None:
    from torch.utils.data import default_collate

    items = list(EpisodeStream.generate({"single-object": 2, "preference": 1}, seed=0, phases=("test",)))
    assert all(set(it) == {"id", "condition", "test_states", "test_actions", "test_lengths"} for it in items)
    batch = next(iter(DataLoader(items, batch_size=1)))  # torch's default collate, background episodes first
    assert batch["id"] == [items[0]["id"]] and torch.equal(batch["test_states"][0], items[0]["test_states"])
    assert default_collate([items[0], items[0]])["test_states"].shape[0] == 2


def test_load_generates_into_a_cache_keyed_by_spec_and_seed_and_reuses_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    assert cache_dir() == tmp_path / "cache"
    data = load("bib-ctrl", limit=1, phases=["test"], conditions=["preference"])
    folders = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len(folders) == 1 and folders[0].startswith("bib-ctrl-20211207-")
    root = tmp_path / "cache" / folders[0]
    assert {r.condition for r in data.refs} == {"preference"} and len(data) == 4  # a pair and its twin
    # the same as bib generate's set (the spec, the seed, the limit), without videos
    made = tmp_path / "made"
    from bib.stimuli.build import build_spec
    from bib.stimuli.spec import load_spec

    build_spec(load_spec("bib-ctrl"), made, video=False, limit=1)
    ref = EpisodeDataset(made, phases=["test"], conditions=["preference"])
    assert [it["id"] for it in ref] == [it["id"] for it in data]
    assert all(torch.equal(a["test_states"], b["test_states"]) for a, b in zip(ref, data))
    # reused: nothing is built again (the folder's files keep their times), and no temporary folder is left
    stamp = (root / "manifest.csv").stat().st_mtime_ns
    again = load("bib-ctrl", limit=1, phases=["test"])
    assert (root / "manifest.csv").stat().st_mtime_ns == stamp and len(again) > len(data)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == folders
    # another seed is another set; splits are bib train's 80/20
    other = load("bib-ctrl", seed=1, limit=1, phases=["test"], conditions=["preference"])
    assert len(list((tmp_path / "cache").iterdir())) == 2
    assert any(not torch.equal(a["test_states"], b["test_states"]) for a, b in zip(other, data))
    train = load("bib-ctrl", split="train", limit=1, phases=["test"], cache=tmp_path / "cache")
    val = load("bib-ctrl", split="val", limit=1, phases=["test"], cache=tmp_path / "cache")
    ids = sorted(r.id for r in again.refs)
    assert sorted(r.id for r in val.refs) == ids[4::5] and len(train) + len(val) == len(again)


@pytest.mark.parametrize("kwargs, message", [
    ({"split": "test"}, "split must be one of all, train, val"),
    ({"input": "pixels"}, "input must be one of symbolic, frames"),
    ({"limit": 0}, "limit must be >= 1"),
])
def test_load_refuses_bad_options_before_building(tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(BibInputError, match=message):
        load("bib-ctrl", cache=tmp_path, **kwargs)
    with pytest.raises(BibInputError, match="not a built-in spec"):
        load("no-such-set", cache=tmp_path)
    assert not list(tmp_path.iterdir())


def test_items_are_blind_unless_open_is_asked_for(made: Path) -> None:
    from bib.evaluation import find_episodes
    from bib.stimuli.blind import load_blind

    real = [r.id for r in find_episodes(made).refs]
    assert real == sorted(real) and any(i.endswith("-expected") for i in real)
    opened = EpisodeDataset(made, open=True)
    assert [it["id"] for it in opened] == real and opened.key == {i: i for i in real}
    blind = EpisodeDataset(made)
    ids = [it["id"] for it in blind]
    assert not set(ids) & set(real) and all(i.startswith("e") and len(i) == 17 for i in ids)
    assert blind.key == {it["id"]: r.id for it, r in zip(blind, blind.refs)} and sorted(blind.key.values()) == real
    for it, ref in zip(blind, blind.refs):  # the id bib score hands a model for the same file
        assert it["id"] == load_blind(ref.path, ref.id).id
        twin = opened[real.index(ref.id)]
        assert it["condition"] == twin["condition"]
        assert all(torch.equal(it[k], twin[k]) for k in it if k not in ("id", "condition"))
    order0 = [r.id for r in blind.refs]
    assert sorted(order0) == real and order0 != real  # a permutation drawn from the seed, not id order
    assert [r.id for r in EpisodeDataset(made, seed=0).refs] == order0
    assert [r.id for r in EpisodeDataset(made, seed=1).refs] != order0
    assert [int(i) for i in np.random.default_rng(0).permutation(len(real))] == [real.index(i) for i in order0]


def test_streams_are_blind_unless_open_is_asked_for(made: Path) -> None:
    blind = {it["id"] for it in EpisodeDataset(made)}
    on_disk = [it["id"] for it in EpisodeStream(made)]
    generated = [it["id"] for it in EpisodeStream.generate(dict(UNITS), seed=5)]
    assert set(on_disk) == set(generated) == blind
    assert [it["id"] for it in EpisodeStream(made, open=True)] == sorted(EpisodeDataset(made, open=True).key)
    assert [it["id"] for it in EpisodeStream.generate(dict(UNITS), seed=5, open=True)][:2] == [
        "preference-000000-expected", "preference-000000-unexpected"]
