"""The embedding-spread diagnostic of a learned observer's state encoder (issue 42 item 3): how many distinct states
map to distinct vectors, how many units vary, and how far apart the vectors are relative to their norm. A frames
bc-mlp collapsed (2,695 test states onto 5 vectors, no unit varying) while its validation loss still improved, so
nothing warned; ``bib train`` now records this in ``checkpoint.log.json`` (``embedding``) and warns below
:data:`SPREAD_MIN`."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from bib.episode import Episode
from bib.observers.encoders import collate

if TYPE_CHECKING:
    from bib.observers.learned import LearnedObserver

SPREAD_MIN = 0.9
"""Distinct vectors per distinct state below which ``bib train`` warns that the encoder collapses (issue 42's target
for a frames bc-mlp: at least 90% of test states distinct)."""
SPREAD_EPISODES = 64
"""Validation episodes (their states, familiarization and test) the diagnostic encodes."""
SPREAD_PAIRS = 500
"""States, at most, whose pairwise distances are averaged (the first ones, in order: deterministic)."""
DECIMALS = 5
"""Two embeddings are the same vector when they agree to this many decimals."""


def embedding_spread(observer: LearnedObserver, episodes: Sequence[Episode], batch_size: int = 8) -> dict[str, Any]:
    """The spread of ``observer.net.encoder``'s embeddings over the distinct states of ``episodes``.

    Returns:
        ``states`` (distinct input states), ``distinct_vectors`` (distinct embeddings of them, to
        :data:`DECIMALS` decimals), ``distinct_fraction`` (their ratio), ``units`` (embedding size),
        ``varying_units`` (units whose value differs between states), ``distance_to_norm`` (the mean pairwise
        Euclidean distance of up to :data:`SPREAD_PAIRS` embeddings over their mean norm; 0 when all are zero).
    """
    encoder = observer.net.encoder
    was_training = observer.net.training
    observer.net.eval()
    seen: set[bytes] = set()
    rows: list[np.ndarray] = []
    with torch.inference_mode():
        for start in range(0, len(episodes), batch_size):
            batch = collate([observer.encode(ep) for ep in episodes[start : start + batch_size]])
            inputs = batch.dense(torch.arange(batch.n_states)).numpy()  # on the CPU, before the batch moves
            if observer.device != "cpu":
                batch = batch.to(torch.device(observer.device))
            emb = encoder(batch).double().cpu().numpy()
            for k in range(batch.n_states):
                key = hashlib.sha256(np.ascontiguousarray(inputs[k]).tobytes()).digest()
                if key not in seen:
                    seen.add(key)
                    rows.append(emb[k])
    observer.net.train(was_training)
    return spread_of(np.array(rows))


def spread_of(emb: np.ndarray) -> dict[str, Any]:
    """:func:`embedding_spread`'s numbers for embeddings ``emb`` ``[states, units]``, one row per distinct state."""
    n, units = emb.shape if emb.ndim == 2 else (0, 0)
    if n == 0:
        return {"states": 0, "distinct_vectors": 0, "distinct_fraction": None, "units": units, "varying_units": 0,
                "distance_to_norm": None}
    distinct = len(np.unique(np.round(emb, DECIMALS), axis=0))
    varying = int((np.ptp(emb, axis=0) > 10.0**-DECIMALS).sum())
    sample = emb[:SPREAD_PAIRS]
    diff = np.sqrt(((sample[:, None, :] - sample[None, :, :]) ** 2).sum(-1))
    m = len(sample)
    mean_distance = float(diff.sum() / (m * (m - 1))) if m > 1 else 0.0
    mean_norm = float(np.linalg.norm(sample, axis=1).mean())
    return {"states": int(n), "distinct_vectors": int(distinct), "distinct_fraction": round(distinct / n, 4),
            "units": int(units), "varying_units": varying,
            "distance_to_norm": round(mean_distance / mean_norm, 4) if mean_norm > 0 else 0.0}


def collapse_warning(spread: dict[str, Any]) -> str | None:
    """The warning ``bib train`` gives when fewer than :data:`SPREAD_MIN` of the distinct states get distinct
    vectors; None otherwise."""
    fraction = spread.get("distinct_fraction")
    if fraction is None or fraction >= SPREAD_MIN:
        return None
    return (f"the state encoder collapses: {spread['states']} distinct validation states map to "
            f"{spread['distinct_vectors']} distinct vectors ({100 * fraction:.1f}%, below {100 * SPREAD_MIN:.0f}%); "
            f"{spread['varying_units']} of {spread['units']} units vary")
