"""`bib score --observer package.module:Class`: a user's own observer, scored like a built-in one."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from bib.cli import main
from bib.errors import BibInputError
from bib.evaluation import find_episodes, read_results
from bib.observers.registry import make_observer
from bib.stimuli.build import build

MODULE = textwrap.dedent('''
    import numpy as np

    class StepCount:
        """Surprise = how many steps the test trial has so far (a toy model)."""

        name = "step-count"

        def __init__(self, scale=1.0):
            self.scale = scale

        def fit(self, background_episodes):
            pass

        def surprise(self, episode):
            return self.scale * np.arange(1, episode.test.n_steps + 1, dtype=float)

    def no_surprise_method():
        return object()

    class OneShort(StepCount):
        """Returns one value fewer than the test trial has steps (issue 28)."""

        name = "one-short"

        def surprise(self, episode):
            return super().surprise(episode)[:-1]
''')


@pytest.fixture()
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "toy_models.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(*argv: str) -> int:
    try:
        main(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


@pytest.mark.parametrize("workers", ["1", "2"])
def test_cli_scores_with_a_class_from_the_working_directory(user_module: Path, workers: str) -> None:
    build([("preference", 2)], 3, user_module / "set")
    run = user_module / f"run-{workers}"
    assert _run("score", "toy_models:StepCount", str(user_module / "set"), "--out", str(run),
                "--option", "scale=2", "--workers", workers) == 0
    out = run / "results.csv"
    found = find_episodes(user_module / "set")
    scores = read_results(out, found)
    from bib.episode import load_episode

    for ref in found.refs:
        assert scores[ref.id] == 2.0 * load_episode(ref.path).test.n_steps  # max readout of 2 * [1..n]


def test_make_observer_builds_the_class_with_its_options(user_module: Path) -> None:
    obs = make_observer("toy_models:StepCount", scale=3.0)
    assert obs.name == "step-count" and obs.scale == 3.0
    with pytest.raises(BibInputError, match=r"unknown option\(s\) speed; it takes scale"):
        make_observer("toy_models:StepCount", speed=1)
    with pytest.raises(BibInputError, match="takes no checkpoint"):
        make_observer("toy_models:StepCount", checkpoint=user_module / "toy_models.py")


@pytest.mark.parametrize("name, message", [
    ("toy_models:Missing", "has no attribute 'Missing'"),
    ("no_such_module_xyz:Thing", "cannot import 'no_such_module_xyz'"),
    ("toy_models:no_surprise_method", "without a surprise"),
    (":Thing", "expected a registered name or package.module:attr"),
])
def test_bad_user_observers_are_one_line_errors(user_module: Path, name: str, message: str) -> None:
    with pytest.raises(BibInputError, match=message):
        make_observer(name)


def test_a_user_observer_gives_the_same_results_as_the_same_code_registered(user_module: Path) -> None:
    from bib.episode import load_episode

    build([("single-object", 1)], 0, user_module / "bg")
    ep = load_episode(next((user_module / "bg" / "episodes").glob("*.json")))
    assert np.array_equal(make_observer("toy_models:StepCount").surprise(ep), np.arange(1, ep.test.n_steps + 1))


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_observer_with_the_wrong_number_of_values_is_one_line_naming_both_counts(user_module: Path, workers: str,
                                                                                     capsys, monkeypatch) -> None:
    from bib.episode import load_episode

    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    build([("preference", 1)], 3, user_module / "set")
    run = user_module / "run"
    assert _run("score", "toy_models:OneShort", str(user_module / "set"), "--out", str(run), "--workers", workers) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    ep = next(load_episode(r.path) for r in find_episodes(user_module / "set").refs if r.id in err)
    assert err == (f"bib: error: observer 'one-short' gave {ep.test.n_steps - 1} surprise values for episode {ep.id}, "
                   f"whose test trial has {ep.test.n_steps} steps\n")
    assert not run.exists() and not list(user_module.glob(".run*"))  # nothing written
