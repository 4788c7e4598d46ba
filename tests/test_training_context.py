"""Issue 42 items 2 and 4: the training context of ``fit(episodes, context)`` (split, seed, logger, early stopping,
save-last and save-best, resume, the untrained-best warning), the built-in learned observers on the same context,
and the provenance in ``model.json`` and ``checkpoint.log.json``."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import os
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest
import torch
from test_train_any_model import run

import bib
from bib.errors import BibInputError
from bib.evaluation import find_episodes
from bib.observers.context import TrainingContext, resolved_options, takes_context
from bib.stimuli.build import build

CTX_MODEL = textwrap.dedent('''
    import numpy as np
    import torch
    from torch import nn


    class Scripted(nn.Module):
        """Reports the validation losses it is given, one per epoch; its one weight counts the epochs trained."""

        name = "scripted"
        last = None

        def __init__(self, losses: str = "5,3,4,6,7", scale: float = 1.0):
            super().__init__()
            self.losses = [float(x) for x in losses.split(",")]
            self.w = nn.Parameter(torch.zeros(1), requires_grad=False)

        def fit(self, episodes, context):
            start = context.start(self)
            if start == 1:
                context.end_epoch(0, self, val_loss=4.5)
            for epoch in context.epochs(start, default=len(self.losses)):
                self.w.add_(1.0)
                context.end_epoch(epoch, self, train_loss=1.0, val_loss=self.losses[epoch - 1])
            Scripted.last = context

        def surprise(self, episode):
            return np.full(episode.test.n_steps, float(self.w))


    class Learner(nn.Module):
        """A small regression with dropout, Adam and the context's shuffling: every random source a resume restores."""

        name = "learner"

        def __init__(self, hidden: int = 8, lr: float = 0.05):
            super().__init__()
            self.lr = lr
            self.net = nn.Sequential(nn.Linear(2, hidden), nn.Dropout(0.3), nn.Linear(hidden, 1))

        @staticmethod
        def pair(episode):
            x = torch.tensor([episode.test.n_steps / 10, len(episode.familiarization[0].path) / 10])
            return x, torch.tensor([episode.familiarization[-1].n_steps / 10])

        def loss(self, data):
            with torch.no_grad():
                return float(sum((self.net(x) - y).pow(2).sum() for x, y in data) / len(data))

        def fit(self, episodes, context):
            opt = torch.optim.Adam(self.parameters(), lr=self.lr)
            train = [self.pair(e) for e in context.train]
            val = [self.pair(e) for e in context.val]
            start = context.start(self, opt)
            if start == 1:
                context.end_epoch(0, self, opt, val_loss=self.loss(val))
            for epoch in context.epochs(start, default=3):
                self.train()
                for i in context.rng.permutation(len(train)):
                    x, y = train[i]
                    loss = (self.net(x) - y).pow(2).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                self.eval()
                context.end_epoch(epoch, self, opt, val_loss=self.loss(val))

        def surprise(self, episode):
            return np.full(episode.test.n_steps, float(self.net(self.pair(episode)[0])[0]))
