"""The training context a model's ``fit(episodes, context)`` gets (issue 42 item 2), and the provenance of a training
run (item 4): the 80/20 split, the seed, device and threads, a logger (``checkpoint.log.json``, ``metrics.csv``,
TensorBoard when installed), early stopping, save-last (``last.pt``, what ``resume_from`` continues) and save-best,
and the warning when the best epoch is the untrained one (epoch 0).

The built-in learned observers train through the same context (:func:`bib.observers.training.run_training`).
Nothing here imports torch unless the model's own module has imported it.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import io
import json
import math
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bib.errors import BibInputError
from bib.io import atomic_write_text, csv_dict_writer

LOG = "checkpoint.log.json"
"""The run's log: every epoch's metrics and timings, the best epoch, warnings and the provenance."""
METRICS = "metrics.csv"
"""The run's history as CSV, one row per epoch (epoch 0: the untrained model)."""
LAST = "last.pt"
"""The last epoch's state (weights, optimizer, random generators, history): what ``resume_from`` continues."""
TENSORBOARD = "tensorboard"
"""Where the scalars go when the ``tensorboard`` package is installed (never required)."""
LAST_FORMAT = "bib.last/1"
"""``format`` of :data:`LAST`."""
UNTRAINED_BEST = ("best epoch is 0, the untrained model: no epoch improved {monitor} ({value:.6g}), so the untrained "
                  "weights are what is kept (try another learning rate or more epochs)")
"""The warning (logged, and recorded in ``checkpoint.log.json`` and the model card) when training never improved."""


def split(ids: Sequence[Any]) -> tuple[list[int], list[int]]:
    """Positions of the training and validation items of an id-sorted list: every fifth (positions 4, 9, 14, ...)
    is validation, the rest training. Interleaving keeps every background task in both parts (the ids of one task
    are contiguous, so a plain first-80% cut would leave whole tasks out of training)."""
    train = [i for i in range(len(ids)) if i % 5 != 4]
    val = [i for i in range(len(ids)) if i % 5 == 4]
    return train, val


def _torch() -> Any:
    """torch when something has imported it (a torch model's module has), else None."""
    return sys.modules.get("torch")


def is_module(obj: Any) -> bool:
    """True for a ``torch.nn.Module`` (without importing torch)."""
    torch = _torch()
    return torch is not None and isinstance(obj, torch.nn.Module)


def source_hash(obj: Any) -> dict[str, Any]:
    """``{"module", "file", "sha256"}`` of the source file that defines ``obj``'s class (or ``obj``, a class): the
    file's name and the SHA-256 of its bytes (None when the source is not a file, e.g. a class made in ``__main__``
    of an interactive session)."""
    cls = obj if inspect.isclass(obj) else type(obj)
    try:
        path = inspect.getsourcefile(cls)
    except (TypeError, OSError):  # a class of a module with no file (an interactive session, exec'd code)
        path = None
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest() if path and Path(path).is_file() else None
    return {"module": cls.__module__, "class": cls.__qualname__, "file": Path(path).name if path else None,
            "sha256": digest}


def resolved_options(make: Any, given: Mapping[str, Any]) -> dict[str, Any]:
    """The constructor options a model was built with, defaults included: the parameters of ``make`` (a class or a
    factory) that have a default or were given, with ``given`` over the defaults (``checkpoint``, ``*args`` and
    ``**kwargs`` left out; options given through ``**kwargs`` kept)."""
    try:
        params = inspect.signature(make).parameters
    except (TypeError, ValueError):
        return dict(given)
    out: dict[str, Any] = {}
    for name, p in params.items():
        if name in ("self", "checkpoint") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if name in given:
            out[name] = given[name]
        elif p.default is not inspect.Parameter.empty:
            out[name] = p.default
    return out | {k: v for k, v in given.items() if k not in out}


def provenance(model: Any, *, device: str, options: Mapping[str, Any], cpu_seconds: float | None = None
               ) -> dict[str, Any]:
    """What a trained model's record says of how it was made: the resolved ``device``, the torch version (None
    when torch is not imported), the resolved constructor ``options``, the hash of the model's source
    (:func:`source_hash`) and the process CPU time of the training (``time.process_time``; loader processes not
    counted)."""
    torch = _torch()
    return {"device": device, "torch": getattr(torch, "__version__", None) if torch is not None else None,
            "options": dict(options), "source": source_hash(model),
            "cpu_seconds": None if cpu_seconds is None else round(cpu_seconds, 3)}


