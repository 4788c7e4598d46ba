"""Agents for ``bib profile``: the built-in gridworld agents by name, user classes as ``package.module:Class``, the endpoint agent.

Every agent follows the gridworld agent protocol ``act(layout, state) -> action`` (an index into
:data:`bib.world.dynamics.ACTIONS`; ``STAY`` ends a trial) and is built for a *preference*, the
goals it pursues (``("A", "B")`` in the BIB tasks: the first of them that is present and
reachable; ``("G",)`` on the agency grids), and a seeded ``numpy.random.Generator``.

Built-ins (:data:`AGENTS`, extended with :func:`register_agent`):

- ``rational``: the stimulus planner (:class:`bib.tasks.agents.RationalAgent`, beta = infinity);
  ``rational-b1`` / ``-b4`` / ``-b16``: the Boltzmann stimulus agent (:class:`bib.tasks.agents.BoltzmannAgent`)
  at those betas (per unit of path cost);
- ``instrumental``: the rational agent after object ``A`` only (key, lock, then the object);
- ``irrational``: plans as if a barrier stood on the straight line between its home and its goal
  (BIB's irrational agent, which takes a detour no obstacle requires);
- ``random``: a uniformly random legal action (moves and stay; staying ends a trial);
- ``policy-net``: the agency suite's CNN (:mod:`bib.agency.policy_net`), shown its goal as ``G``,
  sampling among the legal moves;
- ``learner``: a reward learner (:class:`bib.reflection.gridworld.GridLearner`) that falls back on
  the rational agent.

A user class ``package.module:Class`` is built with whichever of ``goals=``, ``rng=`` and
``seed=`` its constructor takes. The endpoint agent (``endpoint``, with a URL and a model) is
the agency suite's text agent (:class:`bib.agency.text.TextGridAgent`) through its chat client.
"""

from __future__ import annotations

import inspect
import math
import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np

from bib.errors import BibInputError
from bib.reflection.gridworld import LearnerAgent, goal_of
from bib.reflection.policy import IllegalActionError
from bib.registry import Registry
from bib.tasks.agents import BoltzmannAgent, RationalAgent
from bib.world.dynamics import ACTION_NAMES, STAY, AgentState, legal_actions, move_legal
from bib.world.grid import Cell, Layout
from bib.world.keylock import optimal_cost

BIB_GOALS = ("A", "B")
"""The preference of the BIB stimulus agent: object A, else B."""
AGENCY_GOALS = ("G",)
"""The goal of the agency grids."""


# ---------------------------------------------------------------- built-in agents


class Planner(RationalAgent):
    """:class:`bib.tasks.agents.RationalAgent` answering the battery's ``greedy`` option (it is greedy already)."""

    def with_options(self, greedy: bool = False) -> Planner:
        """Itself: its only randomness is the tie-break between optimal moves."""
        return self


class Boltzmann(BoltzmannAgent):
    """:class:`bib.tasks.agents.BoltzmannAgent` (the controlled set's noisy stimulus agent), whose greedy self
    (``with_options(greedy=True)``, what extended environments ask for) is the planner."""

    def with_options(self, greedy: bool = False) -> RationalAgent:
        """``greedy=True``: the planner with the same preference and generator."""
        return Planner(self.preference, self.rng) if greedy else self


def phantom_barrier(layout: Layout, goal: Cell) -> frozenset[Cell]:
    """The cells of the straight line from the agent's home to ``goal`` (both excluded) that an
    imaginary barrier may occupy: free cells holding no object, key or lock."""
    (x0, y0), (x1, y1) = layout.agent.home, goal
    n = max(abs(x1 - x0), abs(y1 - y0))
    line = {(round(x0 + (x1 - x0) * t / n), round(y0 + (y1 - y0) * t / n)) for t in range(1, n)} if n > 1 else set()
    taken = {o.cell for o in layout.objects} | {layout.key, layout.lock, layout.agent.home, goal}
    return frozenset(c for c in line if layout.is_free(c) and c not in taken)


