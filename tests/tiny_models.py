"""The tiny learned observers the learned-model tests build (a helper of those tests): the same sizes everywhere, so a
checkpoint pinned in one test file is the model another builds."""

from __future__ import annotations

from bib.observers.bc import BCMLPObserver, BCRNNObserver
from bib.observers.video_rnn import VideoRNNObserver

TINY = {"embed": 16, "symbolic_hidden": 32, "context_hidden": 8, "policy": [32], "dropout": 0.0}
"""bc-mlp / bc-rnn at test size."""
TINY_VIDEO = {"embed": 16, "symbolic_hidden": 32, "rnn_hidden": 8, "unet_channels": [4, 8]}
"""video-rnn at test size."""
MODELS = {"bc-mlp": (BCMLPObserver, TINY), "bc-rnn": (BCRNNObserver, TINY), "video-rnn": (VideoRNNObserver, TINY_VIDEO)}
"""Each learned observer's class and its test-size options."""
