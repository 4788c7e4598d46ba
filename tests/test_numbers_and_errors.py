"""Issue 39 item 6: numbers finite, typed and ranged at every entry (a bool is not a number), no
warning before the ``bib: error:`` line, and no megabyte-long value echoed in a message (a user's
model that raises is issue 42's: tests/test_model_errors.py)."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest

from bib.cli import main
from bib.errors import BibInputError
from bib.observers.bc import BCConfig
from bib.observers.config import TrainConfig, config_from_dict
from bib.tasks import task_ids

BAD_INPUTS = Path(__file__).with_name("bad_inputs")


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    got = capsys.readouterr()
    return int(exc.value.code or 0), got.out, got.err


@pytest.mark.parametrize(("cls", "values", "message"), [
    (BCConfig, {"dropout": 5.0}, "field 'dropout' must be in [0, 1), got 5.0"),
    (BCConfig, {"dropout": -3}, "field 'dropout' must be in [0, 1), got -3.0"),
    (BCConfig, {"dropout": float("nan")}, "field 'dropout' expects float, got nan"),
    (TrainConfig, {"lr": float("nan")}, "field 'lr' expects float, got nan"),
    (TrainConfig, {"lr": -1e-3}, "field 'lr' must be in [0, 10], got -0.001"),
    (TrainConfig, {"lr": float("inf")}, "field 'lr' expects float, got inf"),
    (TrainConfig, {"seed": True}, "field 'seed' expects int, got True"),
    (TrainConfig, {"epochs": 0}, "field 'epochs' must be in [1, 100000], got 0"),
    (TrainConfig, {"batch_size": -1}, "field 'batch_size' must be in [1, 65536], got -1"),
])
def test_config_numbers_are_typed_finite_and_ranged(cls, values, message) -> None:
    with pytest.raises(BibInputError) as exc:
        config_from_dict(cls, values, "c.toml: [train]")
    assert str(exc.value) == f"c.toml: [train]: {message}"


def test_spec_numbers_are_strict(tmp_path, capsys) -> None:
    for text, message in [("seed = true", "field 'seed': Input should be a valid integer (got True)"),
                          ('seed = "3"', "field 'seed': Input should be a valid integer (got '3')")]:
        spec = tmp_path / "s.toml"
        spec.write_text(f'name = "x"\n{text}\n[[tasks]]\nid = "single-object"\nn = 1\n')
        code, _, err = _run(capsys, "generate", str(spec), "--out", str(tmp_path / "o"))
        assert code == 2 and err == f"bib: error: {spec}: {message}\n"
        assert not (tmp_path / "o").exists()


def test_a_canvas_out_of_range_is_refused_before_out_is_made(tmp_path, capsys) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('name = "x"\nseed = 1\n[[tasks]]\nid = "single-object"\nn = 1\n[render]\ncanvas = [1e9, 1e9]\n'
                    "video = true\n")
    code, _, err = _run(capsys, "generate", str(spec), "--out", str(tmp_path / "o"))
    assert code == 2 and "render setting 'canvas' must be two whole numbers of pixels from 1 to 8192" in err
    assert not (tmp_path / "o").exists()  # was refused only after writing episodes into --out


def test_a_megabyte_name_is_not_echoed_whole(tmp_path, capsys) -> None:
    spec = tmp_path / "s.toml"
    for body in ['name = "' + "x" * 1_000_000 + '!"\nseed = 1\n[[tasks]]\nid = "single-object"\nn = 1\n',
                 'name = "x"\nseed = 1\n[[tasks]]\nid = "' + "y" * 1_000_000 + '"\nn = 1\n']:
        spec.write_text(body)
        code, _, err = _run(capsys, "generate", str(spec), "--out", str(tmp_path / "o"))
        known = len(", ".join(task_ids()))  # an unknown id's message lists the registered ones
        assert code == 2 and err.count("\n") == 1 and len(err) < 300 + known, len(err)
        assert "x" * 200 not in err and "y" * 200 not in err


def test_an_absurd_accuracy_is_refused_not_shown_as_inf(tmp_path, capsys) -> None:
    table = tmp_path / "t.csv"
    table.write_text("observer,condition,accuracy\nmine,preference,1e308\n")
    code, out, err = _run(capsys, "leaderboard", str(table))
    assert code == 2 and out == "" and err == f"bib: error: {table}: row 2: accuracy '1e308' is not from 0 to 1\n"
    ev = tmp_path / "ev.json"
    ev.write_text(json.dumps({"conditions": {"preference": {"accuracy": True}}, "readout": "max"}))
    code, _, err = _run(capsys, "leaderboard", "--add", f"x={ev}")
    assert code == 2 and "conditions.preference.accuracy: expected a number from 0 to 1, got 'True'" in err


def test_a_model_cards_options_must_be_an_object(tmp_path) -> None:
    from bib.observers.trainable import MODEL_CARD, read_card

    (tmp_path / MODEL_CARD).write_text(json.dumps({"format": "bib.model/1", "saved": "save", "target": "m:C",
                                                   "options": "abc"}))
    from bib.observers import trainable

    doc = json.loads((tmp_path / MODEL_CARD).read_text())
    doc["format"] = trainable.FORMAT
    (tmp_path / MODEL_CARD).write_text(json.dumps(doc))
    with pytest.raises(BibInputError, match=r"model.json: field 'options' must be an object of named options, got 'abc'"):
        read_card(tmp_path)


def test_no_warning_before_the_error_line(tmp_path, capsys, monkeypatch) -> None:
    """A warning raised while a command runs does not come before `bib: error:` (it used to, from numpy)."""
    import bib.guard

    real = bib.guard.load_toml

    def noisy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        warnings.warn("divide by zero encountered in log", RuntimeWarning, stacklevel=1)
        return real(*args, **kwargs)

    def shown(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001, ANN202
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    monkeypatch.setattr("bib.stimuli.spec.load_toml", noisy)
    monkeypatch.setattr(warnings, "showwarning", shown)  # printed on stderr, as outside pytest
    spec = tmp_path / "s.toml"
    spec.write_text('name = "x"\nseed = -1\n[[tasks]]\nid = "single-object"\nn = 1\n')
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        code, _, err = _run(capsys, "generate", str(spec), "--out", str(tmp_path / "o"))
        assert code == 2 and err.startswith("bib: error: ") and err.count("\n") == 1, err
        spec.write_text('name = "x"\nseed = 1\n[[tasks]]\nid = "single-object"\nn = 1\n')
        code, out, err = _run(capsys, "generate", str(spec), "--out", str(tmp_path / "o"))
    assert code == 0 and "RuntimeWarning: divide by zero encountered in log" in err  # shown after a success
