"""Probes on a torch agent's activations (reference §8-10): cognitive map, decoded-map consistency, plan.

- :func:`capture` reads named modules' outputs with forward hooks (any ``nn.Module``).
- :func:`collect` rolls a :class:`~bib.agency.policy_net.PolicyNetAgent` out on navigation grids and
  keeps, at every step, the three readouts, the state, the action and the rest of the rollout.
- Cognitive-map probe: (activation ++ queried (x, y)) -> agent / goal / wall / open / padding over
  the padded grid; ``linear`` or a 2-layer ``mlp`` (dropout 0.1); classes balanced by weighting the
  cross-entropy with inverse class frequencies; 20% of the *grids* held out. Reported: accuracy,
  balanced accuracy, and the majority-class baseline.
- Consistency: each held-out step's map is decoded (argmax per cell, the most likely goal cell),
  pi* is recomputed on it, and we count how many of the agent's non-optimal moves are optimal on
  its decoded map (the paper's "error recovery").
- Plan probe: three activation vectors -> per-vector Linear to ``H`` + LayerNorm + GELU + dropout
  (the memory) -> a pre-norm transformer decoder (1-4 layers) whose 10 learned query slots (+
  position embeddings) cross-attend with no causal mask -> 5 logits (4 moves + EOS) per slot:
  the next 10 moves at once. Targets are the realised moves from that step then EOS, padded with
  -100; steps with 10 or more moves left are dropped; the loss weighs slot ``i`` by ``0.9**i``.
  Reported: token accuracy, exact-sequence accuracy, prefix-N accuracy, and the per-slot
  majority baseline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from bib.agency.env import MOVE_INDEX, MOVES, load_grid, run_rollouts
from bib.agency.policy_net import PAD, READOUTS, PolicyNet, PolicyNetAgent, encode
from bib.observers.device import torch_threads
from bib.world.dynamics import ACTIONS
from bib.world.grid import Cell
from bib.world.planning import move_counts

MAP_CLASSES: tuple[str, ...] = ("agent", "goal", "wall", "open", "padding")
PLAN_SLOTS = 10
EOS = 4


def capture(model: nn.Module, names: Sequence[str], *inputs: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Run ``model(*inputs)`` and return ``(output, {name: output of submodule name})`` via forward hooks."""
    modules = dict(model.named_modules())
    missing = [n for n in names if n not in modules]
    if missing:
        raise ValueError(f"model has no module(s) {missing}; known: {sorted(k for k in modules if k)}")
    seen: dict[str, torch.Tensor] = {}
    handles = [modules[n].register_forward_hook(lambda _m, _i, out, n=n: seen.__setitem__(n, out.detach()))
               for n in names]
    try:
        with torch.inference_mode():
            out = model(*inputs)
    finally:
        for h in handles:
            h.remove()
    return out, seen


@dataclass
class Steps:
    """Activations and context of every step of the collected rollouts.

    Attributes:
        acts: readout name -> ``[N, d]`` activations.
        grid: index of each step's grid in ``grids``; rollout: global rollout index.
        cells: agent cell ``[N, 2]``; actions: move taken (ACTIONS index); optimal: in pi*.
        future: the moves from this step to the rollout's end (lists).
        grids: the grids, in order.
    """

    acts: dict[str, np.ndarray]
    grid: np.ndarray
    rollout: np.ndarray
    cells: np.ndarray
    actions: np.ndarray
    optimal: np.ndarray
    future: list[list[int]]
    grids: list


def collect(model: PolicyNet, indices: Sequence[int], rollouts: int = 5, seed: int = 0) -> Steps:
    """Roll the policy network out on navigation grids ``indices`` (``rollouts`` each) and capture its readouts."""
    acts: dict[str, list[np.ndarray]] = {n: [] for n in READOUTS}
    gidx, ridx, cells, actions, optimal, future, grids = [], [], [], [], [], [], []
    r_global = 0
    from bib.progress import track

    for gi, index in enumerate(track(list(indices), description="agency probe: rollouts")):
        grid = load_grid("navigation", index, seed)
        grids.append(grid)
        agent = PolicyNetAgent(model, np.random.default_rng([seed, index]))
        for ro in run_rollouts([agent] * rollouts, grid):
            states = ro.states[:-1]
            _, seen = capture(model, READOUTS, torch.from_numpy(encode(grid.layout, states)))
            for n in READOUTS:
                acts[n].append(seen[n].numpy())
            for t, s in enumerate(states):
                gidx.append(gi)
                ridx.append(r_global)
                cells.append(s.cell)
                actions.append(ro.actions[t])
                optimal.append(ro.optimal[t])
                future.append(list(ro.actions[t:]))
            r_global += 1
    return Steps({n: np.concatenate(v) for n, v in acts.items()}, np.array(gidx), np.array(ridx),
                 np.array(cells).reshape(-1, 2), np.array(actions), np.array(optimal, dtype=bool), future, grids)


