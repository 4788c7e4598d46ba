"""Torch building blocks of the learned observers: state encoders, MLPs, packed RNN summaries, a small U-Net."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from bib.observers.encoders import ACTION_VECTORS, DYNAMIC_CHANNELS, LEGACY_SYMBOLIC_CHANNELS, Batch, InputSpec

FRAME_CHUNK = 128
"""Frames encoded at once by :class:`StateEncoder` (bounds the conv activations' memory)."""

CROP = 6
"""Outputs per axis of the second convolution recomputed around a frame's changed box."""
STRIDE = 4
"""Input pixels between neighbouring outputs of the second convolution (strides 2 x 2)."""
RECEPTIVE = 7
"""Input pixels per axis one output of the second convolution reads (kernels 3 and 3, stride 2)."""


def _nhwc(x: torch.Tensor) -> torch.Tensor:
    """``[N, C, H, W]`` -> its channels-last memory as a contiguous ``[N, H, W, C]`` tensor (no copy when it is)."""
    return x.permute(0, 2, 3, 1).contiguous()


class StateEncoder(nn.Module):
    """Each state of a batch -> an ``embed``-d vector (``forward(batch, index=None)``).

    Symbolic grids: an MLP over the flattened ``C x H x W`` grid (``hidden`` units, ReLU, then
    ``embed``, ReLU). The first layer's weights of the channels appended after
    :data:`~bib.observers.encoders.LEGACY_SYMBOLIC_CHANNELS` (mud, occluder) start at zero, and the others are drawn
    as they were before those existed, so on sets without mud or occluder training gives the weights (and scores) of
    before, the extra columns staying zero. Its first layer is computed in factored form, exactly: the layout variants
    of a batch go through it once and the agent's channels add a column lookup at its cell, so
    a state costs ``hidden x 8`` multiply-adds instead of ``hidden x C x H x W``.
    Frames: the ATC conv stack of BIB's baselines (32 channels, kernel 3, strides 2, 2, 2, 1),
    flattened into a linear layer with ReLU. Frames are converted to floats and encoded
    :data:`FRAME_CHUNK` states at a time (bounded memory whatever the batch), in torch's
    ``channels_last`` format (about 1.6x faster convolutions than NCHW on CPU). At inference, when
    the batch carries the frames' backgrounds, the first three convolutions run only where frames
    differ from them (:meth:`_frames_from_backgrounds`).
    """

    def __init__(self, spec: InputSpec, embed: int, hidden: int = 256) -> None:
        super().__init__()
        c, h, w = spec.shape
        self.symbolic = spec.input == "symbolic"
        if self.symbolic:
            # the channels of before mud and occluder get the random initial weights they had (the same draws); the
            # appended ones start at zero, so a set that never shows them trains to exactly the weights of before
            drawn = min(c, len(LEGACY_SYMBOLIC_CHANNELS))
            self.first = nn.Linear(drawn * h * w, hidden)
            if c > drawn:
                grown = torch.cat([self.first.weight.detach(), self.first.weight.new_zeros(hidden, (c - drawn) * h * w)], 1)
                self.first.weight = nn.Parameter(grown)
                self.first.in_features = c * h * w
            self.register_buffer("dyn", torch.tensor(DYNAMIC_CHANNELS), persistent=False)
            self.head = nn.Sequential(nn.ReLU(), nn.Linear(hidden, embed), nn.ReLU())
            return
        self.normalized = False  # frames: (x - pixel_mean) / pixel_std per channel after / 255 (InputSpec.normalize)
        self.register_buffer("pixel_mean", torch.zeros(1, c, 1, 1), persistent=False)  # the config records them
        self.register_buffer("pixel_std", torch.ones(1, c, 1, 1), persistent=False)
        if spec.pixel_mean:
            self.set_normalization(spec.pixel_mean, spec.pixel_std)
        convs: list[nn.Module] = []
        for i, stride in enumerate((2, 2, 2, 1)):
            convs += [nn.Conv2d(c if i == 0 else 32, 32, 3, stride=stride), nn.ReLU(inplace=True)]
        self.conv = nn.Sequential(*convs)
        with torch.no_grad():
            flat = self.conv(torch.zeros(1, c, h, w)).numel()
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(flat, embed), nn.ReLU())

    def set_normalization(self, mean, std) -> None:
        """Normalise frames with per-channel ``mean`` / ``std`` (floats for pixels in [0, 1]; buffers, not weights)."""
        self.pixel_mean.copy_(torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1))
        self.pixel_std.copy_(torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1))
        self.normalized = True

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """Frames as floats in [0, 1] ``[N, 3, H, W]`` -> the encoder's input (normalised when the spec says so)."""
        return (x - self.pixel_mean) / self.pixel_std if self.normalized else x

    def as_input(self, frames: torch.Tensor) -> torch.Tensor:
        """uint8 pictures ``[N, 3, H, W]`` -> the encoder's float input, channels-last (:meth:`normalize`)."""
        return self.normalize(frames.float().div_(255.0)).contiguous(memory_format=torch.channels_last)

    def embed_frames(self, x: torch.Tensor) -> torch.Tensor:
        """Embeddings ``[N, embed]`` of encoder inputs ``x`` (:meth:`as_input`): the conv stack and the head."""
        return self.head(self.conv(x.contiguous(memory_format=torch.channels_last)))

    def forward(self, batch: Batch, index: torch.Tensor | None = None) -> torch.Tensor:
        """Embeddings ``[N, embed]`` of the states ``index`` (default: all states of ``batch``)."""
        if not self.symbolic:
            if batch.backgrounds is not None and not torch.is_grad_enabled():
                return self._frames_from_backgrounds(batch, index)
            n = batch.n_states if index is None else len(index)
            parts = []
            for start in range(0, n, FRAME_CHUNK):
                sel = slice(start, min(start + FRAME_CHUNK, n))
                frames = self.normalize(batch.dense(sel if index is None else index[sel]))
                parts.append(self.embed_frames(frames))
            return parts[0] if len(parts) == 1 else torch.cat(parts)
        variant, cells, dynamic = batch.variant, batch.cells, batch.dynamic
        if index is not None:
            variant, cells, dynamic = variant[index], cells[index], dynamic[index]
        weight = self.first.weight
        layouts = batch.variants.flatten(1) @ weight.T  # [K, hidden]
        hw = batch.variants.shape[-2] * batch.variants.shape[-1]
        columns = weight.view(weight.shape[0], -1, hw)[:, self.dyn][:, :, cells]  # [hidden, D, N]
        pre = layouts[variant] + torch.einsum("hdn,nd->nh", columns, dynamic) + self.first.bias
        return self.head(pre)

    def _frames_from_backgrounds(self, batch: Batch, index: torch.Tensor | None = None) -> torch.Tensor:
        """Frame embeddings computed where the frames differ from their backgrounds (inference only).

        A frame is its background except inside a small box around the agent, and the first three
        convolutions (kernel 3, no padding, strides 2) are local: an output of the second one reads
        ``RECEPTIVE = 7`` input pixels per axis from ``4 j``. So the layers run once per distinct
        background of the batch; per frame, the first two run only on a crop covering the outputs
        whose inputs reach into its box (:data:`CROP` x :data:`CROP` outputs), and the third only on
        the ``K x K`` outputs (``K = (CROP + 1) // 2 + 1``) that read the crop, from a window of the
        background's second-layer map with the crop written in. Those outputs replace the
        background's. Frames whose box needs more run whole. The last layer runs on every frame.
        The result equals the whole-frame computation up to float summation order.
        """
        prefix, third, rest = self.conv[:4], self.conv[4:6], self.conv[6:]
        n = batch.n_states if index is None else len(index)
        bgs = batch.backgrounds
        maps_bg = torch.cat([_nhwc(prefix(self.as_input(bgs[i : i + FRAME_CHUNK]))) for i in range(0, len(bgs), FRAME_CHUNK)])
        h2, w2, ch = maps_bg.shape[1:]
        maps3_bg = _nhwc(third(maps_bg.permute(0, 3, 1, 2)))  # [G, H3, W3, 32], the backgrounds' third-layer maps
        h3, w3 = maps3_bg.shape[1:3]
        k3 = (CROP + 1) // 2 + 1
        span2 = 2 * k3 + 1  # second-layer rows (columns) the k3 third-layer outputs read
        bg_of = maps_bg.reshape(-1, ch)
        frames = _nhwc(batch.frames)  # [N, H, W, 3]
        h, w = frames.shape[1:3]
        pixels_of = frames.reshape(-1, 3)
        span = (CROP - 1) * STRIDE + RECEPTIVE
        dev = maps_bg.device
        offs, k, kk = torch.arange(span, device=dev), torch.arange(CROP, device=dev), torch.arange(k3, device=dev)
        parts = []
        for start in range(0, n, FRAME_CHUNK):
            sel = torch.arange(start, min(start + FRAME_CHUNK, n), device=dev) if index is None else index[start : start + FRAME_CHUNK]
            bg = batch.background[sel]
            maps = maps3_bg.index_select(0, bg)  # [n, H3, W3, 32], the backgrounds' maps
            y0, y1, x0, x1 = batch.boxes[sel].unbind(1)
            lo_y = torch.clamp(-((RECEPTIVE - 1 - y0) // STRIDE), min=0)  # ceil((y0 - 6) / 4)
            lo_x = torch.clamp(-((RECEPTIVE - 1 - x0) // STRIDE), min=0)
            hi_y, hi_x = torch.clamp(y1 // STRIDE, max=h2 - 1), torch.clamp(x1 // STRIDE, max=w2 - 1)
            changed = y1 >= y0
            fits = (hi_y - lo_y < CROP) & (hi_x - lo_x < CROP) & (h2 >= CROP) & (w2 >= CROP) & (h3 >= k3) & (w3 >= k3)
            crop = torch.nonzero(changed & fits).flatten()
            whole = torch.nonzero(changed & ~fits).flatten()
            if len(crop):
                m = len(crop)
                jy = torch.clamp(lo_y[crop], max=h2 - CROP)  # the crop's first second-layer output row
                jx = torch.clamp(lo_x[crop], max=w2 - CROP)
                rows = (jy * STRIDE)[:, None] + offs  # [M, span] input rows of each crop
                cols = (jx * STRIDE)[:, None] + offs
                flat = (sel[crop] * (h * w))[:, None, None] + rows[:, :, None] * w + cols[:, None, :]
                pixels = pixels_of.index_select(0, flat.flatten()).view(m, span, span, 3)
                out = _nhwc(prefix(self.as_input(pixels.permute(0, 3, 1, 2))))  # [M, CROP, CROP, 32]
                # Third-layer outputs p read second-layer rows 2p .. 2p + 2: those reading the crop are
                # p0 .. p0 + k3 - 1 with p0 = ceil((jy - 2) / 2) (clamped to the map).
                p0 = torch.clamp(-((2 - jy) // 2), min=0, max=h3 - k3)
                q0 = torch.clamp(-((2 - jx) // 2), min=0, max=w3 - k3)
                win_rows = (2 * p0)[:, None] + torch.arange(span2, device=dev)
                win_cols = (2 * q0)[:, None] + torch.arange(span2, device=dev)
                at = (bg[crop] * (h2 * w2))[:, None, None] + win_rows[:, :, None] * w2 + win_cols[:, None, :]
                window = bg_of.index_select(0, at.flatten()).view(m, span2, span2, ch)
                r = (jy - 2 * p0)[:, None] + k  # [M, CROP] the crop's rows in the window (>= 0)
                c = (jx - 2 * q0)[:, None] + k
                inside = (r[:, :, None] < span2) & (c[:, None, :] < span2)  # rows past it: read by no third-layer output
                dest = torch.arange(m, device=dev)[:, None, None] * (span2 * span2) + r[:, :, None] * span2 + c[:, None, :]
                window.view(-1, ch).index_copy_(0, dest[inside], out[inside])
                out3 = _nhwc(third(window.permute(0, 3, 1, 2)))  # [M, k3, k3, 32]
                at3 = (crop * (h3 * w3))[:, None, None] + (p0[:, None] + kk)[:, :, None] * w3 + (q0[:, None] + kk)[:, None, :]
                maps.view(-1, ch).index_copy_(0, at3.flatten(), out3.reshape(-1, ch))
            maps = maps.permute(0, 3, 1, 2)  # [n, 32, H3, W3], channels-last memory
            if len(whole):
                maps[whole] = third(prefix(self.as_input(batch.frames[sel[whole]])))
            parts.append(self.head(rest(maps)))
        return parts[0] if len(parts) == 1 else torch.cat(parts)


def mlp(n_in: int, hidden: list[int], n_out: int, dropout: float = 0.0) -> nn.Sequential:
    """Linear layers with ReLU (and dropout) between them; no activation after the last."""
    layers: list[nn.Module] = []
    width = n_in
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        if dropout > 0:
            layers.append(nn.Dropout(dropout))
        width = h
    layers.append(nn.Linear(width, n_out))
    return nn.Sequential(*layers)


def action_vectors(actions: torch.Tensor) -> torch.Tensor:
    """Action indices (any shape) -> their ``(dx, dy)`` as float, shape ``[..., 2]``."""
    return torch.from_numpy(ACTION_VECTORS).to(actions.device)[actions]


def packed_last(rnn: nn.LSTM | nn.GRU, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Final states of ``rnn`` over padded sequences, taken at each sequence's true length.

    The sequences are packed, so padding never enters the recurrence; the result is the last
    layer's final hidden state (forward direction after the last real step, backward direction
    after the first), concatenated for a bidirectional RNN. This is the fix for BIB's BC-RNN,
    which read ``x_lstm[:, -1]``, a padded position for every shorter trial.

    Args:
        rnn: a ``batch_first`` LSTM or GRU.
        x: ``[T, L, D]`` padded inputs.
        lengths: ``[T]`` true lengths (>= 1).

    Returns:
        ``[T, H * directions]``.
    """
    packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
    _, hidden = rnn(packed)
    h_n = hidden[0] if isinstance(hidden, tuple) else hidden
    if rnn.bidirectional:
        return torch.cat([h_n[-2], h_n[-1]], dim=1)
    return h_n[-1]


def padded_last(rnn: nn.LSTM | nn.GRU, x: torch.Tensor, lengths: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
    """BIB's BC-RNN readout, kept to reproduce its numbers: ``x_lstm[:, -1]`` after ``pad_packed_sequence`` over
    the trials of one episode (``groups``: the episode of each sequence).

    The output at the last position of the episode's longest trial: for that trial the forward direction's
    final output and the backward direction's output after the last step alone; for every shorter trial a
    padded zero (what BIB's ``tom/models.py`` read; :func:`packed_last` is the fix).

    Returns:
        ``[T, H * directions]``.
    """
    packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
    out, _ = rnn(packed)
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
    n = int(groups.max()) + 1
    longest = torch.zeros(n, dtype=lengths.dtype, device=lengths.device).scatter_reduce(
        0, groups, lengths, reduce="amax", include_self=False)
    return out[torch.arange(len(lengths), device=out.device), (longest[groups] - 1).to(out.device)]


def segment_mean(values: torch.Tensor, segments: torch.Tensor, n: int) -> torch.Tensor:
    """Mean of the rows of ``values`` [T, D] grouped by ``segments`` [T] into ``n`` groups."""
    total = torch.zeros(n, values.shape[1], dtype=values.dtype, device=values.device).index_add_(0, segments, values)
    counts = torch.zeros(n, dtype=values.dtype, device=values.device).index_add_(0, segments, torch.ones_like(segments, dtype=values.dtype))
    return total / counts.clamp(min=1.0)[:, None]


def _double_conv(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1), nn.ReLU(inplace=True), nn.Conv2d(c_out, c_out, 3, padding=1), nn.ReLU(inplace=True)
    )


class UNet(nn.Module):
    """A small U-Net: two down-sampling levels, a conditioned bottleneck, a linear output.

    The condition vector (the agent embedding) is projected to the bottleneck channels and added
    at every bottleneck position. Odd sizes (a 10 x 10 grid, 21 px) are handled by resizing on
    the way up.
    """

    def __init__(self, c_in: int, c_out: int, cond: int, channels: list[int]) -> None:
        super().__init__()
        c1, c2 = channels
        self.enc1 = _double_conv(c_in, c1)
        self.enc2 = _double_conv(c1, c2)
        self.mid = _double_conv(c2, 2 * c2)
        self.cond = nn.Linear(cond, 2 * c2)
        self.dec2 = _double_conv(2 * c2 + c2, c2)
        self.dec1 = _double_conv(c2 + c1, c1)
        self.out = nn.Conv2d(c1, c_out, 1)
        nn.init.zeros_(self.out.weight)  # starts as the zero map (a residual predictor starts by copying)
        nn.init.zeros_(self.out.bias)

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        """``x`` [N, C, H, W], ``cond`` [N, cond] -> [N, c_out, H, W]."""
        s1 = self.enc1(x)
        s2 = self.enc2(F.max_pool2d(s1, 2))
        m = self.mid(F.max_pool2d(s2, 2)) + self.cond(cond)[:, :, None, None]
        u2 = self.dec2(torch.cat([F.interpolate(m, size=s2.shape[-2:], mode="nearest"), s2], dim=1))
        u1 = self.dec1(torch.cat([F.interpolate(u2, size=s1.shape[-2:], mode="nearest"), s1], dim=1))
        return self.out(u1)
