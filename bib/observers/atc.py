"""ATC pretraining of a learned observer's frame encoder (issue 42 item 3): Augmented Temporal Contrast (Stooke et
al. 2021) as BIB's baselines used it (``atc/models.py`` of kanishkg/bib-baselines, reference/bib.md §3a), on the
training split of the background set, before the behaviour-cloning epochs fine-tune the whole network.

One step: ``pretrain_batch_size`` (anchor, positive) pairs are drawn from the states of a few training episodes,
the positive the frame ``atc_k`` steps after the anchor in the same trial. Both frames get a random shift (replicate
padding by ``atc_pad`` pixels, cropped back at an offset drawn per frame); the anchor goes through the encoder, the
positive through a momentum (EMA) copy of it, updated by ``atc_tau`` before every step; an anchor MLP (hidden 256,
residual) and a bilinear ``W`` give the logits ``W(anchor) . positive`` of every anchor against every positive of
the batch, and the loss is InfoNCE (cross-entropy with each anchor's own positive as the label). Adam at
``pretrain_lr`` (BIB: 1e-4), gradients clipped at ``grad_clip``. BIB's run: 512 pairs a batch, 100 epochs, SWA,
their frames t and t + 1 of 30 fps videos; ours: one state per grid move, so ``atc_k = 1`` is the next move, and
no SWA.

Deterministic from ``[train] seed``: the episodes' order and the pairs come from ``numpy.random.default_rng([seed,
ATC_STREAM])``, the shifts from a ``torch.Generator`` seeded likewise, the heads' initial weights from
``torch.manual_seed`` (the training loop reseeds torch afterwards, as without pretraining).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from bib.episode import Episode
from bib.errors import BibInputError
from bib.observers.config import TrainConfig
from bib.progress import track

ANCHOR_HIDDEN = 256
"""Hidden units of the anchor MLP (BIB's ``anchor_size``)."""
ATC_STREAM = 0xA7C
"""Second word of the pretraining's seeds, so its draws are not the training loop's (same ``[train] seed``)."""
EPISODES_PER_BATCH = 16
"""Training episodes rendered for one ATC batch (about 80 pairs each at ``atc_k = 1``, so 512 pairs are drawn from
some 1,300)."""
CLOCKED = ("seconds", "cpu_seconds")
"""Fields of the pretraining's history measured by the clock: the log only, never the checkpoint."""


class Contrast(nn.Module):
    """ATC's contrast head: an anchor MLP with a skip connection and a bilinear product with the positives."""

    def __init__(self, latent: int, hidden: int = ANCHOR_HIDDEN) -> None:
        super().__init__()
        self.anchor_mlp = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, latent))
        self.W = nn.Linear(latent, latent, bias=False)  # noqa: N815 - the paper's name

    def forward(self, anchor: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, B]``: anchor ``i`` against positive ``j`` (each row shifted by its max)."""
        logits = self.W(anchor + self.anchor_mlp(anchor)) @ positive.T
        return logits - logits.max(dim=1, keepdim=True).values.detach()


def random_shift(x: torch.Tensor, pad: int, generator: torch.Generator) -> torch.Tensor:
    """Each image of ``x`` ``[B, C, H, W]`` replicate-padded by ``pad`` pixels and cropped back to ``H x W`` at an
    offset drawn from ``generator`` (0 to ``2 pad`` per axis and image)."""
    if pad <= 0:
        return x
    b, _, h, w = x.shape
    padded = F.pad(x, (pad, pad, pad, pad), mode="replicate")
    oy = torch.randint(0, 2 * pad + 1, (b,), generator=generator).to(x.device)  # drawn on the CPU: any device
    ox = torch.randint(0, 2 * pad + 1, (b,), generator=generator).to(x.device)
    rows = (oy[:, None] + torch.arange(h, device=x.device))[:, None, :, None]  # [B, 1, H, 1]
    cols = (ox[:, None] + torch.arange(w, device=x.device))[:, None, None, :]  # [B, 1, 1, W]
    index = torch.arange(b, device=x.device)[:, None, None, None]
    return padded.permute(0, 2, 3, 1)[index, rows, cols].squeeze(1).permute(0, 3, 1, 2)


def pairs_of(lengths: Sequence[int], k: int) -> np.ndarray:
    """``[P, 2]`` state indices (anchor, positive ``k`` steps later) within each trial of states ``lengths``."""
    out, start = [], 0
    for n in lengths:
        a = np.arange(start, start + n - k)
        out.append(np.stack([a, a + k], axis=1))
        start += n
    return np.concatenate(out) if out else np.zeros((0, 2), dtype=np.int64)


def check_pretrain(observer: Any, cfg: TrainConfig) -> None:
    """BibInputError unless ``observer`` can be ATC-pretrained (a frame encoder ``net.encoder``)."""
    encoder = getattr(getattr(observer, "net", None), "encoder", None)
    if getattr(observer, "spec", None) is None or observer.spec.input != "frames" or not hasattr(encoder, "embed_frames"):
        raise BibInputError(f"[train] pretrain = {cfg.pretrain!r} pretrains a frame encoder: set [model] input = "
                            f"\"frames\" (observer {observer.name} has input = {observer.spec.input!r})")


def pretrain_atc(observer: Any, items: Sequence[Any], episode_of: Callable[[Any], Episode], cfg: TrainConfig,
                 log: Callable[[str], None] = print) -> dict[str, Any]:
    """ATC-pretrain ``observer.net.encoder`` in place on the frames of ``items`` (training items, read by
    ``episode_of``); returns the record (``method``, its settings, ``history``: per epoch ``loss`` and ``accuracy``,
    the mean over its steps, ``batches``, ``pairs``, and the clocked ``seconds`` / ``cpu_seconds``)."""
    check_pretrain(observer, cfg)
    encoder = observer.net.encoder
    device = torch.device(observer.device)
    torch.manual_seed(cfg.seed)
    contrast = Contrast(encoder.head[1].out_features).to(device)
    target = copy.deepcopy(encoder).requires_grad_(False)
    params = list(encoder.parameters()) + list(contrast.parameters())
    opt = torch.optim.Adam(params, lr=cfg.pretrain_lr)
    rng = np.random.default_rng([cfg.seed, ATC_STREAM])
    shifts = torch.Generator().manual_seed(cfg.seed * 65_537 + ATC_STREAM)
    record: dict[str, Any] = {"method": "atc", "epochs": cfg.pretrain_epochs, "max_batches": cfg.pretrain_batches,
                              "batch_size": cfg.pretrain_batch_size, "lr": cfg.pretrain_lr, "k": cfg.atc_k,
                              "tau": cfg.atc_tau, "pad": cfg.atc_pad, "anchor_hidden": ANCHOR_HIDDEN,
                              "episodes": len(items), "history": []}
    was_training = observer.net.training
    observer.net.train()
    for epoch in range(1, cfg.pretrain_epochs + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        order = rng.permutation(len(items))
        chunks = [order[i : i + EPISODES_PER_BATCH] for i in range(0, len(order), EPISODES_PER_BATCH)]
        if cfg.pretrain_batches:
            chunks = chunks[: cfg.pretrain_batches]
        losses, accs, n_pairs = [], [], 0
        for chunk in track(chunks, total=len(chunks), description=f"atc {epoch}/{cfg.pretrain_epochs}"):
            frames, pairs, base = [], [], 0
            for i in chunk:
                enc = observer.encode(episode_of(items[int(i)]))
                frames.append(torch.from_numpy(np.ascontiguousarray(enc.frames)))
                pairs.append(pairs_of(enc.lengths, cfg.atc_k) + base)
                base += len(enc.frames)
            every = np.concatenate(pairs)
            if len(every) < 2:
                continue
            pick = every[np.sort(rng.choice(len(every), size=min(cfg.pretrain_batch_size, len(every)), replace=False))]
            states = torch.cat(frames)
            anchor = encoder.as_input(states[torch.from_numpy(pick[:, 0])].to(device))
            positive = encoder.as_input(states[torch.from_numpy(pick[:, 1])].to(device))
            with torch.no_grad():  # the momentum target follows the encoder before each step (BIB, rlpyt)
                for t, o in zip(target.parameters(), encoder.parameters()):
                    t.mul_(1.0 - cfg.atc_tau).add_(o.detach(), alpha=cfg.atc_tau)
                z_pos = target.embed_frames(random_shift(positive, cfg.atc_pad, shifts))
            z_anchor = encoder.embed_frames(random_shift(anchor, cfg.atc_pad, shifts))
            logits = contrast(z_anchor, z_pos)
            labels = torch.arange(len(pick), device=device)
            loss = F.cross_entropy(logits, labels)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            opt.step()
            losses.append(float(loss.detach()))
            accs.append(float((logits.detach().argmax(dim=1) == labels).float().mean()))
            n_pairs += len(pick)
        row = {"epoch": epoch, "loss": float(np.mean(losses)) if losses else float("nan"),
               "accuracy": float(np.mean(accs)) if accs else float("nan"), "batches": len(losses), "pairs": n_pairs,
               "first_loss": losses[0] if losses else float("nan"), "last_loss": losses[-1] if losses else float("nan"),
               "seconds": round(time.perf_counter() - t0, 3), "cpu_seconds": round(time.process_time() - c0, 3)}
        record["history"].append(row)
        log(f"atc epoch {epoch}/{cfg.pretrain_epochs}: contrastive loss {row['loss']:.4f} (first batch "
            f"{row['first_loss']:.4f}, last {row['last_loss']:.4f}), accuracy {row['accuracy']:.3f} over "
            f"{row['batches']} batches of {cfg.pretrain_batch_size} pairs ({row['seconds']:.1f} s)")
    observer.net.train(was_training)
    return record


def unclocked(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` without the clock's fields (:data:`CLOCKED`): what the checkpoint keeps."""
    return {**record, "history": [{k: v for k, v in h.items() if k not in CLOCKED} for h in record.get("history", [])]}
