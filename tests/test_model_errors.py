"""Issue 42 items 1 and 5: one answer on every scoring route (torch models in eval mode under inference_mode), and
a user's model failing as one line: a training folder refused or made before fit, a str folder, a surprise that
requires grad, a state_dict mismatch with its detail, option values checked against the constructor's
annotations, and the model's own exception naming the model and the episode (``bib --debug``: the traceback)."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import bib
from bib.cli import main
from bib.episode import load_episode
from bib.errors import BibInputError, ModelError
from bib.evaluation import find_episodes
from bib.observers.user_training import train_model
from bib.stimuli.build import build

MODULE = textwrap.dedent('''
    import numpy as np
    import torch

    class Probe(torch.nn.Module):
        """Surprise 11 in training mode (dropout's scale), 10 in eval mode; a grad-requiring tensor."""

        name = "probe"

        def __init__(self, width: int = 4, rate: float = 0.5):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(width))
            self.drop = torch.nn.Dropout(rate)

        def fit(self, background_episodes):
            (__import__("pathlib").Path("fit-ran")).write_text("yes")

        def surprise(self, episode):
            grad = torch.is_grad_enabled()
            base = 10.0 if not self.training else 11.0
            out = self.weight.sum() * 0 + base + torch.zeros(episode.test.n_steps)
            assert out.requires_grad == grad
            return out

    class Raises:
        name = "raises"

        def fit(self, background_episodes):
            pass

        def surprise(self, episode):
            if episode.test.n_steps > 0:
                raise ValueError("boom in the user's code")
            return np.zeros(0)

    class Epochs(torch.nn.Module):
        name = "epochs"

        def __init__(self, epochs: int = 1, lr: float | None = None, tag: str = "x", flag: bool = False):
            super().__init__()
            self.epochs = epochs
            self.lin = torch.nn.Linear(2, 2)

        def fit(self, background_episodes):
            (__import__("pathlib").Path("fit-ran")).write_text("yes")

        def surprise(self, episode):
            return np.zeros(episode.test.n_steps)
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
    build([("single-object", 6)], seed=1, out=root / "background")
    build([("preference", 2)], seed=3, out=root / "set")
    return root


@pytest.fixture()
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "probes.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    return tmp_path


def test_every_route_scores_a_torch_model_in_eval_mode_without_autograd(here: Path, sets: Path) -> None:
    from probes import Probe

    model = Probe()
    assert model.training
    by_instance = bib.score(model, sets / "set")
    assert model.training  # its own mode is given back
    by_name = bib.score("probes:Probe", sets / "set")
    assert run("score", "probes:Probe", str(sets / "set"), "--out", str(here / "cli"), "--workers", "2") == 0
    trained = here / "trained"
    assert run("train", "probes:Probe", str(sets / "background"), "--out", str(trained)) == 0
    by_checkpoint = bib.score("probes:Probe", sets / "set", checkpoint=trained)
    for scores in (by_instance, by_name, by_checkpoint):
        assert {float(v.max()) for v in scores.steps.values()} == {10.0}
    lines = (here / "cli" / "results.csv").read_text().splitlines()[1:]
    assert {line.split(",")[1] for line in lines} == {"10.0"}


def test_train_model_makes_a_missing_folder_before_fit_and_takes_a_str(here: Path, sets: Path) -> None:
    card = train_model("probes:Probe", sets / "background", str(here / "new" / "model"), log=lambda _: None)
    assert card["name"] == "probe" and (here / "new" / "model" / "model.json").is_file()
    assert (here / "new" / "model" / "weights.pt").is_file()


def test_train_model_refuses_a_folder_with_files_before_fit(here: Path, sets: Path) -> None:
    (here / "full").mkdir()
    (here / "full" / "keep.txt").write_text("mine")
    with pytest.raises(BibInputError, match=r"full: already holds files; give a new or empty folder"):
        train_model("probes:Probe", sets / "background", here / "full", log=lambda _: None)
    (here / "file").write_text("x")
    with pytest.raises(BibInputError, match=r"file: is a file"):
        train_model("probes:Probe", sets / "background", here / "file", log=lambda _: None)
    assert not (here / "fit-ran").exists()  # refused before fit
    assert (here / "full" / "keep.txt").read_text() == "mine"


def test_a_failed_training_leaves_no_folder_it_made(here: Path, sets: Path) -> None:
    with pytest.raises(BibInputError, match="option epochs='one'"):
        train_model("probes:Epochs", sets / "background", here / "made", options={"epochs": "one"}, log=lambda _: None)
    assert not (here / "made").exists() and not (here / "fit-ran").exists()


