"""Video-RNN: a GRU context over the familiarization frames and a small U-Net that predicts the next
frame of the test trial; surprise of a step = pixel MSE between the predicted and the shown frame.

BIB released no Video-RNN code (its Fig. 7 gives only the architecture), so the sizes here are ours:
each familiarization trial's frames go through the state encoder and a GRU (packed, true last
state), the trial summaries are averaged into the agent embedding, and the U-Net takes the current
test frame with the embedding added at its bottleneck and predicts the change to the next frame
(residual: prediction = current frame + U-Net output, the output layer starting at zero, so an
untrained model predicts "nothing moves"; a sigmoid-output version collapsed to a constant frame
in our first run). The default input is the symbolic grid
(the "pixels" are grid channels; fast); ``input = "frames"`` predicts rendered 84 x 84 frames as
BIB's Video-RNN did, at a much lower throughput (see ``baselines/README.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from bib.observers.encoders import Batch
from bib.observers.learned import InputConfig, LearnedObserver, register_learned
from bib.observers.nets import StateEncoder, UNet, packed_last, segment_mean

QUERY_CHUNK = 16
"""Test steps whose next state the U-Net predicts at once (bounds its activations' memory)."""


@dataclass
class VideoRNNConfig(InputConfig):
    """Model config of ``video-rnn`` (``[model]`` in ``baselines/video-rnn.toml``).

    Attributes:
        rnn_hidden: GRU hidden size (the agent embedding).
        unet_channels: channels of the U-Net's two levels (the bottleneck has twice the second).
    """

    embed: int = 64
    rnn_hidden: int = 64
    unet_channels: list[int] = field(default_factory=lambda: [8, 16])


class VideoRNNNet(nn.Module):
    """Frame encoder + GRU context + conditioned U-Net next-frame predictor."""

    def __init__(self, cfg: VideoRNNConfig, spec) -> None:
        super().__init__()
        self.encoder = StateEncoder(spec, cfg.embed, cfg.symbolic_hidden)
        self.rnn = nn.GRU(cfg.embed, cfg.rnn_hidden, batch_first=True)
        self.unet = UNet(spec.channels, spec.channels, cfg.rnn_hidden, list(cfg.unet_channels))

    def context(self, batch: Batch) -> torch.Tensor:
        """The agent embedding of each episode, ``[B, rnn_hidden]``."""
        used = torch.unique(batch.ctx_index)
        emb = torch.zeros(batch.n_states, self.rnn.input_size, device=used.device)
        emb[used] = self.encoder(batch, used)
        last = packed_last(self.rnn, emb[batch.ctx_index], batch.ctx_lengths)
        return segment_mean(last, batch.ctx_episode, batch.n_episodes)

    def step_errors(self, batch: Batch) -> torch.Tensor:
        """Per-query pixel MSE ``[Q]`` of the predicted next frame (:data:`QUERY_CHUNK` queries at a time)."""
        ctx = self.context(batch)
        parts = []
        for start in range(0, len(batch.query_index), QUERY_CHUNK):
            query = batch.query_index[start : start + QUERY_CHUNK]
            current = batch.dense(query)
            if batch.frames is not None:
                current = current.contiguous(memory_format=torch.channels_last)
            pred = current + self.unet(current, ctx[batch.query_episode[start : start + QUERY_CHUNK]])
            target = batch.dense(query + 1)
            parts.append(((pred - target) ** 2).mean(dim=(1, 2, 3)))
        return parts[0] if len(parts) == 1 else torch.cat(parts)


class VideoRNNObserver(LearnedObserver):
    """``video-rnn``: next-frame prediction error."""

    name = "video-rnn"
    Config = VideoRNNConfig

    def build_net(self) -> nn.Module:
        """The Video-RNN network."""
        return VideoRNNNet(self.config, self.spec)


register_learned(VideoRNNObserver)
