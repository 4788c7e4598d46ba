"""Issue 29 items 1, 3, 4: `bib train package.module:Class` (fit, save, restore), bib.score / bib.evaluate, and the
results' identity; the example of docs/train-your-model.md trains on 400 background episodes and gives the same
numbers through the CLI and through bib.score."""

from __future__ import annotations

import csv
import json
import os
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

import bib
from bib.api import Scores, read_episodes
from bib.cli import main
from bib.episode import load_episode
from bib.errors import BibInputError
from bib.evaluation import find_episodes
from bib.observers.trainable import BackgroundEpisodes, subset
from bib.stimuli.blind import file_secret, opaque_id
from bib.stimuli.build import build

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "train-your-model.md"


def model_block() -> str:
    """The `# step_model.py` block of docs/train-your-model.md (the one source of the example model)."""
    blocks = re.findall(r"^```python\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.S | re.M)
    (block,) = [b for b in blocks if b.startswith("# step_model.py")]
    return block


BAD = textwrap.dedent('''
    import numpy as np

    class NoHook:
        name = "no-hook"
        def surprise(self, episode):
            return np.zeros(episode.test.n_steps)

    class NoSave:
        name = "no-save"
        def fit(self, background_episodes):
            pass
        def surprise(self, episode):
            return np.zeros(episode.test.n_steps)

    class SavesNothing(NoSave):
        def save(self, folder):
            pass

    class ReturnsJunk(NoSave):
        def save(self, folder):
            pass
        def fit(self, background_episodes):
            return 42

    class Counter:
        """Not torch: remembers the mean test length of the background set, saved by its own save/load."""
        name = "counter"
        def __init__(self, scale=1.0):
            self.scale = scale
            self.mean_steps = None
        def fit(self, background_episodes):
            self.mean_steps = float(np.mean([ep.test.n_steps for ep in background_episodes]))
            return self
        def save(self, folder):
            (folder / "mean.txt").write_text(repr(self.mean_steps))
        @classmethod
        def load(cls, folder):
            made = cls()
            made.mean_steps = float((folder / "mean.txt").read_text())
            return made
        def surprise(self, episode):
            return self.scale * np.arange(1, episode.test.n_steps + 1) / self.mean_steps
''')


def run(*argv: str) -> int:
    try:
        main(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    os.environ.setdefault("BIB_NO_PROGRESS", "1")
    root = tmp_path_factory.mktemp("sets")
    build([("single-object", 400)], seed=1, out=root / "background")
    build([("preference", 6), ("efficiency-path", 6)], seed=0, out=root / "tiny")
    return root


@pytest.fixture()
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "step_model.py").write_text(model_block())
    (tmp_path / "toys.py").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    return tmp_path


def test_the_documented_model_trains_on_400_episodes_and_cli_and_api_give_the_same_numbers(here, sets, capsys):
    import step_model

    bg, tiny = sets / "background", sets / "tiny"
    assert len(find_episodes(bg).refs) == 400
    assert run("train", "step_model:StepCost", str(bg), "--out", "ck") == 0
    out = capsys.readouterr()
    assert out.out.strip() == "step-cost: trained model written to ck (model.json and weights.pt)"  # the final folder
    assert "fit on 400 background episodes" in out.err and ".tmp-" not in out.out + out.err
    card = json.loads((here / "ck" / "model.json").read_text())
    assert card["target"] == "step_model:StepCost" and card["name"] == "step-cost" and card["saved"] == "state_dict"
    assert card["parameters"] == 3 and card["seed"] == 0 and card["training_data"]["episodes"] == 400
    assert card["training_data"]["path"] == str(bg)
    assert run("score", "step_model:StepCost", str(tiny), "--checkpoint", "ck", "--out", "run") == 0
    assert capsys.readouterr().out.startswith("24 episodes scored with step-cost:")  # its name, not its import path
    assert run("evaluate", str(tiny), "run", "--out", "ev") == 0
    capsys.readouterr()

    model = step_model.StepCost()
    model.fit(read_episodes(bg))
    scores = bib.score(model, tiny)
    cli = {r["episode_id"]: float(r["surprise"]) for r in csv.DictReader((here / "run" / "results.csv").open())}
    assert scores.surprise() == cli and len(cli) == 24  # bit for bit
    # the weights bib train saved are what fit learned in this process
    restored = bib.score("step_model:StepCost", tiny, checkpoint="ck")
    assert restored.surprise() == cli and restored.model == scores.model | {"training_data": card["training_data"], "seed": 0}
    # episodes held in memory, no files: the same numbers
    in_memory = list(read_episodes(tiny))
    assert bib.score(model, in_memory).surprise() == cli
    # the evaluation: same numbers as bib evaluate, and the model named by its name attribute
    result = bib.evaluate(tiny, scores)
    saved = json.loads((here / "ev" / "evaluation.json").read_text())
    assert result.to_json()["conditions"] == saved["conditions"]
    assert saved["model"]["name"] == "step-cost" and saved["model"]["parameters"] == 3
    assert saved["model"]["training_data"]["episodes"] == 400
    assert bib.evaluate(in_memory, scores.surprise()).to_json()["conditions"] == saved["conditions"]
    assert bib.evaluate(tiny, here / "run").to_json()["model"] == saved["model"]


def test_a_model_with_its_own_save_and_load(here, sets, capsys):
    bg, tiny = sets / "background", sets / "tiny"
    assert run("train", "toys:Counter", str(bg), "--out", "ck", "--max-episodes", "50", "--option", "scale=2") == 0
    assert sorted(p.name for p in (here / "ck").iterdir()) == ["checkpoint.log.json", "model.json", "provenance.json",
                                                                "saved"]
    expected = float(np.mean([ep.test.n_steps for ep in subset(list(read_episodes(bg)), 50)]))
    assert float((here / "ck" / "saved" / "mean.txt").read_text()) == expected
    assert json.loads((here / "ck" / "model.json").read_text())["options"] == {"scale": 2}
    assert run("score", "toys:Counter", str(tiny), "--checkpoint", "ck", "--out", "run") == 0
    capsys.readouterr()
    ep = next(iter(read_episodes(tiny)))
    steps = bib.score("toys:Counter", tiny, checkpoint="ck").steps[ep.id]
    assert np.array_equal(steps, np.arange(1, ep.test.n_steps + 1) / expected)  # load() ignores scale: as written


@pytest.mark.parametrize("target, message", [
    ("toys:NoHook", "observer 'toys:NoHook': NoHook has no fit(background_episodes) training hook"),
    ("toys:NoSave", "observer 'toys:NoSave': NoSave is neither a torch.nn.Module nor has a save(folder) method"),
    ("toys:SavesNothing", "observer 'toys:SavesNothing': SavesNothing.save(folder) wrote nothing"),
    ("toys:ReturnsJunk", "observer 'toys:ReturnsJunk': fit returned a int, which bib train cannot save"),
    ("random", "observer 'random' is not a learned observer; bib train trains bc-mlp, bc-rnn, video-rnn or your own"),
])
def test_untrainable_models_are_one_line_exit_2_and_nothing_is_written(here, sets, capsys, target, message):
    assert run("train", target, str(sets / "background"), "--out", "ck", "--max-episodes", "5") == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("bib: error: ")]
    assert errors == [err.splitlines()[-1]] and errors[0].startswith(f"bib: error: {message}") and "Traceback" not in err
    assert not (here / "ck").exists() and not list(here.glob(".ck*"))