def _plain(v: Any) -> Any:
    """A metric as a Python number (a numpy or 0-d torch value converted; ints stay ints)."""
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if hasattr(v, "item") and not isinstance(v, (int, float)):
        return v.item()
    return v


def _json_value(v: Any) -> Any:
    return None if isinstance(v, float) and (math.isnan(v) or math.isinf(v)) else v


class Logger:
    """Writes the run's history to ``log_file`` (``checkpoint.log.json``, with ``fields`` around it) and
    ``metrics.csv`` beside it, and to TensorBoard (``tensorboard/`` beside it) when the ``tensorboard`` package is
    installed; rewritten atomically after every epoch. With no ``log_file``, nothing is written."""

    def __init__(self, log_file: Path | None) -> None:
        self.log_file = log_file
        self.writer: Any = None
        self.sent = 0
        if log_file is not None:
            folder = log_file.parent
            try:
                from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package
            except ImportError:
                SummaryWriter = None  # noqa: N806
            if SummaryWriter is not None:
                self.writer = SummaryWriter(str(folder / TENSORBOARD))

    def write(self, history: Sequence[Mapping[str, Any]], fields: Mapping[str, Any]) -> None:
        """Rewrite the log and the CSV with ``history`` (one dict per epoch); send the last row to TensorBoard."""
        if self.log_file is None:
            return
        rows = [{k: _json_value(v) for k, v in h.items()} for h in history]
        doc = {**fields, "history": rows}
        atomic_write_text(self.log_file, json.dumps(doc, indent=2, default=str) + "\n")
        if not rows:
            return
        columns = list(dict.fromkeys(k for h in rows for k in h))
        buf = io.StringIO()
        w = csv_dict_writer(buf, columns, lineterminator="\n")  # cells a spreadsheet would run are neutralised
        w.writeheader()
        w.writerows([{k: "" if h.get(k) is None else h.get(k) for k in columns} for h in rows])
        atomic_write_text(self.log_file.parent / METRICS, buf.getvalue())
        if self.writer is not None:
            for row in rows[self.sent:]:  # each epoch once
                for k, v in row.items():
                    if k != "epoch" and isinstance(v, (int, float)) and not isinstance(v, bool):
                        self.writer.add_scalar(k, v, int(row.get("epoch", 0)))
            self.sent = len(rows)
            self.writer.flush()

    def close(self) -> None:
        """Close the TensorBoard writer (later writes go to the log and the CSV only)."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None


@dataclass
class TrainingContext:
    """What ``fit(episodes, context)`` gets besides the episodes: the split, the seed, where to run, and the loop's
    bookkeeping. A typical ``fit``::

        def fit(self, episodes, context):
            opt = torch.optim.Adam(self.parameters(), lr=1e-3)
            start = context.start(self, opt)                 # seeds torch; resumes from `resume_from`
            if start == 1:
                context.end_epoch(0, self, opt, val_loss=self.loss(context.val))   # the untrained model
            for epoch in context.epochs(start):              # stops early after `patience` epochs without gain
                for i in context.rng.permutation(len(context.train)):
                    ...                                      # train on context.train[i]
                context.end_epoch(epoch, self, opt, train_loss=..., val_loss=self.loss(context.val))

    After ``fit`` returns, ``bib train`` keeps the best epoch's weights (lowest ``monitor``) of a ``torch.nn.Module``,
    and records the run in ``model.json`` and ``checkpoint.log.json``.

    Attributes:
        train: the training episodes (80%: all but every fifth by sorted id), in their blind view.
        val: the validation episodes (every fifth by sorted id), in their blind view.
        seed: the run's seed (``random``, numpy and torch were seeded with it before the model was built).
        device: the resolved torch device the model was moved to (``cpu``, ``cuda:0``, ...).
        threads: torch intra-op threads during ``fit`` (0: torch's default).
        max_epochs: epochs to run (``--epochs``; None: the model's own default).
        patience: stop after this many epochs without a lower ``monitor`` (0: never stop early).
        monitor: the metric that picks the best epoch, lower is better.
        folder: where the log, ``metrics.csv`` and ``last.pt`` go (None: nothing is written, unless ``log_file`` /
            ``last_file`` name the files).
        resume_from: a folder a previous run wrote (its ``last.pt``): :meth:`start` continues from there.
        log: where progress lines go.
        rng: a numpy Generator seeded with ``seed`` (restored on resume).
    """

    train: Sequence[Any]
    val: Sequence[Any]
    seed: int = 0
    device: str = "cpu"
    threads: int = 1
    max_epochs: int | None = None
    patience: int = 0
    monitor: str = "val_loss"
    folder: Path | None = None
    resume_from: Path | None = None
    log: Callable[[str], None] = print
    log_file: Path | None = None
    last_file: Path | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    rng: np.random.Generator = field(init=False)
    history: list[dict[str, Any]] = field(default_factory=list, init=False)
    best_epoch: int | None = field(default=None, init=False)
    best_value: float = field(default=math.inf, init=False)
    best_state: dict[str, Any] | None = field(default=None, init=False, repr=False)
    stopped_early: bool = field(default=False, init=False)
    warnings: list[str] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)
        self._since_best = 0
        self._cpu = time.process_time()
        if self.folder is not None:
            self.log_file = self.log_file or self.folder / LOG
            self.last_file = self.last_file or self.folder / LAST
        self._logger = Logger(self.log_file)

    # -- the loop ------------------------------------------------------------------------------------------------

    def start(self, model: Any = None, optimizer: Any = None) -> int:
        """Seed torch with :attr:`seed` and, with :attr:`resume_from`, restore ``model``'s weights, ``optimizer``'s
        state, the random generators, the history and the best epoch from its ``last.pt``; the first epoch to run
        (1, or the epoch after the one saved).

        Raises:
            BibInputError: a ``resume_from`` without ``last.pt``, or one whose weights do not fit ``model``.
        """
        torch = _torch()
        if torch is not None:
            torch.manual_seed(self.seed)
        if self.resume_from is None:
            return 1
        return self._resume(Path(self.resume_from), model, optimizer)

    def epochs(self, start: int = 1, default: int = 10) -> Iterator[int]:
        """The epochs to run, ``start`` to :attr:`max_epochs` (``default`` when not given), ending early when
        :meth:`end_epoch` says to stop."""
        last = self.max_epochs if self.max_epochs is not None else default
        for epoch in range(start, last + 1):
            if self.stopped_early:
                return
            yield epoch

    def end_epoch(self, epoch: int, model: Any = None, optimizer: Any = None, **metrics: float) -> bool:
        """Record epoch ``epoch`` (0: the untrained model): its ``metrics`` (``train_loss``, ``val_loss``, ...) go
        to the history with its CPU seconds; the best epoch so far (lowest :attr:`monitor`, or ``train_loss``
        when no ``val_loss`` is given) keeps a copy of ``model``'s weights (a ``torch.nn.Module``); the log, the
        CSV and ``last.pt`` are rewritten. True when training should stop (:attr:`patience` epochs without gain).
        """
        now = time.process_time()
        row = {"epoch": int(epoch), **{k: _plain(v) for k, v in metrics.items()},
               "cpu_seconds": round(now - self._cpu, 3)}
        self._cpu = now
        self.history.append(row)
        value = self._value(row)
        if value is not None and value < self.best_value:
            self.best_epoch, self.best_value, self._since_best = int(epoch), value, 0
            if is_module(model):
                self.best_state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
        elif epoch > 0:
            self._since_best += 1
        if self.patience and self._since_best >= self.patience and epoch > 0:
            self.stopped_early = True
            self.log(f"early stop after epoch {epoch}: {self.monitor} did not improve for {self.patience} epochs "
                     f"(best epoch {self.best_epoch})")
        self.save_last(epoch, model, optimizer)
        self.write()
        return self.stopped_early

    def _value(self, row: Mapping[str, Any]) -> float | None:
        for key in (self.monitor, "train_loss"):
            v = row.get(key)
            if isinstance(v, float) and math.isfinite(v):
                return v
        return None

    def finish(self, model: Any = None) -> None:
        """End the run: load the best epoch's weights into ``model`` (a ``torch.nn.Module`` whose best epoch was
        recorded), warn when that is epoch 0 (the untrained model), and write the log a last time."""
        if self.best_epoch == 0:
            warning = UNTRAINED_BEST.format(monitor=self.monitor, value=self.best_value)
            if warning not in self.warnings:
                self.warnings.append(warning)
                self.log(f"warning: {warning}")
        if self.best_state is not None and is_module(model):
            model.load_state_dict(self.best_state)
        self.write()
        self._logger.close()

    def summary(self) -> dict[str, Any]:
        """What the model card records of the run: epochs run, best epoch and value, early stop, warnings."""
        return {"epochs_run": max((h["epoch"] for h in self.history), default=0), "best_epoch": self.best_epoch,
                "best": {self.monitor: _json_value(self.best_value)} if self.best_epoch is not None else None,
                "stopped_early": self.stopped_early, "patience": self.patience,
                "n_train": len(self.train), "n_val": len(self.val), "seed": self.seed,
                "resumed_from": str(self.resume_from) if self.resume_from is not None else None,
                "warnings": list(self.warnings)}

    def write(self) -> None:
        """Rewrite ``checkpoint.log.json`` and ``metrics.csv`` (nothing without a folder)."""
        self._logger.write(self.history, {**self.fields, **self.summary(),
                                          "best_val_loss": _json_value(self.best_value)})

    # -- save-last and resume --------------------------------------------------------------------------------------

    def save_last(self, epoch: int, model: Any = None, optimizer: Any = None) -> None:
        """Write ``last.pt`` (a torch model only): the epoch, its weights, the optimizer's state, both random
        generators, the history and the best epoch's weights; read back with ``weights_only=True``."""
        torch = _torch()
        if self.last_file is None or torch is None or not is_module(model):
            return
        from bib.observers.trainable import save_checkpoint

        state = {"format": LAST_FORMAT, "epoch": int(epoch),
                 "model": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
                 "optimizer": optimizer.state_dict() if optimizer is not None else None,
                 "numpy_rng": json.dumps(self.rng.bit_generator.state), "torch_rng": torch.get_rng_state(),
                 "history": json.dumps(self.history, default=str), "best_epoch": self.best_epoch,
                 "best_value": self.best_value, "best_state": self.best_state, "since_best": self._since_best}
        save_checkpoint(state, self.last_file)

    def _resume(self, folder: Path, model: Any, optimizer: Any) -> int:
        from bib.io import load_weights

        torch = _torch()
        path = resume_file(folder)
        state = load_weights(path)
        if not isinstance(state, dict) or state.get("format") != LAST_FORMAT:
            raise BibInputError(f"{path}: not a bib training state (expected format {LAST_FORMAT!r})")
        if is_module(model):
            try:
                model.load_state_dict(state["model"])
            except RuntimeError as exc:
                from bib.observers.base import weights_mismatch

                raise BibInputError(f"{path}: the saved weights do not fit the model ({weights_mismatch(exc)})") from None
        if optimizer is not None and state.get("optimizer") is not None:
            optimizer.load_state_dict(state["optimizer"])
        self.rng.bit_generator.state = json.loads(state["numpy_rng"])
        if torch is not None:
            torch.set_rng_state(state["torch_rng"])
        self.history = json.loads(state["history"])
        self.best_epoch, self.best_value = state["best_epoch"], float(state["best_value"])
        self.best_state, self._since_best = state.get("best_state"), int(state.get("since_best", 0))
        self._cpu = time.process_time()
        self.log(f"resumed from {path} after epoch {state['epoch']} (best epoch {self.best_epoch})")
        return int(state["epoch"]) + 1

    def restore_best(self, model: Any) -> None:
        """Load the best epoch's weights into ``model`` (a ``torch.nn.Module``; nothing when none was recorded)."""
        if self.best_state is not None and is_module(model):
            model.load_state_dict(copy.deepcopy(self.best_state))


def resume_file(folder: str | Path) -> Path:
    """The ``last.pt`` to resume from in ``folder`` (a ``bib train`` output folder, or the file itself).

    Raises:
        BibInputError: there is none (checked before any training).
    """
    p = Path(folder)
    path = p / LAST if p.is_dir() else p
    if not path.is_file():
        raise BibInputError(f"{p}: nothing to resume from (no {LAST}; bib train writes one after every epoch of a "
                            "torch model trained with a context)")
    return path


def takes_context(fit: Callable[..., Any]) -> bool:
    """True when ``fit`` takes the context (``fit(episodes, context)``), from its signature: a second positional
    parameter named ``context`` or without a default. A one-argument ``fit(episodes)`` keeps working, and so does
    scikit-learn's ``fit(X, y=None)``."""
    try:
        params = list(inspect.signature(fit).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 2:
        return False
    second = positional[1]
    return second.name == "context" or second.default is inspect.Parameter.empty
