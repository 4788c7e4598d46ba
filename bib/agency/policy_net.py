"""``policy-net``: a small torch policy network trained on our grids to imitate the planner (the white-box agent).

Input: the grid as one-hot planes (wall, open, goal, agent, key, door, padding, carrying key),
padded to :data:`PAD` x :data:`PAD` so one network serves every size. Body: a 3 x 3 convolution
then residual dilated 3 x 3 convolutions (dilations 1, 2, 4: a receptive field of 17 cells,
more than the padded grid). Readouts: the features at the agent's cell (``agent_readout``) and a global max pool
(``global_readout``), concatenated, then a hidden layer (``hidden``) and 4 logits over
LEFT, RIGHT, UP, DOWN. The three named readouts are what the probes capture with forward hooks.

Training (behaviour cloning): every free state of training grids (navigation sizes 7..15 at
random densities, key rooms with and without the key in hand) labelled with the uniform
distribution over pi*(s); soft-label cross-entropy, AdamW. Checkpoints hold only tensors and a
JSON config and load with ``weights_only=True``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

import numpy as np
import torch
from torch import nn

from bib.agency.env import MOVES, optimal_mask
from bib.errors import BibInputError
from bib.io import atomic_write_bytes
from bib.observers.learned import check_sizes
from bib.tasks import make_unit
from bib.tasks.agent_grids import GOAL
from bib.world.dynamics import AgentState
from bib.world.grid import Layout

PAD = 15
CHANNELS = ("wall", "open", "goal", "agent", "key", "door", "padding", "carrying")
DEFAULT_CHECKPOINT = Path(str(files("bib.agency").joinpath("policy_net.pt")))
"""The checkpoint shipped with bib (made by ``bib agency train-policy``; see the README)."""
READOUTS = ("agent_readout", "global_readout", "hidden")


@dataclass(frozen=True)
class NetConfig:
    """Network sizes."""

    width: int = 16
    hidden: int = 64
    dilations: tuple[int, ...] = (1, 2, 4)


class _AgentCell(nn.Module):
    """Features at the agent's cell: ``[B, C, H, W]`` and the agent plane -> ``[B, C]``."""

    def forward(self, feats: torch.Tensor, agent_plane: torch.Tensor) -> torch.Tensor:
        return (feats * agent_plane.unsqueeze(1)).sum(dim=(2, 3))


class _GlobalMax(nn.Module):
    """Global max pool ``[B, C, H, W] -> [B, C]``."""

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        return feats.amax(dim=(2, 3))


class PolicyNet(nn.Module):
    """The policy network (see the module docstring)."""

    def __init__(self, config: NetConfig = NetConfig()) -> None:
        super().__init__()
        self.config = config
        w = config.width
        self.stem = nn.Conv2d(len(CHANNELS), w, 3, padding=1)
        self.body = nn.ModuleList(nn.Conv2d(w, w, 3, padding=d, dilation=d) for d in config.dilations)
        self.agent_readout = _AgentCell()
        self.global_readout = _GlobalMax()
        self.hidden = nn.Sequential(nn.Linear(2 * w, config.hidden), nn.ReLU())
        self.head = nn.Linear(config.hidden, len(MOVES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, 4]`` for planes ``x [B, len(CHANNELS), PAD, PAD]``."""
        h = torch.relu(self.stem(x))
        for conv in self.body:
            h = h + torch.relu(conv(h))
        a = self.agent_readout(h, x[:, CHANNELS.index("agent")])
        g = self.global_readout(h)
        return self.head(self.hidden(torch.cat([a, g], dim=1)))


# ---------------------------------------------------------------- encoding


@lru_cache(maxsize=4096)
def _static_planes(layout: Layout) -> np.ndarray:
    if layout.width > PAD or layout.height > PAD:
        raise BibInputError(f"policy-net: grids up to {PAD} x {PAD}, got {layout.width} x {layout.height}")
    p = np.zeros((len(CHANNELS), PAD, PAD), dtype=np.float32)
    p[CHANNELS.index("padding")] = 1.0
    p[CHANNELS.index("padding"), : layout.height, : layout.width] = 0.0
    for x, y in layout.walls:
        p[CHANNELS.index("wall"), y, x] = 1.0
    for y in range(layout.height):
        for x in range(layout.width):
            if (x, y) not in layout.walls and (x, y) != layout.lock:
                p[CHANNELS.index("open"), y, x] = 1.0
    gx, gy = layout.goal_cell(GOAL)
    p[CHANNELS.index("goal"), gy, gx] = 1.0
    p.flags.writeable = False
    return p


def encode(layout: Layout, states: list[AgentState]) -> np.ndarray:
    """Planes ``[len(states), len(CHANNELS), PAD, PAD]`` of the states of one layout."""
    base = _static_planes(layout)
    out = np.repeat(base[None], len(states), axis=0)
    for i, s in enumerate(states):
        out[i, CHANNELS.index("agent"), s.cell[1], s.cell[0]] = 1.0
        if layout.key is not None and not s.has_key:
            out[i, CHANNELS.index("key"), layout.key[1], layout.key[0]] = 1.0
        if layout.lock is not None and not s.unlocked:
            out[i, CHANNELS.index("door"), layout.lock[1], layout.lock[0]] = 1.0
        if s.has_key:
            out[i, CHANNELS.index("carrying")] = 1.0
    return out


class PolicyNetAgent:
    """A :class:`PolicyNet` behind the gridworld agent protocol; samples at ``temperature`` (0: greedy)."""

    def __init__(self, model: PolicyNet, rng: np.random.Generator, temperature: float = 1.0) -> None:
        self.model = model.eval()
        self.rng = rng
        self.temperature = temperature

    def probabilities(self, layout: Layout, states: list[AgentState]) -> np.ndarray:
        """pi(a|s) over LEFT, RIGHT, UP, DOWN, ``[len(states), 4]``."""
        with torch.inference_mode():
            logits = self.model(torch.from_numpy(encode(layout, states)))
        return torch.softmax(logits, dim=1).numpy().astype(np.float64)

    def act_batch(self, layout: Layout, states: list[AgentState]) -> list[int]:
        """One action per state, drawn from the network's policy."""
        with torch.inference_mode():
            logits = self.model(torch.from_numpy(encode(layout, states))).numpy().astype(np.float64)
        if self.temperature <= 0:
            idx = logits.argmax(axis=1)
        else:
            z = logits / self.temperature
            p = np.exp(z - z.max(axis=1, keepdims=True))
            cum = np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)
            idx = np.minimum((cum < self.rng.random(len(states))[:, None]).sum(axis=1), 3)
        return [MOVES[int(i)] for i in idx]

    def act(self, layout: Layout, state: AgentState) -> int:
        """The action in one state."""
        return self.act_batch(layout, [state])[0]