def test_api_bad_input(here, sets):
    tiny = sets / "tiny"
    episodes = list(read_episodes(tiny))
    scores = bib.score("closest-object", tiny)
    assert isinstance(scores, Scores) and scores.observer == "closest-object"
    with pytest.raises(BibInputError, match=r"^the scores do not match the episodes: 12 scored episode\(s\) are not in the set"):
        bib.evaluate(episodes[:12], scores)
    with pytest.raises(BibInputError, match=r"^the scores do not match the episodes: 1 episode\(s\) of the set have no score"):
        bib.evaluate(tiny, dict(list(scores.surprise().items())[1:]))
    with pytest.raises(BibInputError, match="pass an instance alone"):
        bib.score(object(), tiny, options={"seed": 1})
    with pytest.raises(BibInputError, match="has no surprise"):
        bib.score(object(), tiny)
    with pytest.raises(BibInputError, match="is given twice"):
        bib.score("closest-object", episodes + episodes[:1])


def test_scores_and_evaluation_are_results(here, sets):
    tiny = sets / "tiny"
    scores = bib.score("closest-object", tiny)
    doc = json.loads(scores.to_json_text())
    assert doc["schema"] == "bib.scores/1" and doc["model"]["name"] == "closest-object" and doc["episodes"] == 24
    assert doc["surprise"] == {k: max(v) for k, v in doc["steps"].items()}
    assert "24 episodes scored with closest-object" in scores.to_markdown()
    assert [p.name for p in scores.save(here / "s")] == ["scores.json", "scores.md", "scores.png", "scores.svg"]
    scores.write(here / "w" / "results.csv")
    ev = bib.evaluate(tiny, here / "w")
    assert ev.to_json()["conditions"] == bib.evaluate(tiny, scores).to_json()["conditions"]
    assert ev.overall["mean"] == np.mean([c.accuracy for c in ev.conditions.values()])
    assert ev.to_json()["set"] == {"spec": None, "seed": None, "episodes": 24, "pairs": 12, "limited": False}


