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
#: How the habituation criterion is set (PyHab's setCritType First, Peak, Max): from the first
#: ``hab_window`` trials, the largest sum of ``hab_window`` consecutive trials so far, or the sum of
#: the ``hab_window`` longest trials so far.
HAB_BASES: tuple[str, ...] = ("first", "sliding", "max")
#: Why habituation ended (``hab_end``): the criterion was met, or the maximum number of trials ran.
HAB_ENDS: tuple[str, ...] = ("criterion", "max_trials")


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
        habituation: infant-controlled familiarization: each pair's familiarization videos play (in
            turn, again from the first) until :func:`habituation_end` says so, then its test trials.
        hab_window: trials in the criterion's and the check's windows (PyHab setCritWindow, metCritWindow).
        hab_ratio: habituated when the last ``hab_window`` trials' looking is below this share of
            the criterion window's (PyHab 1 / setCritDivisor: 0.5 for its divisor 2).
        hab_basis: how the criterion window is chosen (:data:`HAB_BASES`; PyHab setCritType).
        hab_max_trials: habituation ends after this many trials at the latest (PyHab maxHabTrials).
        hab_recovery: after a pair's test trials, one recovery trial with a video the infant has not
            habituated to (the next block's first familiarization video).
    """

    lookaway: float = 2.0
    max_trial: float = 60.0
    min_on: float = 2.0
    min_trial: float = 0.0
    play_through: bool = True
    measure_from: str = "outcome"
    habituation: bool = False
    hab_window: int = 3
    hab_ratio: float = 0.5
    hab_basis: str = "first"
    hab_max_trials: int = 14
    hab_recovery: bool = False

    LIMITS: ClassVar[dict[str, tuple[float, float, bool]]] = {
        "lookaway": (0.1, 60.0, True), "max_trial": (1.0, 600.0, True), "min_on": (0.0, 600.0, True),
        "min_trial": (0.0, 600.0, True), "hab_window": (1, 20, True), "hab_ratio": (0.05, 0.95, True),
        "hab_max_trials": (2, 100, True),
    }
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"measure_from": MEASURE_FROM, "hab_basis": HAB_BASES}

    def __post_init__(self) -> None:
        for name, (lo, hi, _) in self.LIMITS.items():
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and lo <= v <= hi):
                unit = "" if name.startswith("hab_") else " s"  # habituation: trials and a ratio
                raise BibInputError(f"trial timing: {name} = {v!r} is outside [{lo:g}, {hi:g}]{unit}")
        if self.measure_from not in MEASURE_FROM:
            raise BibInputError(f"trial timing: measure_from = {self.measure_from!r}: expected {' or '.join(MEASURE_FROM)}")
        if self.min_trial >= self.max_trial:
            raise BibInputError(f"trial timing: min_trial ({self.min_trial:g} s) must be below max_trial ({self.max_trial:g} s)")
        if self.hab_basis not in HAB_BASES:
            raise BibInputError(f"habituation: hab_basis = {self.hab_basis!r}: expected {', '.join(HAB_BASES)}")
        for name in ("hab_window", "hab_max_trials"):
            if int(getattr(self, name)) != getattr(self, name):
                raise BibInputError(f"habituation: {name} = {getattr(self, name)!r} is not a whole number of trials")
        if self.hab_max_trials < 2 * self.hab_window:
            raise BibInputError(f"habituation: hab_max_trials ({self.hab_max_trials}) must be at least twice hab_window "
                                f"({self.hab_window}): the criterion and the check each need a window")

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


def habituation_end(looks: Sequence[float], criteria: Criteria) -> tuple[int | None, str, float]:
    """PyHab's habituation check (``PyHabClass.checkStop``, moving window) over a block's
    habituation trials' looking times, in order.

    After trial ``n`` (1-based): at ``n = W`` (``hab_window``) the criterion is set to ``hab_ratio``
    times the first ``W`` trials' looking; with ``sliding`` it then rises to ``hab_ratio`` times any
    later window of ``W`` consecutive trials that exceeds it, with ``max`` (from ``n > W``) to
    ``hab_ratio`` times the ``W`` longest trials so far. At ``n = hab_max_trials`` habituation ends.
    From ``n >= 2 W``, and at least ``W`` trials after the trials that set the criterion, it ends
    when the last ``W`` trials' looking is below the criterion.

    Returns:
        ``(n, "criterion" | "max_trials", criterion)`` for the trial ``n`` that ended habituation, or
        ``(None, "", criterion)`` while it has not ended; ``criterion`` in seconds (0 before it is set).
    """
    w, ratio = criteria.hab_window, criteria.hab_ratio
    crit, set_when = 0.0, -1
    for n in range(1, len(looks) + 1):
        seen = list(looks[:n])
        if n == w:
            crit, set_when = sum(seen) * ratio, n
        elif criteria.hab_basis == "sliding" and n > w:
            window = sum(seen[n - w:]) * ratio
            if window > crit:
                crit, set_when = window, n
        elif criteria.hab_basis == "max" and n > w:
            top = sorted(seen)[-w:]
            window = sum(top) * ratio
            if window > crit:
                crit = window
                set_when = max(n - seen[::-1].index(v) for v in top)  # the last trial among those used
        if n == criteria.hab_max_trials:
            return n, HAB_ENDS[1], crit
        if n >= 2 * w and set_when > -1 and n >= set_when + w and sum(seen[n - w:]) < crit:
            return n, HAB_ENDS[0], crit
    return None, "", crit


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
