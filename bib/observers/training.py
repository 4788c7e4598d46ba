"""Training of the learned observers: background episodes streamed from disk, 80/20 split by sorted id,
seeded shuffling, validation loss per epoch, best checkpoint written atomically.

The model is handed each episode's blind view (:mod:`bib.stimuli.blind`, issue 26): layouts, paths,
timing and the condition, with an opaque id and role-free object ids; never the outcome, the pair or a
design field. The split and the order are the trainer's business (by the files' real ids), so the
batches are the same as before the view; the encoders read no id, so the checkpoints are too.

The split: episodes sorted by id, every fifth one (positions 4, 9, 14, ...) is validation, the
rest training. Interleaving keeps every background task in both parts (the ids of one task are
contiguous, so a plain first-80% cut would leave whole tasks out of training).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from bib.episode import Episode
from bib.errors import BibInputError
from bib.evaluation import find_episodes
from bib.guard import load_toml
from bib.io import ensure_dir
from bib.observers.atc import check_pretrain, pretrain_atc, unclocked
from bib.observers.config import TrainConfig, as_is, config_from_dict, loader_workers
from bib.observers.context import LAST, TrainingContext, provenance, split
from bib.observers.device import torch_threads
from bib.observers.encoders import Batch, collate
from bib.observers.registry import learned_class
from bib.observers.spread import SPREAD_EPISODES, collapse_warning, embedding_spread
from bib.observers.trainable import CHECKPOINT, subset
from bib.progress import track
from bib.stimuli.blind import blind_episode, episode_secret, read_blind

if TYPE_CHECKING:  # a type only: bib.observers.learned imports this module (LearnedObserver.fit trains through it)
    from bib.observers.learned import LearnedObserver

Item = Path | Episode
"""A training item: an episode file (loaded when its batch is built) or an episode in memory."""


def load_config(observer: str, path: str | Path | None = None) -> tuple[Any, TrainConfig]:
    """The model and training configs of ``observer``: defaults, overridden by a TOML file.

    The TOML has an optional top-level ``observer = "NAME"`` (checked against ``observer``) and
    tables ``[model]`` and ``[train]``.

    Raises:
        BibInputError: unreadable TOML, an unknown table or field, a wrong type, or a config
            written for another observer.
    """
    cls = learned_class(observer)
    if path is None:
        return cls.Config(), TrainConfig()
    p = Path(path)
    data = load_toml(p, "config file")
    unknown = set(data) - {"observer", "model", "train"}
    if unknown:
        raise BibInputError(f"{p}: unknown table or field {sorted(unknown)[0]!r} (expected observer, [model], [train])")
    if data.get("observer", observer) != observer:
        raise BibInputError(f"{p}: config is for observer {data['observer']!r}, not {observer!r}")
    model = config_from_dict(cls.Config, data.get("model", {}), f"{p}: [model]")
    train = config_from_dict(TrainConfig, data.get("train", {}), f"{p}: [train]")
    return model, train


_CHECKED: set[str] = set()
"""Episode files this process has already checked (each is validated once, not once per epoch)."""


def _episode(item: Item) -> Episode:
    """What the model is handed of a training item: its blind view (:mod:`bib.stimuli.blind`), never the
    episode's id, outcome, pair or design fields. An episode in memory is blinded under
    :func:`~bib.stimuli.blind.episode_secret`, a file under its bytes' hash (as ``bib score`` does)."""
    if isinstance(item, Episode):
        return blind_episode(item, episode_secret(item))
    return read_blind(item, _CHECKED)


class _Batches(torch.utils.data.Dataset):
    """Map-style dataset whose items are whole collated batches (so a loader worker builds them)."""

    def __init__(self, observer: LearnedObserver, items: Sequence[Item], batches: list[np.ndarray]) -> None:
        self.observer = observer
        self.items = items
        self.batches = batches

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, k: int) -> Batch:
        return collate([self.observer.encode(_episode(self.items[int(i)])) for i in self.batches[k]])


def _batches(observer: LearnedObserver, items: Sequence[Item], order: np.ndarray, size: int, workers: int) -> Iterator[Batch]:
    """Collated batches of ``items`` in ``order``, built by ``workers`` loader processes (0 = inline).

    On a CUDA device the loader uses at least :data:`~bib.observers.learned.GPU_LOADER_WORKERS` processes and pinned memory (the
    batch is copied to the GPU without blocking, in :meth:`LearnedObserver.step_errors`)."""
    gpu = observer.device.startswith("cuda")
    workers = loader_workers(observer.device, workers)
    chunks = [order[i : i + size] for i in range(0, len(order), size)]
    data = _Batches(observer, items, chunks)
    if workers <= 0 or len(chunks) < 2:
        return (data[k] for k in range(len(chunks)))
    loader = torch.utils.data.DataLoader(
        data, batch_size=None, shuffle=False, num_workers=workers, collate_fn=as_is, prefetch_factor=4,
        pin_memory=gpu,
    )
    return iter(loader)