def test_background_episodes_read_on_demand(sets):
    seq = read_episodes(sets / "background")
    assert isinstance(seq, BackgroundEpisodes) and len(seq) == 400
    refs = find_episodes(sets / "background").refs
    assert seq[3].id == seq[3].id and [e.id for e in seq[:2]] == [r.id for r in refs[:2]]
    # what bib train hands a model's fit: each file's blind view, as bib score hands it (opaque id, no outcome or pair)
    blind = BackgroundEpisodes([r.path for r in refs], blind=True)
    assert blind[3] == blind[3] and [e.id for e in blind[:2]] == [opaque_id(file_secret(r.path), r.id) for r in refs[:2]]
    assert all(e.outcome == "none" and e.pair_id is None and e.seed == 0 for e in blind[:5])
    assert [e.test.path for e in blind[:2]] == [load_episode(r.path).test.path for r in refs[:2]]


class _System:
    def __reduce__(self):
        import os

        return (os.system, ("echo this would have run",))


def test_pickled_payloads_are_refused_by_name_under_this_torch(tmp_path, capfd):
    """torch 2.13 words a blocked module's global differently ("unsupported GLOBAL posix.system whose module posix is
    blocked") and a plain pickle as "Unsupported operand 149": both get bib's specific refusal."""
    import pickle

    import torch

    from bib.io import load_weights

    blocked = tmp_path / "blocked.pt"
    torch.save({"x": _System()}, blocked)
    with pytest.raises(BibInputError, match=r"blocked\.pt: refused: the checkpoint holds pickled objects "
                                            r"\((posix|nt)\.system\), and bib loads weights only$"):
        load_weights(blocked)
    plain = tmp_path / "plain.pt"
    plain.write_bytes(pickle.dumps({"x": _System()}, protocol=4))
    with pytest.raises(BibInputError, match=r"plain\.pt: refused: a pickle that is not a torch weights file "
                                            r"\(pickle opcode \d+\), and bib loads weights only$"):
        load_weights(plain)
    assert "would have run" not in capfd.readouterr().out


def test_evaluate_takes_a_blind_kits_key(here, sets):
    """bib.evaluate(KEY, scores): scores on a `bib blind` kit evaluate as the open set's do; scores that do not
    match the key (or are of another kit) are one-line errors."""
    from bib.stimuli.kit import make_kit

    tiny = sets / "tiny"
    make_kit(tiny, here / "kit", here / "key.csv", seed=5, progress=False, allow_public=True)
    make_kit(tiny, here / "kit2", here / "key2.csv", seed=6, progress=False, allow_public=True)
    on_kit = bib.score("path-length", here / "kit")
    open_set = bib.score("path-length", tiny)
    assert bib.evaluate(here / "key.csv", on_kit).to_json()["conditions"] == \
        bib.evaluate(tiny, open_set).to_json()["conditions"]
    on_kit.write(here / "run" / "results.csv")
    assert bib.evaluate(here / "key.csv", here / "run").to_json()["conditions"] == \
        bib.evaluate(tiny, open_set).to_json()["conditions"]
    with pytest.raises(BibInputError, match="these are results on another kit"):
        bib.evaluate(here / "key2.csv", here / "run")
    with pytest.raises(BibInputError, match=r"^the scores do not match the episodes: 24 episode\(s\) of the set have no score"):
        bib.evaluate(here / "key2.csv", on_kit)


def test_api_scoring_a_model_with_the_wrong_count_is_one_error(sets):
    class Short:
        name = "short"

        def surprise(self, episode):
            return np.zeros(episode.test.n_steps - 1)

    with pytest.raises(BibInputError, match=r"^observer 'short' gave \d+ surprise values for episode "):
        bib.score(Short(), sets / "tiny")


def test_the_default_leaderboard_table_ships_with_the_package(tmp_path, monkeypatch, capsys):
    """Run from a folder without baselines/, `bib leaderboard` still shows the built-in rows (package data)."""
    from bib.evaluation import TABLE, read_table

    monkeypatch.chdir(tmp_path)
    assert run("leaderboard") == 0
    out = capsys.readouterr().out
    names = list(dict.fromkeys(r["observer"] for r in read_table(TABLE)))
    assert "inverse-planner" in names and all(f"{n} (ours" in out for n in names)
    assert TABLE.parent.name == "baselines" and TABLE.parent.parent.name == "resources"
    assert (ROOT / "baselines" / "results.csv").resolve() == TABLE.resolve()  # the checkout's path is a link to it