@pytest.mark.parametrize("option, says", [
    ("epochs=one", "option epochs='one' (str) does not fit its annotation epochs: int"),
    ("epochs=true", "option epochs=True (bool) does not fit its annotation epochs: int"),
    ("lr=fast", "option lr='fast' (str) does not fit its annotation lr: float | None"),
    ("tag=3", "option tag=3 (int) does not fit its annotation tag: str"),
    ("flag=1", "option flag=1 (int) does not fit its annotation flag: bool"),
])
def test_option_values_are_checked_against_the_constructor_before_any_work(here: Path, sets: Path, capsys,
                                                                           option: str, says: str) -> None:
    assert run("train", "probes:Epochs", str(sets / "background"), "--out", str(here / "t"), "--option", option) == 2
    err = capsys.readouterr().err
    assert err == f"bib: error: observer 'probes:Epochs': {says}\n"
    assert not (here / "t").exists() and not (here / "fit-ran").exists()
    assert run("score", "probes:Epochs", str(sets / "set"), "--out", str(here / "s"), "--option", option) == 2
    assert capsys.readouterr().err == f"bib: error: observer 'probes:Epochs': {says}\n"
    ok = bib.score("probes:Epochs", sets / "set", options={"epochs": 2, "lr": 1, "tag": "y", "flag": True})
    assert len(ok.steps) == 4


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_models_exception_is_one_line_naming_it_and_the_episode(here: Path, sets: Path, capsys, workers: str) -> None:
    assert run("score", "probes:Raises", str(sets / "set"), "--out", str(here / "r"), "--workers", workers) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    ids = [r.id for r in find_episodes(sets / "set").refs]
    named = [i for i in ids if f"on episode {i}:" in err]
    assert len(named) == 1, err
    assert err == (f"bib: error: observer 'raises' raised ValueError on episode {named[0]}: boom in the user's code "
                   "(bib --debug shows the traceback)\n")
    assert not (here / "r").exists()
    assert run("--debug", "score", "probes:Raises", str(sets / "set"), "--out", str(here / "r"), "--workers", workers) == 2
    err = capsys.readouterr().err
    assert err.startswith("bib: error: observer 'raises' raised ValueError") and "Traceback" in err
    assert 'raise ValueError("boom in the user\'s code")' in err


def test_the_api_raises_the_models_error_with_its_traceback(here: Path, sets: Path) -> None:
    from probes import Raises

    with pytest.raises(ModelError, match=r"observer 'raises' raised ValueError on episode \S+: boom") as info:
        bib.score(Raises(), sets / "set")
    assert "Traceback" in info.value.detail and isinstance(info.value, BibInputError)


def test_a_state_dict_mismatch_says_what_does_not_fit(here: Path, sets: Path) -> None:
    trained = here / "trained"
    assert run("train", "probes:Probe", str(sets / "background"), "--out", str(trained)) == 0
    with pytest.raises(BibInputError) as info:
        bib.score("probes:Probe", sets / "set", checkpoint=trained, options={"width": 3})
    message = str(info.value)
    assert "weights do not fit Probe (size mismatch for weight: copying a param with shape torch.Size([4])" in message
    assert "the shape in current model is torch.Size([3])" in message and "\n" not in message


def test_a_learned_checkpoint_mismatch_says_what_does_not_fit(tmp_path: Path) -> None:
    from bib.observers.learned import learned_class, load_observer

    cls = learned_class("bc-mlp")
    obs = cls(cls.Config())
    ckpt = obs.checkpoint()
    name, value = next(iter(ckpt["state_dict"].items()))
    ckpt["state_dict"][name] = torch.zeros(*(d + 1 for d in value.shape))
    torch.save(ckpt, tmp_path / "c.pt")
    with pytest.raises(BibInputError, match=rf"weights do not fit the bc-mlp model \(size mismatch for {name}: "):
        load_observer(tmp_path / "c.pt")


def test_a_surprise_that_requires_grad_is_read(here: Path, sets: Path) -> None:
    class Grad:
        name = "grad"

        def __init__(self) -> None:
            self.w = torch.ones(1, requires_grad=True)

        def surprise(self, episode):
            return (self.w * torch.arange(episode.test.n_steps, dtype=torch.float32)).clone()

    ep = load_episode(find_episodes(sets / "set").refs[0].path)
    scores = bib.score(Grad(), [ep])
    assert np.array_equal(scores.steps[ep.id], np.arange(ep.test.n_steps, dtype=float))


def test_an_exception_in_fit_is_one_line_naming_the_model(here: Path, sets: Path, capsys) -> None:
    (here / "fails.py").write_text(textwrap.dedent('''
        import torch

        class FailsToFit(torch.nn.Module):
            name = "fails"

            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(2, 2)

            def fit(self, background_episodes):
                raise RuntimeError("no GPU memory left, say")

            def surprise(self, episode):
                return [0.0] * episode.test.n_steps
    '''))
    assert run("train", "fails:FailsToFit", str(sets / "background"), "--out", str(here / "f")) == 2
    err = capsys.readouterr().err
    assert err.endswith("bib: error: observer 'fails:FailsToFit' raised RuntimeError in fit: no GPU memory left, say "
                        "(bib --debug shows the traceback)\n") and "Traceback" not in err
    assert not (here / "f").exists()
    assert run("--debug", "train", "fails:FailsToFit", str(sets / "background"), "--out", str(here / "f")) == 2
    assert 'raise RuntimeError("no GPU memory left, say")' in capsys.readouterr().err