# ---------------------------------------------------------------- checkpoints


def save(model: PolicyNet, path: str | Path, meta: dict | None = None) -> None:
    """Write a checkpoint: the state dict plus the config and ``meta`` as a JSON string (atomic)."""
    import io

    buf = io.BytesIO()
    torch.save({"state_dict": model.state_dict(),
                "config": json.dumps({**asdict(model.config), "meta": meta or {}})}, buf)
    atomic_write_bytes(path, buf.getvalue())


def load(path: str | Path) -> PolicyNet:
    """Load a checkpoint with ``weights_only=True``; BibInputError names the file on any problem."""
    p = Path(path)
    if not p.is_file():
        raise BibInputError(f"{p}: no such checkpoint (train one with `bib agency train-policy --out DIR`, which writes DIR/policy_net.pt)")
    from bib.io import load_weights

    blob = load_weights(p)
    try:
        cfg = json.loads(blob["config"])
        cfg.pop("meta", None)
        config = NetConfig(width=cfg["width"], hidden=cfg["hidden"], dilations=list(cfg["dilations"]))
        check_sizes(config, f"{p}: config")  # before the network is allocated
        model = PolicyNet(replace(config, dilations=tuple(config.dilations)))
        model.load_state_dict(blob["state_dict"])
    except BibInputError:
        raise
    except Exception as exc:  # noqa: BLE001 - any unreadable checkpoint is bad input
        raise BibInputError(f"{p}: not a policy-net checkpoint ({type(exc).__name__}: {exc})") from None
    return model.eval()


def checkpoint_meta(path: str | Path) -> dict:
    """The ``meta`` dict stored in a checkpoint (how it was trained)."""
    blob = torch.load(Path(path), map_location="cpu", weights_only=True)
    return json.loads(blob["config"]).get("meta", {})


@lru_cache(maxsize=8)
def load_cached(path: str | None) -> PolicyNet:
    """:func:`load` once per process (``None``: the shipped :data:`DEFAULT_CHECKPOINT`).

    Also sets this process to one torch thread: rollouts call the small network one batch at a
    time, where extra threads only contend (parallelism comes from worker processes).
    """
    torch.set_num_threads(1)
    return load(path or DEFAULT_CHECKPOINT)


# ---------------------------------------------------------------- training


def training_states(tasks: dict[str, int], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every free state of ``n`` grids per task (a dict task -> n) under ``seed``, with soft pi* targets.

    Returns:
        ``(x [N, C, PAD, PAD] float32, target [N, 4] float32)``; states on the goal or cut off
        from it are left out; key grids contribute states with and without the key in hand.
    """
    xs, ys = [], []
    for task, n in tasks.items():
        for index in range(n):
            lay = make_unit(task, index, seed)[0].test.layout
            goal = lay.goal_cell(GOAL)
            flags = [(False, False)] if lay.key is None else [(False, False), (True, False), (True, True)]
            if lay.lock is None:
                flags = [f for f in flags if not f[1]]
            states, targets = [], []
            for has_key, unlocked in flags:
                for cell in lay.free_cells(unlocked):
                    s = AgentState(cell, has_key, unlocked)
                    m = optimal_mask(lay, s, goal)
                    if m.any():
                        states.append(s)
                        targets.append(m / m.sum())
            xs.append(encode(lay, states))
            ys.append(np.asarray(targets, dtype=np.float32))
    return np.concatenate(xs), np.concatenate(ys)


def train(
    x: np.ndarray,
    y: np.ndarray,
    *,
    config: NetConfig = NetConfig(),
    epochs: int = 8,
    batch: int = 256,
    lr: float = 3e-3,
    seed: int = 0,
    log=None,
) -> PolicyNet:
    """Behaviour-clone pi* from ``(x, y)`` (see :func:`training_states`); returns the trained network.

    Args:
        x: input planes.
        y: soft targets over the 4 moves (rows sum to 1).
        config: network sizes.
        epochs: passes over the data (cosine learning-rate decay).
        batch: minibatch size.
        lr: AdamW learning rate.
        seed: seeds the initialisation and the shuffling.
        log: optional ``log(epoch, loss, accuracy)`` callback (accuracy: argmax in pi*).
    """
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = PolicyNet(config)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    n = len(x)
    steps = epochs * max(1, -(-n // batch))
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(n, generator=gen)
        total, correct = 0.0, 0
        for i in range(0, n, batch):
            idx = order[i: i + batch]
            logits = model(xt[idx])
            loss = -(yt[idx] * torch.log_softmax(logits, dim=1)).sum(dim=1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
            correct += int((yt[idx].gather(1, logits.argmax(1, keepdim=True)) > 0).sum())
        if log is not None:
            log(epoch, total / n, correct / n)
    return model.eval()
