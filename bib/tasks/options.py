"""Generation options of the controlled set: the stimulus agent's rationality, twins, variants and graded difficulty.

A stimulus-set spec turns into one :class:`TaskOptions` per task (``bib.stimuli.spec``); the
registry's :func:`bib.tasks.registry.make_unit` hands it to the generator in
:class:`bib.tasks.registry.UnitInfo`. The default :data:`LEGACY` asks for nothing new: generators
then run their original code, so a spec without these options gives the sets of before them byte
for byte (``tests/test_legacy_identity.py``).

Units and groups: with options, a unit is a *group* of consecutive pairs (pair indices
``index .. index + group_size - 1``): a pair and, with ``twins``, its label-flipping twin. Groups
cycle through the requested ``variants`` and difficulty bins in a fixed order (stratified, not
drawn), so any run of groups is balanced to within one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

POLICIES = ("deterministic", "boltzmann")
"""Stimulus-agent policies: the noise-free planner, or a Boltzmann policy over the key/lock Q values."""


@dataclass(frozen=True)
class AgentModel:
    """How the stimulus agent acts.

    Attributes:
        policy: ``deterministic`` (an optimal path, ties broken at random) or ``boltzmann`` (each
            move drawn with probability proportional to ``exp(beta * Q)``, Q = minus the move's
            cost and the cost-to-go after it).
        beta: with ``boltzmann``, the range ``(low, high)`` the rationality of each unit's agent is
            drawn from, log-uniformly (cells^-1: a move costing one cell more is ``e^beta`` times
            less likely).
        max_excess: with ``boltzmann``, the most a path may cost over an optimal one, in cells; a
            draw that costs more is redrawn.
    """

    policy: str = "deterministic"
    beta: tuple[float, float] | None = None
    max_excess: float = 3.0

    @property
    def noisy(self) -> bool:
        """True for the Boltzmann policy."""
        return self.policy == "boltzmann"

    def draw_beta(self, rng: np.random.Generator) -> float | None:
        """A unit's rationality, log-uniform in ``beta`` (None for the deterministic policy)."""
        if not self.noisy or self.beta is None:
            return None
        lo, hi = self.beta
        if lo == hi:
            return float(lo)
        return round(float(math.exp(rng.uniform(math.log(lo), math.log(hi)))), 4)


@dataclass(frozen=True)
class Controls:
    """What a condition's generator supports beyond BIB's design (registered in its :class:`TaskSpec`).

    Attributes:
        twins: it can emit label-flipping twins (the same two test trials after a familiarization
            under which their labels swap).
        variants: the variant names it can generate (``""`` is BIB's own design).
        graded: its pairs have a graded difficulty that a spec may ask for in bins.
        boltzmann: its generator runs the Boltzmann stimulus agent (and records excess costs).
        untwinned: variants that have no twin (refused with ``twins``).
    """

    twins: bool = False
    variants: tuple[str, ...] = ("",)
    graded: bool = False
    boltzmann: bool = False
    untwinned: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskOptions:
    """Per-task generation options (see the module docstring).

    Attributes:
        agent: the stimulus agent's policy.
        twins: emit every pair with its twin (groups of two pairs).
        variants: the variants groups cycle through (repeat a name to weight it).
        difficulty: bin edges (increasing, > 0); groups cycle through the bins
            ``[edges[i], edges[i + 1])`` and each pair's difficulty falls in its group's bin.
    """

    agent: AgentModel = field(default_factory=AgentModel)
    twins: bool = False
    variants: tuple[str, ...] = ("",)
    difficulty: tuple[float, ...] | None = None

    @property
    def legacy(self) -> bool:
        """True when nothing beyond BIB's design is asked for (generators run their original code)."""
        return self == LEGACY

    @property
    def group_size(self) -> int:
        """Pairs per unit: 2 with twins, else 1."""
        return 2 if self.twins else 1

    def variant(self, group: int) -> str:
        """The variant of group ``group``."""
        return self.variants[group % len(self.variants)]

    def bin(self, group: int) -> tuple[float, float] | None:
        """The difficulty bin ``(low, high)`` of group ``group`` (None when not graded)."""
        if self.difficulty is None:
            return None
        k = (group // len(self.variants)) % (len(self.difficulty) - 1)
        return self.difficulty[k], self.difficulty[k + 1]


LEGACY = TaskOptions()
"""No options: BIB's design and the noise-free planner, as before the controlled set."""


def in_bin(value: float, bin_: tuple[float, float] | None) -> bool:
    """Whether ``value`` lies in ``[low, high)`` (always true without a bin)."""
    return bin_ is None or bin_[0] - 1e-9 <= value < bin_[1] - 1e-9
