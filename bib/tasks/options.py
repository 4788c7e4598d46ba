"""Generation options of the controlled set: the stimulus agent's rationality, twins, variants and graded difficulty.

A stimulus-set spec turns into one :class:`TaskOptions` per task (``bib.stimuli.spec``); the
registry's :func:`bib.tasks.registry.make_unit` hands it to the generator in
:class:`bib.tasks.registry.UnitInfo`. The default :data:`LEGACY` asks for nothing new: generators
then run their original code, so a spec without these options gives the sets of before them byte
for byte (``tests/test_legacy_identity.py``).

Units and groups: with options, a unit is a *group* of consecutive pairs (pair indices
``index .. index + group_size - 1``): a pair and, with ``twins``, its label-flipping twin. Each
group takes a design *slot*: slots cycle through the requested ``variants``, the difficulty bins
and an order bit (which pair of a group comes first; the nearer-target stratum of untwinned
instrumental pairs), and the groups of each block of :attr:`TaskOptions.cycle` consecutive groups
take that block's slots in an order drawn from the set's seed
(:func:`bib.tasks.registry.design_slot`). So every block is exactly balanced, and no design role
(twin, catch, variant, bin) follows from a pair's index or order.
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

    @property
    def n_bins(self) -> int:
        """Difficulty bins (1 when not graded)."""
        return 1 if self.difficulty is None else len(self.difficulty) - 1

    @property
    def cycle(self) -> int:
        """Design slots per block: every (variant, bin) pair in both orders (see the module docstring)."""
        return 2 * len(self.variants) * self.n_bins

    def variant(self, slot: int) -> str:
        """The variant of design slot ``slot``."""
        return self.variants[slot % len(self.variants)]

    def bin(self, slot: int) -> tuple[float, float] | None:
        """The difficulty bin ``(low, high)`` of design slot ``slot`` (None when not graded)."""
        if self.difficulty is None:
            return None
        k = (slot // len(self.variants)) % self.n_bins
        return self.difficulty[k], self.difficulty[k + 1]

    def flipped(self, slot: int) -> bool:
        """The order bit of design slot ``slot``: True on half the slots of every (variant, bin)."""
        return (slot // (len(self.variants) * self.n_bins)) % 2 == 1


LEGACY = TaskOptions()
"""No options: BIB's design and the noise-free planner, as before the controlled set."""


def in_bin(value: float, bin_: tuple[float, float] | None) -> bool:
    """Whether ``value`` lies in ``[low, high)`` (always true without a bin)."""
    return bin_ is None or bin_[0] - 1e-9 <= value < bin_[1] - 1e-9