@lru_cache(maxsize=2048)
def _phantom_layout(layout: Layout, goal: Cell) -> Layout | None:
    cells = phantom_barrier(layout, goal)
    if not cells:
        return None
    phantom = replace(layout, walls=layout.walls | cells)
    home = AgentState(layout.agent.home)
    return phantom if math.isfinite(optimal_cost(phantom, goal, home)) else None


class DetourAgent(Planner):
    """Goes to its goal as if a barrier stood on the straight line from its home to the goal.

    This is BIB's irrational agent made general: it takes the curved path that an obstacle would
    require when no obstacle is there. Where the imaginary barrier would cut the goal off, or the
    agent stands on it, it plans in the real layout.
    """

    def act(self, layout: Layout, state: AgentState) -> int:
        """An optimal move of the layout with the imaginary barrier."""
        g = self.goal(layout, state)
        if g is None:
            return STAY
        phantom = _phantom_layout(layout, layout.goal_cell(g))
        if phantom is None or state.cell in phantom.walls:
            return super().act(layout, state)
        if not math.isfinite(optimal_cost(phantom, layout.goal_cell(g), state)):
            return super().act(layout, state)
        return super().act(phantom, state)


class RandomMover:
    """A uniformly random legal action; ``STAY`` is one of them (it ends a trial)."""

    def __init__(self, goals: Sequence[str] = (), rng: np.random.Generator | None = None) -> None:
        self.rng = rng if rng is not None else np.random.default_rng(0)

    def act(self, layout: Layout, state: AgentState) -> int:
        """One of the legal actions (moves and stay), uniformly."""
        actions = legal_actions(layout, state.cell, state.unlocked)
        return actions[int(self.rng.integers(len(actions)))]


@lru_cache(maxsize=4096)
def goal_view(layout: Layout, goal: str, unlocked: bool) -> Layout:
    """The layout as a ``G``-seeking agent (policy network, text agent) is shown it: object ``goal``
    renamed ``G`` (another ``G`` becomes ``G'``), and barriers drawn as walls while the lock is closed."""
    objects = tuple(
        replace(o, id="G") if o.id == goal else (replace(o, id="G'") if o.id == "G" else o) for o in layout.objects
    )
    walls = layout.walls if unlocked else layout.walls | layout.barriers
    return replace(layout, objects=objects, walls=walls, barriers=frozenset() if not unlocked else layout.barriers)


class PolicyNetGoalAgent:
    """The agency suite's policy network pursuing its preference: shown its goal as ``G``, it samples among the
    legal moves (its 4 moves; temperature 0 takes the most likely) and stays on its goal."""

    def __init__(self, goals: Sequence[str], rng: np.random.Generator, temperature: float = 1.0,
                 checkpoint: str | None = None) -> None:
        from bib.agency.policy_net import PolicyNetAgent, load_cached

        self.goals = tuple(goals)
        self.rng = rng
        self.temperature = float(temperature)
        self.checkpoint = checkpoint
        self.net = PolicyNetAgent(load_cached(checkpoint), rng, temperature=temperature)

    def act(self, layout: Layout, state: AgentState) -> int:
        """A legal move drawn from the network's policy (``STAY`` on the goal or with no goal)."""
        from bib.agency.env import MOVES

        g = goal_of(layout, state, self.goals)
        if g is None or state.cell == layout.goal_cell(g):
            return STAY
        p = self.net.probabilities(goal_view(layout, g, state.unlocked), [state])[0]
        legal = np.array([move_legal(layout, state.cell, a, state.unlocked) for a in MOVES])
        if not legal.any():
            return STAY
        if self.temperature <= 0:
            return MOVES[int(np.argmax(np.where(legal, p, -1.0)))]
        w = np.where(legal, p ** (1.0 / self.temperature), 0.0)
        if w.sum() <= 0:
            w = legal.astype(float)
        return MOVES[int(self.rng.choice(len(MOVES), p=w / w.sum()))]

    def with_options(self, greedy: bool = False) -> PolicyNetGoalAgent:
        """``greedy=True``: the same network at temperature 0."""
        if not greedy:
            return self
        return PolicyNetGoalAgent(self.goals, self.rng, 0.0, self.checkpoint)