def mean_loss(observer: LearnedObserver, items: Sequence[Item], batch_size: int, workers: int = 0) -> float:
    """Mean per-step error over ``items`` (weighted by test steps), without gradients."""
    observer.net.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for batch in _batches(observer, items, np.arange(len(items)), batch_size, workers):
            errors = observer.step_errors(batch)
            total += float(errors.sum())
            count += int(errors.numel())
    return total / max(count, 1)


@dataclass
class TrainReport:
    """What a training run did.

    Attributes:
        n_train: training episodes.
        n_val: validation episodes.
        history: one dict per epoch (``epoch``, ``train_loss``, ``val_loss``, ``seconds``,
            ``batches``), preceded by epoch 0 (the untrained validation loss).
        best_epoch: the epoch whose weights were kept (lowest validation loss).
        best_val_loss: its validation loss.
        warnings: what the run warned of (the best epoch is the untrained one).
        stopped_early: early stopping ended the run (``[train] patience``).
        pretrain: the encoder's pretraining (:func:`bib.observers.atc.pretrain_atc`'s record without clock
            fields), None without one.
        sets: the generated sets the episodes came from (``name``, ``seed``, ``limited`` of each set's
            ``spec.toml``; no path, so the checkpoint's bytes do not depend on where the set lies).
    """

    n_train: int
    n_val: int
    sets: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, float]] = field(default_factory=list)
    best_epoch: int = 0
    best_val_loss: float = float("inf")
    warnings: list[str] = field(default_factory=list)
    stopped_early: bool = False
    pretrain: dict[str, Any] | None = None


def run_training(
    observer: LearnedObserver,
    train_items: Sequence[Item],
    val_items: Sequence[Item],
    cfg: TrainConfig,
    out: str | Path | None = None,
    log: Callable[[str], None] = print,
    sets: Sequence[Mapping[str, Any]] = (),
    resume_from: str | Path | None = None,
) -> TrainReport:
    """Train ``observer.net`` in place and keep the weights of the epoch with the lowest validation loss.

    The loop runs on a :class:`~bib.observers.context.TrainingContext`, the one a user's ``fit(episodes, context)``
    gets: each epoch shuffles the training items with its Generator (``numpy.random.default_rng(cfg.seed)``, one for
    the run), steps Adam on the mean per-step error of each batch with gradient clipping, then measures the
    validation loss; training stops early after ``cfg.patience`` epochs without a lower one (0: never). When
    ``out`` is given, the best checkpoint so far is written there (atomically) after every epoch, ``last.pt``
    beside it (the last epoch's weights, optimizer and generators: what ``resume_from`` continues) and the log
    (:func:`log_path`, ``metrics.csv``). With no validation items the training loss selects the epoch. ``sets``
    (:attr:`TrainReport.sets`) go into the checkpoint, so its model card names the training data. When no epoch
    beats the untrained model (epoch 0), a warning is logged and recorded (:attr:`TrainReport.warnings`). With
    ``out``, the log also gets the kept weights' embedding spread
    (:func:`bib.observers.spread.embedding_spread`, ``embedding``) and a warning when the encoder collapses.
    """
    net = observer.net
    report = TrainReport(len(train_items), len(val_items), [dict(s) for s in sets])
    if cfg.pretrain != "none":
        check_pretrain(observer, cfg)  # before any work
    if observer.spec.normalize == "dataset" and not observer.spec.pixel_mean:
        measure_pixel_statistics(observer, train_items, log)
    pretrained = None
    if cfg.pretrain == "atc" and resume_from is None:
        with torch_threads(cfg.threads):
            pretrained = pretrain_atc(observer, train_items, _episode, cfg, log)
    elif cfg.pretrain == "atc":  # resumed: the encoder was pretrained by the run resumed from; its record is in its log
        pretrained = _resumed_pretrain(Path(resume_from))
    report.pretrain = None if pretrained is None else unclocked(pretrained)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    ctx = TrainingContext(train_items, val_items, seed=cfg.seed, device=observer.device, threads=cfg.threads,
                          max_epochs=cfg.epochs, patience=cfg.patience, log=log,
                          log_file=None if out is None else log_path(out),
                          last_file=None if out is None else Path(out).with_name(LAST),
                          resume_from=None if resume_from is None else Path(resume_from))
    ctx.fields = {"observer": observer.name,
                  "provenance": provenance(observer, device=observer.device, options=_options(observer, cfg))}
    if pretrained is not None:
        ctx.fields["pretrain"] = pretrained
    workers = cfg.loader_workers
    cpu = time.process_time()
    with torch_threads(cfg.threads):
        first = ctx.start(net, opt)
        if first == 1:
            val0 = mean_loss(observer, val_items or train_items, cfg.batch_size, workers)
            ctx.end_epoch(0, net, opt, train_loss=float("nan"), val_loss=val0, seconds=0.0, batches=0)
            log(f"epoch 0/{cfg.epochs}: validation loss {val0:.4f} (untrained)")
        for epoch in ctx.epochs(first):
            t0 = time.perf_counter()
            order = ctx.rng.permutation(len(train_items))
            if cfg.max_batches:
                order = order[: cfg.max_batches * cfg.batch_size]
            n_batches = -(-len(order) // cfg.batch_size)
            net.train()
            total, count = 0.0, 0
            batches = _batches(observer, train_items, order, cfg.batch_size, workers)
            for batch in track(batches, total=n_batches, description=f"epoch {epoch}/{cfg.epochs}"):
                errors = observer.step_errors(batch)
                loss = errors.mean()
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.grad_clip)
                opt.step()
                total += float(errors.detach().sum())
                count += int(errors.numel())
            train_loss = total / max(count, 1)
            val = mean_loss(observer, val_items, cfg.batch_size, workers) if val_items else train_loss
            seconds = time.perf_counter() - t0
            log(f"epoch {epoch}/{cfg.epochs}: train loss {train_loss:.4f}, validation loss {val:.4f} ({seconds:.1f} s)")
            ctx.end_epoch(epoch, net, opt, train_loss=train_loss, val_loss=val, seconds=seconds, batches=n_batches)
            _sync(report, ctx)
            if out is not None and ctx.best_epoch == epoch:
                observer.save(out, cfg, _metrics(report))
    ctx.fields["provenance"]["cpu_seconds"] = round(time.process_time() - cpu, 3)
    ctx.finish(net)
    net.eval()
    if out is not None:  # the kept weights' embedding spread (issue 42 item 3): the log only, never the checkpoint
        with torch_threads(cfg.threads):
            spread = embedding_spread(observer, [_episode(i) for i in (val_items or train_items)[:SPREAD_EPISODES]])
        ctx.fields["embedding"] = spread
        if (warning := collapse_warning(spread)) is not None:
            ctx.warnings.append(warning)
            log(f"warning: {warning}")
        ctx.write()
    _sync(report, ctx)
    if out is not None and not Path(out).exists():
        # the best epoch is 0 (the whole history, as before), or one before the epoch resumed from: the history up
        # to it, what an uninterrupted run wrote at that epoch
        observer.save(out, cfg, _metrics(report, upto=report.best_epoch or None))
    return report


