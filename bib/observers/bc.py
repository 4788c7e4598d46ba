"""BC-MLP and BC-RNN: ToMnet-style behaviour cloning (a character net over the familiarization trials,
a prediction net for the next move of the test trial); surprise = the per-step action error.

Character net (context), from BIB's baselines (``tom/models.py``):

* ``bc-mlp``: every (state embedding, action (dx, dy)) sample of the 8 familiarization trials goes
  through an MLP [64, 64] -> 32 and the outputs are mean-pooled over all samples.
* ``bc-rnn``: each trial's (state, action) sequence goes through a 2-layer bidirectional LSTM
  (hidden 32 per direction); the packed final states at each trial's true length (not the padded
  last position BIB's code read) are averaged over trials.

Prediction net: MLP [256, 128, 256] with ReLU and dropout 0.2 on [state embedding, context].
Head ``mse`` (default, as in BIB): tanh -> (dx, dy), error = mean squared error over the two
components of the observed move (0 for a correct move, 1 for an orthogonal 90-degree miss).
Head ``nll``: 9 logits (8 moves + stay), error = negative log-likelihood of the observed move.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from bib.errors import BibInputError
from bib.observers.encoders import Batch
from bib.observers.learned import InputConfig, LearnedObserver, register_learned
from bib.observers.nets import StateEncoder, action_vectors, mlp, packed_last, padded_last, segment_mean

HEADS = ("mse", "nll")
CONTEXT_LAST = ("true-length", "padded")
"""How bc-rnn reads each familiarization trial's LSTM: at its true length (ours, the default) or BIB's padded
last position (:func:`bib.observers.nets.padded_last`: zero for every trial shorter than the episode's longest)."""


@dataclass
class BCConfig(InputConfig):
    """Model config of ``bc-mlp`` / ``bc-rnn`` (``[model]`` in ``baselines/bc-*.toml``).

    Attributes:
        context_hidden: bc-rnn: LSTM hidden size per direction (context = 2x this);
            bc-mlp: context size (MLP [64, 64] -> this).
        policy: hidden sizes of the prediction MLP.
        dropout: dropout of the prediction MLP.
        head: ``mse`` on (dx, dy) or ``nll`` over the 9 actions.
        context_last: bc-rnn: ``true-length`` (default) or ``padded``, BIB's code's reading (:data:`CONTEXT_LAST`).
    """

    context_hidden: int = 32
    policy: list[int] = field(default_factory=lambda: [256, 128, 256])
    dropout: float = 0.2
    head: str = "mse"
    context_last: str = "true-length"


class BCNet(nn.Module):
    """State encoder + character net (``mlp`` or ``rnn``) + prediction net."""

    def __init__(self, cfg: BCConfig, spec, context: str) -> None:
        super().__init__()
        if cfg.head not in HEADS:
            raise BibInputError(f"config field 'head': expected one of {', '.join(HEADS)}, got {cfg.head!r}")
        if cfg.context_last not in CONTEXT_LAST:
            raise BibInputError(f"config field 'context_last': expected one of {', '.join(CONTEXT_LAST)}, "
                                f"got {cfg.context_last!r}")
        self.kind = context
        self.head = cfg.head
        self.last = cfg.context_last
        self.encoder = StateEncoder(spec, cfg.embed, cfg.symbolic_hidden)
        d_in = cfg.embed + 2
        if context == "mlp":
            self.context = mlp(d_in, [64, 64], cfg.context_hidden)
            ctx_dim = cfg.context_hidden
        else:
            self.context = nn.LSTM(d_in, cfg.context_hidden, num_layers=2, bidirectional=True, batch_first=True)
            ctx_dim = 2 * cfg.context_hidden
        self.policy = mlp(cfg.embed + ctx_dim, list(cfg.policy), 2 if cfg.head == "mse" else 9, cfg.dropout)

    def trial_inputs(self, batch: Batch, emb: torch.Tensor) -> torch.Tensor:
        """``[T, L, embed + 2]``: the padded (state embedding, action) sequence of each context trial."""
        return torch.cat([emb[batch.ctx_index], action_vectors(batch.actions[batch.ctx_index])], dim=-1)

    def character(self, batch: Batch, emb: torch.Tensor) -> torch.Tensor:
        """The context vector of each episode, ``[B, ctx]``."""
        x = self.trial_inputs(batch, emb)
        if self.kind == "rnn":
            if self.last == "padded":
                last = padded_last(self.context, x, batch.ctx_lengths, batch.ctx_episode)
            else:
                last = packed_last(self.context, x, batch.ctx_lengths)
            return segment_mean(last, batch.ctx_episode, batch.n_episodes)
        h = self.context(x)
        mask = (torch.arange(x.shape[1], device=x.device)[None, :] < batch.ctx_lengths[:, None]).to(h.dtype)
        sums = (h * mask[..., None]).sum(dim=1)
        total = torch.zeros(batch.n_episodes, h.shape[-1], device=h.device).index_add_(0, batch.ctx_episode, sums)
        count = torch.zeros(batch.n_episodes, device=h.device).index_add_(0, batch.ctx_episode, mask.sum(dim=1))
        return total / count.clamp(min=1.0)[:, None]

    def forward(self, batch: Batch) -> torch.Tensor:
        """Raw policy outputs for every query, ``[Q, 2]`` (mse) or ``[Q, 9]`` (nll)."""
        emb = self.encoder(batch)
        ctx = self.character(batch, emb)
        return self.policy(torch.cat([emb[batch.query_index], ctx[batch.query_episode]], dim=1))

    def step_errors(self, batch: Batch) -> torch.Tensor:
        """Per-query action error ``[Q]``: MSE on (dx, dy) or NLL of the observed action."""
        out = self.forward(batch)
        target = batch.actions[batch.query_index]
        if self.head == "mse":
            return ((torch.tanh(out) - action_vectors(target)) ** 2).mean(dim=1)
        return F.cross_entropy(out, target, reduction="none")


class BCMLPObserver(LearnedObserver):
    """``bc-mlp``: mean-pooled MLP character net."""

    name = "bc-mlp"
    Config = BCConfig
    context = "mlp"

    def build_net(self) -> nn.Module:
        """The BC network with an MLP character net."""
        return BCNet(self.config, self.spec, self.context)


class BCRNNObserver(BCMLPObserver):
    """``bc-rnn``: bidirectional-LSTM character net with true-length final states."""

    name = "bc-rnn"
    context = "rnn"


register_learned(BCMLPObserver)
register_learned(BCRNNObserver)