ENDPOINT_FAILURES = ("timeout", "connection", "bad-response")
"""Invalid-answer reasons that mean the endpoint itself failed (plus every ``http-<code>``)."""


class EndpointGoalAgent:
    """The agency suite's text agent (:class:`bib.agency.text.TextGridAgent`) pursuing its preference.

    It is shown its goal as ``G`` and barriers as walls; an answer that is no legal move is asked
    again (a new sample) up to ``retries`` times. An endpoint that fails (timeout, refused
    connection, HTTP error, a body that is no chat completion) raises BibInputError; a model that
    never answers a legal move raises :class:`~bib.reflection.IllegalActionError` naming the state.
    """

    def __init__(self, goals: Sequence[str], complete: Callable[..., str], sample: str, url: str, model: str,
                 retries: int = 2) -> None:
        from bib.agency.text import TextGridAgent

        self.goals = tuple(goals)
        self.url = url
        self.model = model
        self.retries = retries
        self.text = TextGridAgent(complete, sample=sample, retries=retries)

    def act(self, layout: Layout, state: AgentState) -> int:
        """The model's move (``STAY`` on the goal or with no goal)."""
        from bib.agency.env import INVALID

        g = goal_of(layout, state, self.goals)
        if g is None or state.cell == layout.goal_cell(g):
            return STAY
        view = goal_view(layout, g, state.unlocked)
        last = ""
        for _ in range(1 + self.retries):
            action = self.text.act(view, state)
            if action == INVALID:
                last = self.text.last_reason
                if last in ENDPOINT_FAILURES or last.startswith("http-"):
                    raise BibInputError(f"endpoint {self.url} (model {self.model}): {last}")
                continue
            if move_legal(layout, state.cell, action, state.unlocked):
                return action
            last = f"illegal move {ACTION_NAMES[action]}"
        raise IllegalActionError(f"endpoint model {self.model!r} gave no legal move at cell {list(state.cell)} "
                                 f"(has_key={state.has_key}, unlocked={state.unlocked}); last answer: {last}")


# ---------------------------------------------------------------- registry

Factory = Callable[[tuple[str, ...], np.random.Generator], Any]
"""``factory(goals, rng) -> agent`` with ``act(layout, state)``."""


@dataclass(frozen=True)
class AgentEntry:
    """A registered agent: its name, ``factory(goals, rng)`` and a one-line description."""

    name: str
    factory: Factory
    description: str = ""


def _user_entry(target: str, cls: Any) -> AgentEntry:
    """The entry of a user's ``package.module:Class`` agent (its ``act`` is checked now, its
    constructor when an agent is made)."""
    if not callable(getattr(cls, "act", None)):
        raise BibInputError(f"agent {target!r}: {target.partition(':')[2]} does not implement act(layout, state)")

    def factory(goals: tuple[str, ...], rng: np.random.Generator) -> Any:
        return _build_user_agent(target, cls, goals, rng)

    return AgentEntry(target, factory, "a user agent class")


AGENTS: Registry[AgentEntry] = Registry("agent", user=_user_entry)
"""Agent name -> :class:`AgentEntry` (a :class:`bib.registry.Registry`; ``package.module:Class`` names
are user agents)."""


def register_agent(name: str, factory: Factory, description: str = "") -> AgentEntry:
    """Register a gridworld agent under ``name`` (a thin alias of ``AGENTS.register``; names are unique)."""
    return AGENTS.register(name, AgentEntry(name, factory, description))


def _boltzmann(beta: float) -> Factory:
    def make(goals: tuple[str, ...], rng: np.random.Generator) -> Boltzmann:
        return Boltzmann(goals, beta, rng)

    return make


register_agent("rational", lambda goals, rng: Planner(goals, rng),
               "the stimulus planner: an optimal path to its preferred reachable goal")
for _beta in (1, 4, 16):
    register_agent(f"rational-b{_beta}", _boltzmann(float(_beta)),
                   f"Boltzmann over the planner's Q-values at beta = {_beta} per unit of path cost")
register_agent("instrumental", lambda goals, rng: Planner(goals[:1], rng),
               "the rational agent after its first goal only (key, lock, then the object)")