PIXEL_EPISODES = 64
"""Training episodes (spread evenly over the split) whose frames ``normalize = "dataset"`` measures."""


def measure_pixel_statistics(observer: LearnedObserver, items: Sequence[Item], log: Callable[[str], None]) -> None:
    """Measure the per-channel mean and std of the frames of :data:`PIXEL_EPISODES` training items and make them the
    observer's normalisation (``normalize = "dataset"``; the config, hence the checkpoint, records them)."""
    from bib.observers.encoders import frame_statistics

    chosen = subset(list(items), PIXEL_EPISODES)
    mean, std = frame_statistics([observer.encode(_episode(i)).frames for i in chosen])
    observer.set_pixel_statistics(mean, std)
    log(f"normalize = dataset: pixel mean {mean}, std {std} (R, G, B, over the frames of {len(chosen)} training "
        "episodes)")


def _resumed_pretrain(folder: Path) -> dict[str, Any] | None:
    """The pretraining record of the run resumed from (its log's ``pretrain``), None when it has none."""
    path = log_path(folder / CHECKPOINT) if folder.is_dir() else log_path(folder.with_name(CHECKPOINT))
    try:
        record = json.loads(path.read_text(encoding="utf-8")).get("pretrain")
    except (OSError, ValueError, AttributeError):
        return None
    return record if isinstance(record, dict) else None


def _sync(report: TrainReport, ctx: TrainingContext) -> None:
    """Copy the context's history, best epoch and warnings into ``report``."""
    report.history = ctx.history
    report.best_epoch = int(ctx.best_epoch or 0)
    report.best_val_loss = ctx.best_value
    report.warnings = list(ctx.warnings)
    report.stopped_early = ctx.stopped_early


def _options(observer: LearnedObserver, cfg: TrainConfig) -> dict[str, Any]:
    """The resolved options of a learned observer's run: its model config and its training config, defaults in, and
    the input channels it is fed (:attr:`~bib.observers.encoders.InputSpec.channel_names`)."""
    import dataclasses

    return {"model": dataclasses.asdict(observer.config), "train": dataclasses.asdict(cfg),
            "channels": list(observer.spec.channel_names)}