SEEN = textwrap.dedent('''
    import json
    import pathlib

    import torch

    class Seen(torch.nn.Module):
        """Records what its fit is handed: ids and outcomes."""

        name = "seen"

        def __init__(self, scale: float = 1.0):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.tensor(float(scale)))

        def fit(self, background_episodes):
            seen = [[ep.id, ep.outcome] for ep in background_episodes]
            pathlib.Path("seen.json").write_text(json.dumps(seen))

        def surprise(self, episode):
            return [float(self.scale)] * episode.test.n_steps
''')


def test_bib_train_is_bib_train_from_python(here: Path, sets: Path, capsys) -> None:
    (here / "seen.py").write_text(SEEN)
    real = {r.id for r in find_episodes(sets / "background").refs}
    assert run("train", "seen:Seen", str(sets / "background"), "--out", "cli", "--option", "scale=2") == 0
    printed = capsys.readouterr().out
    cli_seen = (here / "seen.json").read_text()
    trained = bib.train("seen:Seen", str(sets / "background"), "api", scale=2)  # a str folder, made here
    assert str(trained) + "\n" == printed.replace("cli", "api")
    assert (here / "seen.json").read_text() == cli_seen  # the same blind view: opaque ids, no outcome
    seen = json.loads(cli_seen)
    assert len(seen) == len(real) and not {i for i, _ in seen} & real and {o for _, o in seen} == {"none"}
    assert (here / "api" / "weights.pt").read_bytes() == (here / "cli" / "weights.pt").read_bytes()
    api_card, cli_card = (json.loads((here / d / "model.json").read_text()) for d in ("api", "cli"))
    cpu = [card["provenance"].pop("cpu_seconds") for card in (api_card, cli_card)]  # the one clocked field
    assert all(isinstance(c, float) and c >= 0 for c in cpu)
    assert api_card == cli_card and api_card["options"] == {"scale": 2}
    assert json.loads((here / "api" / "provenance.json").read_text())["job"]["observer"] == "seen:Seen"
    # an instance: trained as it is, restored by its class
    from seen import Seen

    assert str(bib.train(Seen(3.0), sets / "background", here / "inst")) == (
        f"seen: trained model written to {here / 'inst'} (model.json and weights.pt)")
    assert bib.score("seen:Seen", sets / "set", checkpoint=here / "inst").surprise() == {
        k: 3.0 for k in bib.score(Seen(3.0), sets / "set").surprise()}


def test_bib_train_refuses_before_fit(here: Path, sets: Path) -> None:
    (here / "seen.py").write_text(SEEN)
    (here / "afile").write_text("x")
    for call, message in (
        (lambda: bib.train("seen:Seen", sets / "background", here / "afile"), "exists and is a file"),
        (lambda: bib.train("random", sets / "background", here / "o"), "'random' is not a learned observer"),
        (lambda: bib.train("bc-mlp", sets / "background", here / "o", scale=2), "--option is for your own"),
        (lambda: bib.train("seen:Seen", sets / "background", here / "o", epochs=2),
         r"--epochs, --patience and --resume-from go to a fit\(episodes, context\); Seen.fit takes the episodes alone"),
        (lambda: bib.train("seen:Seen", sets / "background", here / "o", config="x.toml"), "--config configures"),
        (lambda: bib.train("seen:Seen", sets / "background", here / "o", resume_from=here), "nothing to resume from"),
        (lambda: bib.train("seen:Seen", sets / "background", here / "o", scale="big"), r"scale='big' \(str\)"),
    ):
        with pytest.raises(BibInputError, match=message):
            call()
    assert not (here / "seen.json").exists() and not (here / "o").exists()


def test_bib_train_a_learned_observer_gives_the_clis_checkpoint(here: Path, sets: Path, capsys) -> None:
    assert run("train", "bc-mlp", str(sets / "background"), "--out", "cli", "--epochs", "1", "--device", "cpu") == 0
    printed = capsys.readouterr().out
    trained = bib.train("bc-mlp", sets / "background", "api", epochs=1, device="cpu", log=lambda _: None)
    assert str(trained) == "bc-mlp: checkpoint written to api/checkpoint.pt" and printed.startswith("bc-mlp: checkpoint")
    assert (here / "api" / "checkpoint.pt").read_bytes() == (here / "cli" / "checkpoint.pt").read_bytes()
    assert trained.card["n_train"] + trained.card["n_val"] == 6


def test_option_annotations_are_read_as_written_under_future_annotations() -> None:
    from typing import Optional

    from bib.observers.registry import check_option_type

    for annotation in ("int", int, "Optional[int]", Optional[int], "int | None", int | None):  # noqa: UP045
        check_option_type("m:C", "n", 3, annotation)
        with pytest.raises(BibInputError, match=r"option n='3' \(str\) does not fit its annotation n: "):
            check_option_type("m:C", "n", "3", annotation)
    check_option_type("m:C", "x", 1, "float")  # an int is a float
    for unchecked in ("list[int]", list[int], "Sequence[float]", "MyType"):
        check_option_type("m:C", "v", "anything", unchecked)