register_agent("irrational", lambda goals, rng: DetourAgent(goals, rng),
               "plans as if a barrier stood between its home and its goal (a detour nothing requires)")
register_agent("random", lambda goals, rng: RandomMover(goals, rng),
               "a uniformly random legal action (staying ends a trial)")
register_agent("policy-net", lambda goals, rng: PolicyNetGoalAgent(goals, rng),
               "the agency suite's CNN, shown its goal as G, sampling among legal moves")
register_agent("learner", lambda goals, rng: LearnerAgent(Planner(goals, rng), int(rng.integers(2**31))),
               "a reward learner (NaiveLearner over legal moves) falling back on the rational agent")

BUILTIN = tuple(AGENTS)
"""The built-in agent names, in registration order."""


# ---------------------------------------------------------------- specs


@dataclass(frozen=True)
class AgentSpec:
    """A picklable recipe for a profiled agent (workers rebuild agents from it).

    Attributes:
        name: a registered name, ``package.module:Class``, or ``endpoint``.
        endpoint: chat-completions base URL (``endpoint``).
        model: model name sent to the endpoint.
        options: endpoint client options (timeout, retries, concurrency, cache_dir).
    """

    name: str
    endpoint: str | None = None
    model: str | None = None
    options: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        """How results name the agent."""
        return f"endpoint:{self.model}" if self.name == "endpoint" else self.name

    @property
    def slug(self) -> str:
        """The label as a file name."""
        return re.sub(r"[^A-Za-z0-9._-]+", "-", self.label).strip("-") or "agent"

    def make(self, goals: Sequence[str], rng: np.random.Generator, tag: str = "") -> Any:
        """A fresh agent pursuing ``goals`` with randomness from ``rng`` (``tag`` labels endpoint samples)."""
        goals = tuple(goals)
        if self.name == "endpoint":
            from bib.agency.endpoint import client_for

            client = client_for(self.endpoint, self.model, **self.options)
            retries = int(self.options.get("retries", 2))
            return EndpointGoalAgent(goals, client.complete, tag, str(self.endpoint), str(self.model), retries)
        return AGENTS[self.name].factory(goals, rng)


def _build_user_agent(target: str, cls: Any, goals: tuple[str, ...], rng: np.random.Generator) -> Any:
    kwargs: dict[str, Any] = {}
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}
    offered = {"goals": goals, "rng": rng, "seed": int(rng.integers(2**31))}
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    for name, value in offered.items():
        if name in params or var_kw:
            kwargs[name] = value
    try:
        agent = cls(**kwargs)
    except Exception as exc:  # noqa: BLE001 - the user's constructor failing is bad input
        raise BibInputError(f"agent {target!r}: constructing it failed ({type(exc).__name__}: {exc})") from None
    if not callable(getattr(agent, "act", None)):
        raise BibInputError(f"agent {target!r}: the instance does not implement act(layout, state)")
    return agent


def check_spec(spec: AgentSpec) -> None:
    """Fail early (BibInputError, one line) on a recipe that cannot work: unknown name, a class that cannot be
    imported, built or lacks ``act``, an endpoint without a model or URL, or an endpoint that does not answer."""
    if spec.name == "endpoint":
        if not spec.model:
            raise BibInputError("--model: required with --endpoint")
        if not str(spec.endpoint).startswith(("http://", "https://")):
            raise BibInputError(f"--endpoint: expected an http(s) URL, got {spec.endpoint!r}")
        from bib.agency.endpoint import client_for
        from bib.agency.text import check_endpoint

        check_endpoint(client_for(spec.endpoint, spec.model, **spec.options), spec.endpoint)
        return
    if spec.name not in AGENTS:  # a user class: import it and build one now
        spec.make(BIB_GOALS, np.random.default_rng(0))


def agent_rng(seed: int, *parts: str | int) -> np.random.Generator:
    """A generator for one agent instance: the base seed and labels of what it is for."""
    words = [int(p) if isinstance(p, int) else zlib.crc32(p.encode()) for p in parts]
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, *words])
