"""Agents for the agency suite, by name: ``optimal``, ``noisy``, ``random``, ``policy-net`` and the endpoint agent.

Every agent follows the gridworld agent protocol ``act(layout, state) -> action`` (an index into
:data:`bib.world.dynamics.ACTIONS`) and draws its randomness from its own seeded generator. The
goal is the layout's object ``G``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bib.agency.env import MOVES, optimal_set
from bib.errors import BibInputError
from bib.registry import Registry
from bib.tasks.agent_grids import GOAL
from bib.world.dynamics import AgentState
from bib.world.grid import Layout


class OptimalAgent:
    """The planner: uniform over pi*(s) (the optimal set from the backward search)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def act(self, layout: Layout, state: AgentState) -> int:
        """A uniformly drawn optimal move (LEFT if the goal is cut off)."""
        best = sorted(optimal_set(layout, state, layout.goal_cell(GOAL)))
        return best[int(self.rng.integers(len(best)))] if best else MOVES[0]


class NoisyAgent(OptimalAgent):
    """Epsilon-noisy planner: with probability ``epsilon`` a uniformly random move of the 4, else optimal."""

    def __init__(self, rng: np.random.Generator, epsilon: float = 0.2) -> None:
        if not 0.0 <= epsilon <= 1.0:
            raise BibInputError(f"--epsilon: must lie in [0, 1], got {epsilon}")
        super().__init__(rng)
        self.epsilon = epsilon

    def act(self, layout: Layout, state: AgentState) -> int:
        """A random move with probability epsilon, else an optimal one."""
        if self.rng.random() < self.epsilon:
            return MOVES[int(self.rng.integers(4))]
        return super().act(layout, state)


@dataclass(frozen=True)
class AgentSpec:
    """A picklable recipe for an agent (workers rebuild agents from it).

    Attributes:
        name: a name of :data:`AGENTS` (:data:`AGENT_NAMES` or ``endpoint``).
        epsilon: for ``noisy``.
        checkpoint: for ``policy-net`` (a file saved by :func:`bib.agency.policy_net.save`).
        temperature: sampling temperature of ``policy-net`` (0: greedy) and of the endpoint model.
        endpoint: chat-completions base URL, for ``endpoint``.
        model: model name sent to the endpoint.
        options: further endpoint client options (timeout, retries, concurrency, cache).
    """

    name: str
    epsilon: float = 0.2
    checkpoint: str | None = None
    temperature: float = 1.0
    endpoint: str | None = None
    model: str | None = None
    options: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        """How results name the agent."""
        if self.name == "endpoint":
            return f"endpoint:{self.model}"
        if self.name == "noisy":
            return f"noisy(eps={self.epsilon:g})"
        return self.name


Maker = Callable[[AgentSpec, np.random.Generator, list[np.random.Generator], str], list]
"""``maker(spec, rng, children, tag) -> agents``: one agent per child generator, or one shared batched agent."""

AGENTS: Registry[Maker] = Registry("agent")
"""Agent name -> maker (a :class:`bib.registry.Registry`); ``endpoint`` is chosen with ``--endpoint``."""


@AGENTS.register("optimal")
def _optimal(spec: AgentSpec, rng: np.random.Generator, children: list, tag: str) -> list:
    return [OptimalAgent(r) for r in children]


@AGENTS.register("noisy")
def _noisy(spec: AgentSpec, rng: np.random.Generator, children: list, tag: str) -> list:
    return [NoisyAgent(r, spec.epsilon) for r in children]


@AGENTS.register("random")
def _random(spec: AgentSpec, rng: np.random.Generator, children: list, tag: str) -> list:
    return [NoisyAgent(r, 1.0) for r in children]


@AGENTS.register("policy-net")
def _policy_net(spec: AgentSpec, rng: np.random.Generator, children: list, tag: str) -> list:
    from bib.agency.policy_net import PolicyNetAgent, load_cached

    return [PolicyNetAgent(load_cached(spec.checkpoint), rng, temperature=spec.temperature)] * len(children)


@AGENTS.register("endpoint")
def _endpoint(spec: AgentSpec, rng: np.random.Generator, children: list, tag: str) -> list:
    from bib.agency.text import TextGridAgent, shared_client

    client = shared_client(spec)
    return [TextGridAgent(client.complete, sample=f"{tag}/{i}") for i in range(len(children))]


AGENT_NAMES = tuple(n for n in AGENTS if n != "endpoint")
"""The local agents (``--agent`` choices): :data:`AGENTS` but ``endpoint``."""


def make_agents(spec: AgentSpec, n: int, rng: np.random.Generator, tag: str = "") -> list:
    """``n`` agents (one per rollout) built from ``spec``; batched agents are one shared object.

    Args:
        spec: the recipe.
        n: rollouts on one grid.
        rng: the grid's rollout stream; each agent gets an independent child generator.
        tag: a label of the grid, used by the endpoint agent's response cache.
    """
    children = rng.spawn(n)
    return AGENTS[spec.name](spec, rng, children, tag)


def check_spec(spec: AgentSpec) -> None:
    """Fail early (BibInputError) on a recipe that cannot work: unknown name, missing checkpoint or model."""
    AGENTS.lookup(spec.name)  # unknown: BibInputError listing the known names
    if spec.name == "policy-net" and spec.checkpoint and not Path(spec.checkpoint).is_file():
        raise BibInputError(f"--checkpoint: no such file {spec.checkpoint}")
    if spec.name == "endpoint" and not spec.model:
        raise BibInputError("--model: required with --endpoint")
    if spec.name == "endpoint" and not str(spec.endpoint).startswith(("http://", "https://")):
        raise BibInputError(f"--endpoint: expected an http(s) URL, got {spec.endpoint!r}")