CLOCKED = ("seconds", "cpu_seconds")
"""History fields measured by the clock: they go to the log (:func:`log_path`), never into the
checkpoint, so the same seed gives the same checkpoint bytes."""


def _metrics(report: TrainReport, upto: int | None = None) -> dict[str, Any]:
    """What the checkpoint's config records of the run: no wall-clock field (:data:`CLOCKED`); the history up to
    epoch ``upto`` when given."""
    out: dict[str, Any] = {"n_train": report.n_train, "n_val": report.n_val}
    if report.sets:  # only episodes of generated sets name one (loose files' checkpoints keep their bytes)
        out["sets"] = report.sets
    if report.pretrain is not None:  # how the encoder was pretrained (a run without pretraining keeps its bytes)
        out["pretrain"] = report.pretrain
    out |= {
        "best_epoch": report.best_epoch,
        "best_val_loss": report.best_val_loss,
        "history": [{k: v for k, v in h.items() if k not in CLOCKED} for h in report.history
                    if upto is None or h["epoch"] <= upto],
    }
    # Through JSON: pickle's memo follows the strings' identity, and a resumed run's history (and pretraining record)
    # come from JSON while an uninterrupted run's are literals, so without this a resumed run's checkpoint differed in
    # bytes (not values) from the uninterrupted one's when the best epoch was 0 (saved at the end, the whole history).
    return json.loads(json.dumps(out))


def log_path(checkpoint: str | Path) -> Path:
    """The training log beside ``checkpoint`` (``checkpoint.pt`` -> ``checkpoint.log.json``)."""
    return Path(checkpoint).with_suffix(".log.json")


def fit_episodes(observer: LearnedObserver, episodes: Sequence[Episode], cfg: TrainConfig,
                 log: Callable[[str], None] = lambda _: None) -> TrainReport:
    """Train on in-memory episodes, split 80/20 by sorted id (what ``Observer.fit`` calls)."""
    ordered = subset(sorted(episodes, key=lambda e: e.id), cfg.max_episodes)
    tr, va = split([e.id for e in ordered])
    return run_training(observer, [ordered[i] for i in tr], [ordered[i] for i in va], cfg, None, log)


def train(
    observer: str,
    background: str | Path,
    out: str | Path,
    config: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    log: Callable[[str], None] = print,
    device: str = "cpu",
    resume_from: str | Path | None = None,
) -> TrainReport:
    """Train the learned observer ``observer`` on the episodes under ``background``; write ``out``.

    Args:
        observer: a learned observer name (``bc-mlp``, ``bc-rnn``, ``video-rnn``).
        background: a folder searched recursively (episode files and manifests) or a manifest.csv,
            read by :func:`bib.evaluation.find_episodes` as ``bib score`` does.
        out: the checkpoint file to write.
        config: a TOML config (``baselines/NAME.toml``); defaults when None.
        overrides: ``[train]`` fields to override (e.g. ``{"epochs": 1}``).
        log: where progress lines go.
        device: a resolved torch device (:func:`bib.observers.device.resolve_device`); ``cpu`` moves nothing.
        resume_from: a folder an earlier ``bib train`` of the same observer wrote: training continues after the
            epoch its ``last.pt`` saved (``--resume-from``).

    Raises:
        BibInputError: bad config, no episodes, or an unreadable episode file.
    """
    model_cfg, train_cfg = load_config(observer, config)
    if overrides:
        values = {k: v for k, v in vars(train_cfg).items()}
        values.update({k: v for k, v in overrides.items() if v is not None})
        train_cfg = config_from_dict(TrainConfig, values, "train options")
    found = find_episodes(background)
    refs = subset(found.refs, train_cfg.max_episodes)
    tr, va = split([r.id for r in refs])
    if not tr:
        raise BibInputError(f"{background}: too few episodes to train on ({len(refs)})")
    val_files = [refs[i].path for i in va]
    if train_cfg.max_val_episodes:
        val_files = val_files[: train_cfg.max_val_episodes]
    ensure_dir(Path(out).parent)
    obs = learned_class(observer)(model_cfg)
    if device != "cpu":
        obs.to_device(device)
    log(f"{observer}: {len(tr)} training and {len(val_files)} validation episodes from {background}; "
        f"{sum(p.numel() for p in obs.net.parameters())} parameters")
    sets = [{k: s.get(k) for k in ("name", "seed", "limited")} for s in found.sets]
    report = run_training(obs, [refs[i].path for i in tr], val_files, train_cfg, out, log, sets=sets,
                          resume_from=resume_from)
    log(f"best epoch {report.best_epoch}: validation loss {report.best_val_loss:.4f}")  # the caller names the final path
    return report