def split(steps: Steps, held_out: float = 0.2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Boolean train / test masks over steps, holding out ``held_out`` of the grids."""
    rng = np.random.default_rng(seed)
    n = len(steps.grids)
    test_grids = set(rng.choice(n, size=max(1, int(round(held_out * n))), replace=False).tolist())
    test = np.array([g in test_grids for g in steps.grid])
    return ~test, test


# ---------------------------------------------------------------- cognitive map


def cell_labels(grid, agent: Cell) -> np.ndarray:
    """``[PAD, PAD]`` class ids (:data:`MAP_CLASSES`) of a grid with the agent at ``agent``."""
    lay = grid.layout
    lab = np.full((PAD, PAD), MAP_CLASSES.index("padding"))
    for y in range(lay.height):
        for x in range(lay.width):
            lab[y, x] = MAP_CLASSES.index("wall" if (x, y) in lay.walls else "open")
    gx, gy = grid.goal
    lab[gy, gx] = MAP_CLASSES.index("goal")
    lab[agent[1], agent[0]] = MAP_CLASSES.index("agent")
    return lab


def _features(steps: Steps, readouts: Sequence[str]) -> np.ndarray:
    x = np.concatenate([steps.acts[n] for n in readouts], axis=1).astype(np.float32)
    return x


def map_dataset(steps: Steps, mask: np.ndarray, readouts: Sequence[str], queries: int | None, seed: int = 0):
    """``(X [M, D+2], y [M], step index [M])``: activation ++ (x, y) / PAD for ``queries`` random cells per step (all when None)."""
    rng = np.random.default_rng(seed)
    feats = _features(steps, readouts)
    all_cells = np.array([(x, y) for y in range(PAD) for x in range(PAD)])
    xs, ys, ids = [], [], []
    for i in np.flatnonzero(mask):
        lab = cell_labels(steps.grids[steps.grid[i]], tuple(steps.cells[i]))
        q = all_cells if queries is None else all_cells[rng.choice(len(all_cells), size=queries, replace=False)]
        xs.append(np.concatenate([np.repeat(feats[i][None], len(q), 0), q.astype(np.float32) / PAD], axis=1))
        ys.append(lab[q[:, 1], q[:, 0]])
        ids.append(np.full(len(q), i))
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(ids)


def map_probe(kind: str, dim: int, n_classes: int = len(MAP_CLASSES)) -> nn.Module:
    """``linear``: one layer; ``mlp``: two hidden layers (256, 128), ReLU, dropout 0.1."""
    if kind == "linear":
        return nn.Linear(dim, n_classes)
    if kind == "mlp":
        return nn.Sequential(nn.Linear(dim, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, 128), nn.ReLU(),
                             nn.Dropout(0.1), nn.Linear(128, n_classes))
    raise ValueError(f"unknown probe kind {kind!r}; expected linear or mlp")


def _standardise(train: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    mu, sd = train.mean(0), train.std(0) + 1e-6
    return [(a - mu) / sd for a in (train, *others)]


def train_classifier(model: nn.Module, x: np.ndarray, y: np.ndarray, n_classes: int, *, epochs: int, lr: float,
                     batch: int = 256, seed: int = 0) -> nn.Module:
    """AdamW (weight decay 1e-4) on class-balanced cross-entropy (inverse-frequency weights)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    counts = np.bincount(y, minlength=n_classes).astype(np.float64)
    weights = np.where(counts > 0, counts.sum() / (n_classes * np.maximum(counts, 1)), 0.0)
    loss_fn = nn.CrossEntropyLoss(weight=torch.tensor(weights, dtype=torch.float32))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    xt, yt = torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y.astype(np.int64))
    for _ in range(epochs):
        model.train()
        order = torch.randperm(len(xt), generator=gen)
        for i in range(0, len(xt), batch):
            idx = order[i: i + batch]
            loss = loss_fn(model(xt[idx]), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.eval()


def _predict(model: nn.Module, x: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        return torch.softmax(model(torch.from_numpy(x.astype(np.float32))), dim=1).numpy()


def balanced_accuracy(y: np.ndarray, pred: np.ndarray) -> float:
    """Mean per-class recall over the classes present in ``y``."""
    return float(np.mean([(pred[y == c] == c).mean() for c in np.unique(y)]))


def consistency(steps: Steps, test: np.ndarray, probs: np.ndarray, ids: np.ndarray) -> dict:
    """Decoded-map consistency on held-out steps (needs ``probs`` for every padded cell of each step).

    The decoded grid is the per-cell argmax with the goal at the most likely goal cell and the
    agent where it is; pi* on it comes from the move counts to that goal (:func:`bib.world.planning.move_counts`).
    """
    on_decoded, recovered, nonopt, total = 0, 0, 0, 0
    for i in np.flatnonzero(test):
        p = probs[ids == i].reshape(PAD, PAD, -1)
        pred = p.argmax(axis=2)
        goal = np.unravel_index(p[:, :, MAP_CLASSES.index("goal")].argmax(), (PAD, PAD))
        goal = (int(goal[1]), int(goal[0]))
        agent = tuple(int(v) for v in steps.cells[i])
        blocked = {(x, y) for y in range(PAD) for x in range(PAD)
                   if pred[y, x] in (MAP_CLASSES.index("wall"), MAP_CLASSES.index("padding"))} - {goal, agent}
        dist = move_counts(PAD, PAD, blocked, goal)
        a = int(steps.actions[i])
        good = False
        if a in MOVE_INDEX and agent in dist and agent != goal:
            dx, dy = ACTIONS[a]
            good = dist.get((agent[0] + dx, agent[1] + dy), -1) == dist[agent] - 1
        total += 1
        on_decoded += good
        if not steps.optimal[i]:
            nonopt += 1
            recovered += good
    return {"steps": total, "optimal_on_decoded": on_decoded / total if total else float("nan"),
            "nonoptimal_moves": nonopt, "recovered": recovered,
            "error_recovery": recovered / nonopt if nonopt else float("nan")}


def run_map_probes(steps: Steps, *, kinds: Sequence[str] = ("linear", "mlp"), readouts: Sequence[str] = READOUTS,
                   queries: int = 32, epochs: int = 5, seed: int = 0) -> list[dict]:
    """Train and evaluate the cognitive-map probes; the MLP's decoded maps give the consistency row fields."""
    train_m, test_m = split(steps, seed=seed)
    xtr, ytr, _ = map_dataset(steps, train_m, readouts, queries, seed)
    xte, yte, ids = map_dataset(steps, test_m, readouts, None, seed)
    xtr, xte = _standardise(xtr, xte)
    majority = int(np.bincount(ytr).argmax())
    rows = []
    for kind in kinds:
        model = train_classifier(map_probe(kind, xtr.shape[1]), xtr, ytr, len(MAP_CLASSES), epochs=epochs,
                                 lr=0.01 if kind == "linear" else 1e-3, seed=seed)
        probs = _predict(model, xte)
        pred = probs.argmax(1)
        row = {"probe": f"map-{kind}", "accuracy": float((pred == yte).mean()),
               "balanced_accuracy": balanced_accuracy(yte, pred),
               "baseline": float((yte == majority).mean()), "chance_balanced": 1 / len(MAP_CLASSES),
               "train_rows": int(len(ytr)), "test_rows": int(len(yte))}
        row.update(consistency(steps, test_m, probs, ids))
        rows.append(row)
    return rows


# ---------------------------------------------------------------- plan probe


class PlanProbe(nn.Module):
    """One-shot plan decoder: three activation vectors -> 10 move slots (see the module docstring)."""

    def __init__(self, dims: Sequence[int], hidden: int = 128, layers: int = 2, heads: int = 4,
                 slots: int = PLAN_SLOTS, dropout: float = 0.1) -> None:
        super().__init__()
        if not 1 <= layers <= 4:
            raise ValueError(f"plan probe: 1 to 4 decoder layers, got {layers}")
        self.proj = nn.ModuleList(nn.Sequential(nn.Linear(d, hidden), nn.LayerNorm(hidden), nn.GELU(),
                                                nn.Dropout(dropout)) for d in dims)
        self.queries = nn.Parameter(torch.randn(slots, hidden) * 0.02)
        self.positions = nn.Parameter(torch.randn(slots, hidden) * 0.02)
        layer = nn.TransformerDecoderLayer(hidden, heads, 4 * hidden, dropout, batch_first=True, norm_first=True)
        self.decoder = nn.TransformerDecoder(layer, layers)
        self.head = nn.Linear(hidden, len(MOVES) + 1)

    def forward(self, vectors: Sequence[torch.Tensor]) -> torch.Tensor:
        """Logits ``[B, slots, 5]`` from three ``[B, d_i]`` activations."""
        memory = torch.stack([p(v) for p, v in zip(self.proj, vectors)], dim=1)
        tgt = (self.queries + self.positions).unsqueeze(0).expand(memory.shape[0], -1, -1)
        return self.head(self.decoder(tgt, memory))  # no masks: every slot sees every slot


def plan_targets(steps: Steps) -> tuple[np.ndarray, np.ndarray]:
    """``(keep mask [N], targets [K, 10])``: moves then EOS, -100 padding; steps with >= 10 moves left dropped."""
    keep = np.array([len(f) < PLAN_SLOTS and all(a in MOVE_INDEX for a in f) for f in steps.future])
    targets = np.full((int(keep.sum()), PLAN_SLOTS), -100, dtype=np.int64)
    for row, i in enumerate(np.flatnonzero(keep)):
        seq = [MOVE_INDEX[a] for a in steps.future[i]] + [EOS]
        targets[row, : len(seq)] = seq
    return keep, targets


def plan_metrics(pred: np.ndarray, target: np.ndarray) -> dict:
    """Token accuracy, exact-sequence accuracy and prefix-N accuracy (N = 1..10; over sequences with >= N tokens)."""
    valid = target != -100
    hit = (pred == target) | ~valid
    out = {"token_accuracy": float((pred == target)[valid].mean()), "exact": float(hit.all(axis=1).mean())}
    lengths = valid.sum(axis=1)
    for n in range(1, PLAN_SLOTS + 1):
        has = lengths >= n
        out[f"prefix_{n}"] = float(hit[has, :n].all(axis=1).mean()) if has.any() else float("nan")
    return out


def run_plan_probe(steps: Steps, *, layers: int = 2, hidden: int = 128, epochs: int = 20, lr: float = 1e-3,
                   batch: int = 32, decay: float = 0.9, seed: int = 0) -> dict:
    """Train the plan probe on the training grids and score it on the held-out ones, with the majority baseline."""
    train_m, test_m = split(steps, seed=seed)
    keep, targets = plan_targets(steps)
    tr, te = train_m[keep], test_m[keep]
    feats = [steps.acts[n][keep].astype(np.float32) for n in READOUTS]
    feats = [_standardise(f[tr], f[te]) for f in feats]
    xtr = [torch.from_numpy(f[0]) for f in feats]
    xte = [torch.from_numpy(f[1]) for f in feats]
    ytr, yte = torch.from_numpy(targets[tr]), targets[te]
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    probe = PlanProbe([x.shape[1] for x in xtr], hidden=hidden, layers=layers)
    opt = torch.optim.AdamW(probe.parameters(), lr=lr, weight_decay=1e-4)
    weight = decay ** torch.arange(PLAN_SLOTS, dtype=torch.float32)
    for _ in range(epochs):
        probe.train()
        order = torch.randperm(len(ytr), generator=gen)
        for i in range(0, len(ytr), batch):
            idx = order[i: i + batch]
            logits = probe([x[idx] for x in xtr])
            y = ytr[idx]
            per = nn.functional.cross_entropy(logits.reshape(-1, 5), y.reshape(-1), ignore_index=-100,
                                              reduction="none").reshape(y.shape)
            w = weight * (y != -100)
            loss = (per * w).sum() / w.sum().clamp_min(1e-9)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(probe.parameters(), 1.0)
            opt.step()
    probe.eval()
    with torch.inference_mode():
        pred = probe(xte).argmax(-1).numpy()
    ytr_np = ytr.numpy()
    majority = np.array([np.bincount(c[c != -100], minlength=5).argmax() if (c != -100).any() else EOS
                         for c in ytr_np.T])
    base = plan_metrics(np.broadcast_to(majority, yte.shape), yte)
    got = plan_metrics(pred, yte)
    return {"probe": f"plan-{layers}L", "accuracy": got["token_accuracy"], "baseline": base["token_accuracy"],
            **got, **{f"baseline_{k}": v for k, v in base.items()},
            "hidden": hidden, "train_rows": int(len(ytr)), "test_rows": int(len(yte))}


def run_probes(model: PolicyNet, out, *, grids: int = 2, rollouts: int = 5, layers: Sequence[int] = (1, 2),
               map_epochs: int = 5, plan_epochs: int = 20, queries: int = 32, seed: int = 0,
               plan_hidden: int = 128, command: str = "") -> dict:
    """Collect activations on ``30 * grids`` navigation grids, train every probe, write ``out/probes.json``."""
    import json
    from pathlib import Path

    from bib.io import atomic_write_text, ensure_dir
    from bib.progress import track

    with torch_threads(1):
        steps = collect(model, range(30 * grids), rollouts=rollouts, seed=seed)
        rows = run_map_probes(steps, queries=queries, epochs=map_epochs, seed=seed)
        rows += [run_plan_probe(steps, layers=n, hidden=plan_hidden, epochs=plan_epochs, seed=seed)
                 for n in track(list(layers), description="agency probe: plan probes")]
    payload = {"command": command, "steps": int(len(steps.actions)), "grids": len(steps.grids), "rows": rows}
    folder = ensure_dir(Path(out))
    atomic_write_text(folder / "probes.json", json.dumps(payload, indent=2) + "\n")
    return payload