''')

TINY = {"embed": 16, "symbolic_hidden": 32, "context_hidden": 8, "policy": [32], "dropout": 0.2}


@pytest.fixture(scope="module")
def background(tmp_path_factory: pytest.TempPathFactory) -> Path:
    os.environ.setdefault("BIB_NO_PROGRESS", "1")
    root = tmp_path_factory.mktemp("ctx")
    build([("single-object", 40)], seed=3, out=root / "bg")
    return root / "bg"


@pytest.fixture()
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "ctx_model.py").write_text(CTX_MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    sys.modules.pop("ctx_model", None)
    return tmp_path


def tiny_config(path: Path, **train: object) -> Path:
    body = "\n".join(f"{k} = {v!r}".replace("'", '"') for k, v in TINY.items())
    extra = "\n".join(f"{k} = {v!r}" for k, v in train.items())
    path.write_text(f'observer = "bc-mlp"\n[model]\n{body}\n[train]\nbatch_size = 4\nloader_workers = 0\n{extra}\n')
    return path


def test_fit_takes_the_context_when_its_signature_says_so():
    class A:
        def fit(self, episodes): ...

    class B:
        def fit(self, episodes, context): ...

    class C:
        def fit(self, X, y=None): ...  # scikit-learn's: not a context

    class D:
        def fit(self, episodes, ctx): ...

    assert [takes_context(c().fit) for c in (A, B, C, D)] == [False, True, False, True]


def test_resolved_options_hold_the_defaults():
    def make(a: int, b: float = 2.0, *args, checkpoint=None, c: str = "x", **kw): ...

    assert resolved_options(make, {"a": 1, "c": "y", "extra": 3}) == {"a": 1, "b": 2.0, "c": "y", "extra": 3}


def test_the_context_splits_logs_and_keeps_the_best_epoch(here, background, capsys):
    trained = bib.train("ctx_model:Scripted", background, "out", log=lambda _: None)
    import ctx_model

    ctx = ctx_model.Scripted.last
    real = {r.id for r in find_episodes(background).refs}
    assert (len(ctx.train), len(ctx.val)) == (32, 8)  # every fifth of the 40 by sorted id is validation
    views = list(ctx.train) + list(ctx.val)
    assert not {e.id for e in views} & real and {e.outcome for e in views} == {"none"}  # blind views
    assert len({e.id for e in views}) == 40
    out = here / "out"
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint.log.json", "last.pt", "metrics.csv", "model.json",
                                                     "provenance.json", "weights.pt"]
    # losses 4.5 (untrained), 5, 3, 4, 6, 7: the best is epoch 2, whose weight (2 epochs trained) is the one saved
    weights = torch.load(out / "weights.pt", weights_only=True)
    assert float(weights["w"]) == 2.0
    log = json.loads((out / "checkpoint.log.json").read_text())
    assert [h["epoch"] for h in log["history"]] == [0, 1, 2, 3, 4, 5]
    assert [h["val_loss"] for h in log["history"]] == [4.5, 5.0, 3.0, 4.0, 6.0, 7.0]
    assert (log["best_epoch"], log["best_val_loss"], log["stopped_early"], log["warnings"]) == (2, 3.0, False, [])
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert [r["val_loss"] for r in rows] == ["4.5", "5.0", "3.0", "4.0", "6.0", "7.0"] and rows[0]["train_loss"] == ""
    last = torch.load(out / "last.pt", weights_only=True)
    assert last["epoch"] == 5 and float(last["model"]["w"]) == 5.0 and float(last["best_state"]["w"]) == 2.0
    card = json.loads((out / "model.json").read_text())
    assert card["training"]["best_epoch"] == 2 and card["training"]["n_train"] == 32
    assert trained.card["training"] == card["training"]
    assert bib.score("ctx_model:Scripted", background, checkpoint=out).surprise()[find_episodes(background).refs[0].id] == 2.0


def test_early_stopping_after_patience_epochs_without_gain(here, background):
    msgs: list[str] = []
    bib.train("ctx_model:Scripted", background, "out", patience=2, log=msgs.append)
    log = json.loads((here / "out" / "checkpoint.log.json").read_text())
    # 5, 3 (best), 4, 6: two epochs without gain after epoch 2, so epoch 5 never runs
    assert [h["epoch"] for h in log["history"]] == [0, 1, 2, 3, 4]
    assert (log["stopped_early"], log["patience"], log["best_epoch"]) == (True, 2, 2)
    assert "early stop after epoch 4: val_loss did not improve for 2 epochs (best epoch 2)" in msgs
    assert float(torch.load(here / "out" / "weights.pt", weights_only=True)["w"]) == 2.0


def test_best_epoch_zero_warns_and_is_recorded(here, background, capsys):
    assert run("train", "ctx_model:Scripted", str(background), "--out", "out", "--option", 'losses="6,5,7"') == 0
    err = capsys.readouterr().err
    warning = ("best epoch is 0, the untrained model: no epoch improved val_loss (4.5), so the untrained weights are "
               "what is kept (try another learning rate or more epochs)")
    assert f"warning: {warning}" in err
    card = json.loads((here / "out" / "model.json").read_text())
    log = json.loads((here / "out" / "checkpoint.log.json").read_text())
    assert card["training"]["warnings"] == log["warnings"] == [warning]
    assert float(torch.load(here / "out" / "weights.pt", weights_only=True)["w"]) == 0.0  # the untrained weight


def test_resume_gives_the_weights_of_an_uninterrupted_run(here, background):
    bib.train("ctx_model:Learner", background, "a", epochs=2, log=lambda _: None)
    bib.train("ctx_model:Learner", background, "b", epochs=4, resume_from="a", log=lambda _: None)
    bib.train("ctx_model:Learner", background, "c", epochs=4, log=lambda _: None)
    b, c = (torch.load(here / d / "last.pt", weights_only=True) for d in "bc")
    assert b["epoch"] == c["epoch"] == 4
    assert all(torch.equal(b["model"][k], c["model"][k]) for k in c["model"])  # dropout, Adam and shuffling restored
    assert (here / "b" / "weights.pt").read_bytes() == (here / "c" / "weights.pt").read_bytes()
    logs = [json.loads((here / d / "checkpoint.log.json").read_text()) for d in "bc"]
    strip = [[{k: v for k, v in h.items() if k != "cpu_seconds"} for h in log["history"]] for log in logs]
    assert strip[0] == strip[1] and len(strip[0]) == 5
    assert logs[0]["resumed_from"] == "a" and logs[1]["resumed_from"] is None
    # a model with the same first epochs but other weights: resuming it is refused, naming what does not fit
    with pytest.raises(BibInputError, match=r"a/last\.pt: the saved weights do not fit the model \(size mismatch"):
        bib.train("ctx_model:Learner", background, "d", epochs=4, resume_from="a", hidden=4, log=lambda _: None)
    with pytest.raises(BibInputError, match="nothing to resume from"):
        bib.train("ctx_model:Learner", background, "e", epochs=4, resume_from=here / "ctx_model.py.missing")
    assert not (here / "d").exists() and not (here / "e").exists()


def test_provenance_in_model_json_and_the_log(here, background):
    bib.train("ctx_model:Scripted", background, "out", losses="5,3", log=lambda _: None)
    card = json.loads((here / "out" / "model.json").read_text())
    log = json.loads((here / "out" / "checkpoint.log.json").read_text())
    prov = card["provenance"]
    assert prov == log["provenance"]
    assert prov["device"] == "cpu" and prov["torch"] == torch.__version__
    assert prov["options"] == {"losses": "5,3", "scale": 1.0}  # the default included
    assert card["options"] == {"losses": "5,3"}  # what restores it: the options given
    assert prov["source"] == {"module": "ctx_model", "class": "Scripted", "file": "ctx_model.py",
                              "sha256": hashlib.sha256((here / "ctx_model.py").read_bytes()).hexdigest()}
    assert isinstance(prov["cpu_seconds"], float) and prov["cpu_seconds"] >= 0


def test_a_one_argument_fit_gets_its_provenance_too(here, background):
    (here / "one.py").write_text(textwrap.dedent('''
        import numpy as np
        import torch
        from torch import nn

        class One(nn.Module):
            name = "one"
            def __init__(self, k: int = 3):
                super().__init__()
                self.w = nn.Parameter(torch.zeros(1), requires_grad=False)
            def fit(self, episodes):
                self.w.fill_(len(episodes))
            def surprise(self, episode):
                return np.zeros(episode.test.n_steps)
    '''))
    bib.train("one:One", background, "out", log=lambda _: None)
    card = json.loads((here / "out" / "model.json").read_text())
    assert card["training"] is None and card["provenance"]["options"] == {"k": 3}
    assert float(torch.load(here / "out" / "weights.pt", weights_only=True)["w"]) == 40.0  # the whole set
    assert json.loads((here / "out" / "checkpoint.log.json").read_text())["history"] == []


def test_tensorboard_gets_the_scalars_when_installed(tmp_path, monkeypatch):
    calls: list[tuple] = []

    class Writer:
        def __init__(self, folder):
            calls.append(("open", Path(folder).name))

        def add_scalar(self, key, value, step):
            calls.append((key, value, step))

        def flush(self):
            pass

        def close(self):
            calls.append(("close",))

    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", types.SimpleNamespace(SummaryWriter=Writer))
    ctx = TrainingContext([1, 2, 3, 4], [5], folder=tmp_path, log=lambda _: None)
    ctx.end_epoch(0, val_loss=2.0)
    ctx.end_epoch(1, train_loss=1.0, val_loss=1.5)
    ctx.finish()
    assert [c for c in calls if c[0] not in ("cpu_seconds",)] == [
        ("open", "tensorboard"), ("val_loss", 2.0, 0), ("train_loss", 1.0, 1), ("val_loss", 1.5, 1), ("close",)]
    assert (tmp_path / "metrics.csv").read_text().splitlines()[0] == "epoch,val_loss,cpu_seconds,train_loss"


def test_built_in_resume_gives_the_checkpoint_of_an_uninterrupted_run(tmp_path, background):
    cfg = tiny_config(tmp_path / "tiny.toml", lr=0.01)
    say = lambda _: None  # noqa: E731
    bib.train("bc-mlp", background, tmp_path / "a", config=cfg, epochs=1, device="cpu", log=say)
    bib.train("bc-mlp", background, tmp_path / "b", config=cfg, epochs=3, device="cpu", log=say, resume_from=tmp_path / "a")
    bib.train("bc-mlp", background, tmp_path / "c", config=cfg, epochs=3, device="cpu", log=say)
    assert (tmp_path / "b" / "checkpoint.pt").read_bytes() == (tmp_path / "c" / "checkpoint.pt").read_bytes()
    b, c = (torch.load(tmp_path / d / "last.pt", weights_only=True) for d in "bc")  # its history has clock times
    assert b["epoch"] == c["epoch"] == 3 and b["numpy_rng"] == c["numpy_rng"]
    assert all(torch.equal(b["model"][k], c["model"][k]) for k in c["model"])
    assert torch.equal(b["torch_rng"], c["torch_rng"])


def test_a_resumed_run_whose_best_epoch_is_0_gives_the_uninterrupted_checkpoint_too(tmp_path, background):
    """The checkpoint of a run whose best epoch is 0 is written at its end with the whole history; resumed, part of
    that history came from JSON (last.pt) and its bytes differed (pickle's memo follows the strings' identity), though
    every value was equal. _metrics now goes through JSON."""
    cfg = tiny_config(tmp_path / "frozen.toml", lr=0.0)
    say = lambda _: None  # noqa: E731
    bib.train("bc-mlp", background, tmp_path / "a", config=cfg, epochs=1, device="cpu", log=say)
    bib.train("bc-mlp", background, tmp_path / "b", config=cfg, epochs=2, device="cpu", log=say, resume_from=tmp_path / "a")
    c = bib.train("bc-mlp", background, tmp_path / "c", config=cfg, epochs=2, device="cpu", log=say)
    assert c.card["best_epoch"] == 0
    assert (tmp_path / "b" / "checkpoint.pt").read_bytes() == (tmp_path / "c" / "checkpoint.pt").read_bytes()


def test_built_in_best_epoch_zero_warns_and_stops_early(tmp_path, background):
    from bib.observers.bc import BCConfig

    cfg = tiny_config(tmp_path / "frozen.toml", lr=0.0, patience=1)  # lr 0: no epoch can beat the untrained net
    msgs: list[str] = []
    trained = bib.train("bc-mlp", background, tmp_path / "o", config=cfg, epochs=3, device="cpu", log=msgs.append)
    assert trained.card["best_epoch"] == 0 and trained.card["stopped_early"]
    assert any(m.startswith("warning: best epoch is 0, the untrained model: no epoch improved val_loss") for m in msgs)
    log = json.loads((tmp_path / "o" / "checkpoint.log.json").read_text())
    assert [h["epoch"] for h in log["history"]] == [0, 1] and log["warnings"] == trained.card["warnings"]
    prov = log["provenance"]
    import bib.observers.bc as bc

    assert prov["options"]["model"] == dataclasses.asdict(BCConfig(**TINY))
    assert prov["options"]["train"]["patience"] == 1 and prov["options"]["train"]["lr"] == 0.0
    assert prov["source"]["file"] == "bc.py"
    assert prov["source"]["sha256"] == hashlib.sha256(Path(bc.__file__).read_bytes()).hexdigest()
    assert (prov["device"], prov["torch"]) == ("cpu", torch.__version__) and prov["cpu_seconds"] > 0


def test_cli_patience_and_resume_from(tmp_path, background, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = str(tiny_config(tmp_path / "tiny.toml", lr=0.01))
    bg = str(background)
    assert run("train", "bc-mlp", bg, "--out", "a", "--config", cfg, "--epochs", "1", "--device", "cpu") == 0
    assert run("train", "bc-mlp", bg, "--out", "b", "--config", cfg, "--epochs", "2", "--resume-from", "a",
               "--device", "cpu") == 0
    assert "resumed from a/last.pt after epoch 1" in capsys.readouterr().err
    assert [h["epoch"] for h in json.loads((tmp_path / "b" / "checkpoint.log.json").read_text())["history"]] == [0, 1, 2]
    assert run("train", "bc-mlp", bg, "--out", "c", "--config", cfg, "--resume-from", "nowhere") == 2
    assert "bib: error: nowhere: nothing to resume from (no last.pt;" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()
    frozen = str(tiny_config(tmp_path / "frozen.toml", lr=0.0))
    assert run("train", "bc-mlp", bg, "--out", "d", "--config", frozen, "--epochs", "4", "--patience", "2",
               "--device", "cpu") == 0
    err = capsys.readouterr().err
    assert "early stop after epoch 2: val_loss did not improve for 2 epochs (best epoch 0)" in err
    assert "warning: best epoch is 0, the untrained model" in err
    # --patience 0 overrides a config's patience > 0 (it could not: 0 was the option's default)
    impatient = str(tiny_config(tmp_path / "impatient.toml", lr=0.0, patience=1))
    assert run("train", "bc-mlp", bg, "--out", "e", "--config", impatient, "--epochs", "3", "--patience", "0",
               "--device", "cpu") == 0
    assert "early stop" not in capsys.readouterr().err
    log = json.loads((tmp_path / "e" / "checkpoint.log.json").read_text())
    assert [h["epoch"] for h in log["history"]] == [0, 1, 2, 3] and log["patience"] == 0
    assert run("train", "bc-mlp", bg, "--out", "f", "--config", impatient, "--epochs", "3", "--device", "cpu") == 0
    assert "early stop after epoch 1" in capsys.readouterr().err  # the config's patience without --patience


def test_spread_numbers_of_known_embeddings():
    from bib.observers.spread import collapse_warning, spread_of

    got = spread_of(np.array([[0.0, 0.0], [3.0, 4.0], [3.0, 4.0], [3.0, 4.000001]]))
    # 4 states, 2 vectors to 5 decimals; distances 5, 5, 5, 0, 0, 0 (x2 ordered) over 12 -> 2.5; mean norm 3.75
    assert got == {"states": 4, "distinct_vectors": 2, "distinct_fraction": 0.5, "units": 2, "varying_units": 2,
                   "distance_to_norm": round(2.5 / 3.75, 4)}
    assert collapse_warning(got) == ("the state encoder collapses: 4 distinct validation states map to 2 distinct "
                                     "vectors (50.0%, below 90%); 2 of 2 units vary")
    assert collapse_warning({**got, "distinct_fraction": 0.9}) is None


def test_embedding_spread_sees_a_collapsed_encoder(tmp_path, background):
    from bib.observers.bc import BCMLPObserver
    from bib.observers.config import TrainConfig
    from bib.observers.encoders import collate
    from bib.observers.spread import embedding_spread
    from bib.observers.training import run_training
    from bib.stimuli.blind import read_blind

    paths = [r.path for r in find_episodes(background).refs]
    eps = [read_blind(p, set()) for p in paths[:10]]
    obs = BCMLPObserver(**TINY)
    dense = [collate([obs.encode(e)]) for e in eps]
    states = len(np.unique(np.concatenate([b.dense(torch.arange(b.n_states)).flatten(1).numpy() for b in dense]), axis=0))
    fresh = embedding_spread(obs, eps)
    assert fresh["states"] == states and fresh["units"] == 16
    assert fresh["distinct_fraction"] >= 0.9 and fresh["distance_to_norm"] > 0
    last = obs.net.encoder.head[1]  # the embedding layer: all zero, so every state maps to one vector
    with torch.no_grad():
        last.weight.zero_()
        last.bias.zero_()
    dead = embedding_spread(obs, eps)
    assert (dead["states"], dead["distinct_vectors"], dead["varying_units"], dead["distance_to_norm"]) == (states, 1, 0, 0.0)
    msgs: list[str] = []
    report = run_training(obs, paths[:8], paths[8:12], TrainConfig(epochs=1, lr=0.0, batch_size=4, loader_workers=0),
                          tmp_path / "checkpoint.pt", log=msgs.append)
    log = json.loads((tmp_path / "checkpoint.log.json").read_text())
    assert log["embedding"]["distinct_vectors"] == 1 and log["embedding"]["states"] > 1
    collapse = [w for w in report.warnings if w.startswith("the state encoder collapses")]
    assert collapse and log["warnings"] == report.warnings and f"warning: {collapse[0]}" in msgs
