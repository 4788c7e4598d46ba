"""Trial timing of a looking-time study: when a trial ends and which looks count (one declaration).

A set's spec may carry these in a ``[study]`` table (:class:`bib.stimuli.spec.StimulusSpec`);
``bib experiment`` takes them from there and from its options, writes them into the study, and
the study's JavaScript applies the same rule as :func:`looking_time` here.

The rule (docs/experiment.md, "The trial-end rule"):

* a trial starts at the experimenter's first look-key press after the attention-getter;
* looking is measured from ``m``: the trial start, or with ``measure_from = "outcome"`` the
  outcome frame of the trial's video (the agent at its goal; ``bib generate`` records it per
  trial in ``orders.csv``); only the part of each look after ``m`` counts;
* look-aways count from ``arm = max(m, the video's end if play_through)``: a look-away that began
  earlier counts from ``arm``;
* once the infant has looked for ``min_on`` s in total (completed looks, measured from ``m``), a
  look-away of ``lookaway`` s in a row ends the trial, at the look-away's (counted) start plus
  ``lookaway``, but never before ``min_trial`` s (then it ends at ``min_trial``, the infant still
  looking away); a look back exactly at the end is too late;
* otherwise the trial ends at ``max_trial`` s (a look in progress is cut there).

The end reason says which rule ended the trial: ``lookaway``, ``min_trial``, ``max_trial``, or
``ended`` (the experimenter ended the session).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import ClassVar

from bib.errors import BibInputError

#: Where looking is measured from.
MEASURE_FROM: tuple[str, ...] = ("outcome", "start")
#: Why a trial ended (the trials CSV's ``end_reason``).
END_REASONS: tuple[str, ...] = ("lookaway", "min_trial", "max_trial", "ended")


@dataclass(frozen=True)
class Criteria:
    """Trial timing (seconds). Defaults from the VOE literature (docs/experiment.md cites them):
    ManyBabies 2's VOE analysis (look-away criterion 2 s, 2 s of cumulative looking required,
    looking counted after the outcome) and PyHab's defaults (maxOff 2 s, maxDur 60 s), with the
    event played through before a look-away can end a trial (PyHab's playThrough).

    Attributes:
        lookaway: look-away in a row that ends a trial (PyHab maxOff).
        max_trial: maximum trial length from the trial start (PyHab maxDur).
        min_on: looking (from ``measure_from``) a trial needs before a look-away can end it (PyHab minOn).
        min_trial: minimum trial length from the trial start.
        play_through: a look-away counts only after the trial's video has played to its end.
        measure_from: ``outcome`` (the outcome frame of the video) or ``start`` (the trial start).
    """

    lookaway: float = 2.0
    max_trial: float = 60.0
    min_on: float = 2.0
    min_trial: float = 0.0
    play_through: bool = True
    measure_from: str = "outcome"

    LIMITS: ClassVar[dict[str, tuple[float, float, bool]]] = {
        "lookaway": (0.1, 60.0, True), "max_trial": (1.0, 600.0, True), "min_on": (0.0, 600.0, True),
        "min_trial": (0.0, 600.0, True),
    }
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"measure_from": MEASURE_FROM}

    def __post_init__(self) -> None:
        for name, (lo, hi, _) in self.LIMITS.items():
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and lo <= v <= hi):
                raise BibInputError(f"trial timing: {name} = {v!r} is outside [{lo:g}, {hi:g}] s")
        if self.measure_from not in MEASURE_FROM:
            raise BibInputError(f"trial timing: measure_from = {self.measure_from!r}: expected {' or '.join(MEASURE_FROM)}")
        if self.min_trial >= self.max_trial:
            raise BibInputError(f"trial timing: min_trial ({self.min_trial:g} s) must be below max_trial ({self.max_trial:g} s)")

    def digest(self) -> str:
        """12 hex digits naming these criteria (sha256 of their canonical JSON): every trials row a
        study saves carries it (``criteria_hash``), so sessions run under other criteria never join."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]

    @property
    def needs_video_timing(self) -> bool:
        """Whether the rule reads the trial's video length or outcome time."""
        return self.play_through or self.measure_from == "outcome"

    def windows(self, video_s: float, outcome_s: float) -> tuple[float, float]:
        """``(m, arm)``: where looking is measured from, and from when a look-away counts."""
        m = outcome_s if self.measure_from == "outcome" else 0.0
        return m, max(m, video_s if self.play_through else 0.0)


def looking_time(events: Sequence[tuple[float, str]], criteria: Criteria, *, video_s: float = 0.0,
                 outcome_s: float = 0.0) -> tuple[float, float, str]:
    """Apply the trial-end rule (module doc) to a trial's look events.

    Args:
        events: ``(t, "on" | "off")`` in seconds from trial start, in time order; the trial starts
            with a look (``(0, "on")``); an extra ``(t, "end")`` marks the experimenter ending it.
        video_s: the trial video's length (s); used with ``play_through``.
        outcome_s: the outcome frame's time in the video (s); used with ``measure_from = "outcome"``.

    Returns:
        ``(looking time, trial duration, end reason)`` (:data:`END_REASONS`); a trial whose events
        stop early runs on with the last state.
    """
    c = criteria
    m, arm = c.windows(video_s, outcome_s)
    looking, on_since, off_since, total = True, 0.0, None, 0.0

    def seen(a: float, b: float) -> float:
        return max(0.0, b - max(a, m))

    for t, kind in [*events, (math.inf, "eof")]:
        # did the trial end before this event?
        if not looking and off_since is not None and total >= c.min_on:
            start = max(off_since, arm)
            end = max(start + c.lookaway, c.min_trial)
            if end <= min(t, c.max_trial):
                return total, end, "lookaway" if start + c.lookaway >= c.min_trial else "min_trial"
        if t >= c.max_trial:
            if looking:
                total += seen(on_since, c.max_trial)
            return total, c.max_trial, "max_trial"
        if kind == "end":
            if looking:
                total += seen(on_since, t)
            return total, t, "ended"
        if kind == "on" and not looking:
            looking, on_since = True, t
        elif kind == "off" and looking:
            looking, off_since = False, t
            total += seen(on_since, t)
    raise AssertionError("unreachable")  # pragma: no cover
