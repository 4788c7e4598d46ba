"""Extended gridworld environments: the BIB tasks' layouts, rewarded by what the agent *would* do elsewhere.

An extended environment (``bib.reflection.environments``) simulates the agent on a counterfactual
history and rewards or punishes the real action by what the simulation does. Here the world is a
sequence of BIB trials (the layouts of stimulus episodes, one trial after another): the agent
starts each trial at its home, moves (8 king moves; a blocked move leaves it in place, the step
counts) and ends the trial by staying (``STAY``) or after :data:`MAX_MOVES` moves. A percept is
``(reward, observation)`` where the observation is the pair ``(layout, AgentState)``, interned as
an integer by a :class:`Codec`, so the whole history machinery of :mod:`bib.reflection` (forked
incremental policy states, memoisation by a rolling hash, :class:`~bib.reflection.RealityCheck`,
the V1 rewrite rules and the harness's measure) works unchanged on gridworld histories.

A gridworld agent (``act(layout, state) -> action``, :class:`bib.tasks.agents.GridAgent`) is
measured through :class:`MarkovAgent`, which answers from the last observation only and caches
its answer per ``(layout, state)``: the counterfactual calls of every rule, of a rule's
opposite and of the reality check hit that cache, so they do not multiply the agent's cost.
Agents that learn from rewards (:class:`GridLearner`, the integer agents of
:mod:`bib.reflection.agents`) see the whole history.

The rules (each with its ``opposite``, V1 semantics: the inner environment reads the negated
rewards), by the family of the 25 V1 environments they carry over:

- acting as one would elsewhere: :class:`MirrorWorld` (the mirrored layout), :class:`SwappedObjects`
  (object identities swapped), :class:`KeyElsewhere` (the key on another cell),
  :class:`IgnoreDistractors` (only the goal object shown), :class:`FourMoves` (diagonals forbidden,
  V1 ThirdActionForbidden), :class:`EarlierState` (each observation one step late),
  :class:`GridBackwardConsciousness` (the history reversed);
- ignore rewards: :class:`GridIgnoreRewards`, :class:`GridIgnoreRewards2`;
- incentivize a policy property: :class:`IncentivizeGreedy` (V1 IncentivizeLearningRate);
- false memories: :class:`GridFalseMemories`, :class:`FalseKey` (believing one holds the key);
- delayed consequences: :class:`GridDelayedRewards`, :class:`DelayedMirror`;
- a world that changes with the counterfactual: :class:`TemptingKey` (V1 TemptingButton).

Every run is recorded as ``bib.episode/1`` episodes (one per base episode: the agent's path in
each trial), so it can be validated, rendered, scored by observers and measured by MEG.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from bib.episode import Episode
from bib.errors import BibInputError
from bib.reflection.agents import EXPLORATION, Agent, _NaivePolicy
from bib.reflection.environments import (
    BackwardConsciousness,
    DelayedRewards,
    Environment,
    EnvSpec,
    FalseMemories,
    IgnoreRewards,
    IgnoreRewards2,
    _OtherPolicy,
    _Rewrite,
)
from bib.reflection.harness import Cell, Measurement, summarise
from bib.reflection.policy import IllegalActionError, Policy, State, Uniforms, check_action, join, memo_key, push
from bib.reflection.reality_check import RealityCheck
from bib.world.dynamics import (
    ACTION_NAMES,
    ACTIONS,
    STAY,
    AgentState,
    adjacent_to_lock,
    legal_actions,
    move_legal,
    step,
)
from bib.world.grid import Cell as GridCell
from bib.world.grid import Layout

N_ACTIONS = len(ACTIONS)
"""The 8 king moves and ``STAY`` (index 8), as in :data:`bib.world.dynamics.ACTIONS`."""
OBSERVATIONS = 1 << 40
"""``num_observations`` of the gridworld environments: observations are interned ids, not a small alphabet."""
MAX_MOVES = 25
"""Moves per trial before the world moves on to the next trial."""
PREFERENCE = ("A", "B")
"""Goals of the BIB stimulus agent, most preferred first (the world's notion of a trial's goal)."""

Observation = tuple[Layout, AgentState]


def describe_state(layout: Layout, state: AgentState) -> str:
    """``cell [x, y] (has_key, unlocked)``: where an agent stands, for error messages."""
    return f"cell {list(state.cell)} (has_key={state.has_key}, unlocked={state.unlocked})"


# ---------------------------------------------------------------- observations


class Codec:
    """Interns observations ``(layout, state)`` as integers and caches their counterfactual views.

    Ids are given in order of first appearance, so a run is deterministic; one codec serves one
    run (a world and the agent measured in it).
    """

    def __init__(self) -> None:
        self._ids: dict[Observation, int] = {}
        self._items: list[Observation] = []
        self._views: dict[tuple[str, int], int] = {}

    def __len__(self) -> int:
        return len(self._items)

    def encode(self, layout: Layout, state: AgentState) -> int:
        """The id of an observation (a new id on first sight)."""
        key = (layout, state)
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._items)
            self._items.append(key)
        return found

    def decode(self, obs: int) -> Observation:
        """The ``(layout, state)`` of an id; BibInputError for an id never issued."""
        try:
            return self._items[obs]
        except (IndexError, TypeError):
            raise BibInputError(f"observation {obs!r} was never issued by this gridworld") from None

    def view(self, name: str, obs: int, fn: Callable[[Layout, AgentState], Observation]) -> int:
        """The id of ``fn(*decode(obs))``, cached per ``(name, obs)``."""
        key = (name, obs)
        found = self._views.get(key)
        if found is None:
            found = self._views[key] = self.encode(*fn(*self.decode(obs)))
        return found


# ---------------------------------------------------------------- counterfactual views


MIRROR_ACTION: tuple[int, ...] = tuple(ACTIONS.index((-dx, dy)) for dx, dy in ACTIONS)
"""Action index -> its left-right mirror image (E <-> W, NE <-> NW, SE <-> SW; N, S and stay fixed)."""


@lru_cache(maxsize=4096)
def mirror_layout(layout: Layout) -> Layout:
    """The layout reflected left-right (``x -> width - 1 - x``), objects, key, lock and homes with it."""
    from bib.agency.transforms import map_layout

    w = layout.width
    return map_layout(layout, lambda c: (w - 1 - c[0], c[1]))


def mirror(layout: Layout, state: AgentState) -> Observation:
    """The mirrored world and the agent's mirrored state."""
    return mirror_layout(layout), replace(state, cell=(layout.width - 1 - state.cell[0], state.cell[1]))


@lru_cache(maxsize=4096)
def _swapped(layout: Layout) -> Layout:
    objs = layout.objects
    if len(objs) < 2:
        return layout
    cells = [o.cell for o in objs]
    return replace(layout, objects=tuple(replace(o, cell=cells[(i + 1) % len(objs)]) for i, o in enumerate(objs)))


def swap_objects(layout: Layout, state: AgentState) -> Observation:
    """Object identities exchanged: object ``i`` stands where object ``i + 1`` stood (two objects: swapped)."""
    return _swapped(layout), state


@lru_cache(maxsize=4096)
def _key_moved(layout: Layout) -> Layout:
    key = layout.key
    if key is None:
        return layout
    taken = {o.cell for o in layout.objects} | {a.home for a in layout.agents} | {key}
    free = [c for c in layout.free_cells() if c not in taken]
    if not free:
        return layout
    far = max(free, key=lambda c: (max(abs(c[0] - key[0]), abs(c[1] - key[1])), -c[1], -c[0]))
    return replace(layout, key=far)


def key_elsewhere(layout: Layout, state: AgentState) -> Observation:
    """The key on the free cell farthest from it (Chebyshev; ties to the first in reading order); no key: unchanged."""
    return _key_moved(layout), state


def goal_of(layout: Layout, state: AgentState, preference: Sequence[str] = PREFERENCE) -> str | None:
    """The trial's goal seen from ``state``: the first object of ``preference`` present and reachable
    (:meth:`bib.tasks.agents.RationalAgent.goal`)."""
    from bib.tasks.agents import RationalAgent

    return RationalAgent(preference).goal(layout, state)


def only_goal(layout: Layout, state: AgentState, preference: Sequence[str] = PREFERENCE) -> Observation:
    """Every object but the trial's goal (:func:`goal_of`) removed; no reachable goal: unchanged."""
    g = goal_of(layout, state, preference)
    if g is None or g == "key":
        return layout, state
    return replace(layout, objects=tuple(o for o in layout.objects if o.id == g)), state


def four_moves(layout: Layout, state: AgentState) -> Observation:
    """The same world with 4 moves (no diagonals)."""
    return (layout if layout.moves == 4 else _four(layout)), state


@lru_cache(maxsize=4096)
def _four(layout: Layout) -> Layout:
    return replace(layout, moves=4)


def holding_key(layout: Layout, state: AgentState) -> Observation:
    """The agent believes it holds the key (a layout without a key: unchanged); next to the lock that
    belief opens it, as arriving there with the key would (so the state is one the dynamics can produce)."""
    if layout.key is None or state.has_key:
        return layout, state
    return layout, replace(state, has_key=True, unlocked=state.unlocked or adjacent_to_lock(layout, state.cell))


# ---------------------------------------------------------------- the world


@dataclass
class TrialRecord:
    """One played trial: the layout shown, the agent's cell at every step, and its phase."""

    layout: Layout
    path: list[GridCell]
    phase: str


class World:
    """The BIB trials of some stimulus episodes, played one after another by one agent.

    Args:
        episodes: base episodes; their trials (familiarization, then test) give the layouts.
        codec: interns this world's observations.
        preference: goals of the world's trials (see :func:`goal_of`).
        max_moves: moves per trial before the next trial starts.
    """

    def __init__(self, episodes: Sequence[Episode], codec: Codec, preference: Sequence[str] = PREFERENCE,
                 max_moves: int = MAX_MOVES) -> None:
        if not episodes:
            raise BibInputError("an extended gridworld needs at least one base episode")
        if max_moves < 1:
            raise BibInputError(f"max_moves must be >= 1, got {max_moves}")
        self.base = list(episodes)
        self.codec = codec
        self.preference = tuple(preference)
        self.max_moves = max_moves
        self.plan = [(j, k) for j, ep in enumerate(self.base) for k in range(len(ep.trials))]
        self.records: list[TrialRecord] = []
        self.index = -1
        self.t = 0
        self.layout: Layout = self.base[0].trials[0].layout
        self.state = AgentState(self.layout.agent.home)
        self.done = False
        self.bumps = 0

    @property
    def obs(self) -> int:
        """The current observation's id."""
        return self.codec.encode(self.layout, self.state)

    def start(self, prepare: Callable[[Layout, int], Layout]) -> int:
        """Begin the first trial; ``prepare(layout, trial_index)`` may change a trial's layout."""
        self.index = 0
        self._begin(prepare)
        return self.obs

    def _begin(self, prepare: Callable[[Layout, int], Layout]) -> None:
        j, k = self.plan[self.index]
        trial = self.base[j].trials[k]
        self.layout = prepare(trial.layout, self.index)
        self.state = AgentState(self.layout.agent.home)
        self.t = 0
        self.records.append(TrialRecord(self.layout, [self.state.cell], trial.phase))

    def after(self, action: int) -> AgentState:
        """The state an action leads to (a blocked move stays put)."""
        if action == STAY or not move_legal(self.layout, self.state.cell, action, self.state.unlocked):
            return self.state
        return step(self.layout, self.state, action)[0]

    def advance(self, action: int, prepare: Callable[[Layout, int], Layout]) -> int:
        """Apply an action: ``STAY`` ends the trial; a move (blocked: the agent stays) counts one step."""
        if action != STAY:
            nxt = self.after(action)
            self.bumps += nxt is self.state
            self.state = nxt
            self.t += 1
            self.records[-1].path.append(nxt.cell)
        if action == STAY or self.t >= self.max_moves:
            self.index += 1
            if self.index == len(self.plan):
                self.done = True
                return self.obs
            self._begin(prepare)
        return self.obs

    def episodes(self, label: str, condition: str = "extended") -> list[Episode]:
        """The run as episodes: one per base episode (its trials as played), ``outcome`` ``none``."""
        from bib.tasks.common import make_trial

        out: list[Episode] = []
        recs = iter(self.records)
        for j, base in enumerate(self.base):
            trials = []
            for _ in base.trials:
                rec = next(recs, None)
                if rec is None:
                    break
                trials.append(make_trial(rec.layout, rec.path, goal_at(rec.layout, rec.path[-1]), rec.phase))
            if len(trials) < len(base.trials):
                break  # an unfinished run: only whole episodes are returned
            out.append(own_episode(base, f"{base.id}-{label}", condition, trials))
        return out


def own_episode(base: Episode, episode_id: str, condition: str, trials: Sequence[Any]) -> Episode:
    """An agent's own episode on a stimulus episode's layouts: its trials, no pair, outcome ``none``, and none
    of the stimulus pair's design fields (variant, twin, difficulty, the stimulus agent's beta)."""
    return replace(base, id=episode_id, pair_id=None, condition=condition, outcome="none", trials=tuple(trials),
                   variant="", twin_id=None, difficulty=None, beta=None)


def goal_at(layout: Layout, cell: GridCell) -> str | None:
    """The object id standing on ``cell``, ``"key"`` for the key's cell, or None."""
    for o in layout.objects:
        if o.cell == cell:
            return o.id
    return "key" if layout.key == cell else None


# ---------------------------------------------------------------- agents


class _MarkovPolicy(Policy):
    """A gridworld agent as a history policy: state ``(hash, length, last observation)``; answers cached per observation."""

    def __init__(self, owner: MarkovAgent, agent: Any) -> None:
        self.owner = owner
        self.agent = agent
        self.num_actions = N_ACTIONS
        self.num_observations = OBSERVATIONS
        self.cache: dict[int, int] = {}
        self.calls = 0

    def empty(self) -> State:
        return (0, 0, None)

    def percept(self, state: State, reward: int, obs: int) -> State:
        return (push(push(state[0], reward), obs), state[1] + 2, obs)

    def record(self, state: State, action: int) -> State:
        return (push(state[0], action), state[1] + 1, state[2])

    def concat(self, left: State, symbols: Sequence[int], right: State) -> State:
        obs = right[2] if right[2] is not None else left[2]
        return (join(left[0], right[0], right[1]), left[1] + right[1], obs)

    def act(self, state: State) -> int:
        self.calls += 1
        obs = state[2]
        found = self.cache.get(obs)
        if found is None:
            found = self.cache[obs] = self.owner.query(self.agent, obs)
        return found


class MarkovAgent(Agent):
    """A gridworld agent in extended environments: acts on the last observation, cached per ``(layout, state)``.

    Args:
        agent: anything with ``act(layout, state) -> action``; options the battery asks for (e.g.
            ``greedy=True``) go to its ``with_options(**options)`` when it has one (else TypeError,
            which the rule scores as V1 did).
        codec: the run's observation codec.
        name: how reports name the agent.
    """

    def __init__(self, agent: Any, codec: Codec, name: str = "agent") -> None:
        super().__init__()
        self.agent = agent
        self.codec = codec
        self.name = name
        self.queries = 0

    @property
    def calls(self) -> int:
        """Policy calls answered so far (real and counterfactual, every view of this agent); :attr:`queries`
        counts those that reached the wrapped agent (one per distinct observation and view)."""
        return sum(getattr(p, "calls", 0) for p in self._policies.values())

    def _make_policy(self, num_actions: int, num_observations: int, **options: Any) -> Policy:
        agent = self.agent
        if options:
            configure = getattr(agent, "with_options", None)
            if configure is None:
                raise TypeError(f"{self.name} has no with_options(); cannot take {', '.join(sorted(options))}")
            agent = configure(**options)
        return _MarkovPolicy(self, agent)

    def query(self, agent: Any, obs: int) -> int:
        """Ask the wrapped agent once; an answer that is no action raises IllegalActionError naming the state."""
        layout, state = self.codec.decode(obs)
        self.queries += 1
        try:
            action = agent.act(layout, state)
        except BibInputError:
            raise
        except Exception as exc:  # noqa: BLE001 - a failing agent is reported in one line, with the state
            raise BibInputError(f"agent {self.name!r} raised {type(exc).__name__}: {exc} at "
                                f"{describe_state(layout, state)}") from None
        try:
            return check_action(action, N_ACTIONS, self.name)
        except IllegalActionError as exc:
            raise IllegalActionError(f"{exc} at {describe_state(layout, state)}") from None


class _LearnerPolicy(_NaivePolicy):
    """V1 NaiveLearner's statistics (observation-blind average immediate reward per action) plus the last
    observation; it chooses among the legal actions there, breaking ties by its base agent's action."""

    def __init__(self, owner: GridLearner) -> None:
        super().__init__(N_ACTIONS, OBSERVATIONS, owner.uniforms)
        self.owner = owner
        self.base: dict[int, int] = {}

    def empty(self) -> State:
        return (*super().empty(), None)

    def percept(self, state: State, reward: int, obs: int) -> State:
        return (*super().percept(state[:6], reward, obs), obs)

    def record(self, state: State, action: int) -> State:
        return (*super().record(state[:6], action), state[6])

    def concat(self, left: State, symbols: Sequence[int], right: State) -> State:
        obs = right[6] if right[6] is not None else left[6]
        return (*super().concat(left[:6], symbols, right[:6]), obs)

    def act(self, state: State) -> int:
        key = memo_key(state[0], state[1])
        a = self.memo.get(key)
        if a is None:
            a = self.memo[key] = self._choose_at(state)
        return a

    def _choose_at(self, state: State) -> int:
        obs = state[6]
        layout, here = self.owner.codec.decode(obs)
        legal = legal_actions(layout, here.cell, here.unlocked)
        u = self.uniforms
        if u() < EXPLORATION:
            return legal[int(u() * len(legal))]
        sums, counts = state[3], state[4]
        values = {a: float(sums[a]) / (1 + counts[a]) for a in legal}
        top = max(values.values())
        tied = [a for a in legal if values[a] == top]
        if len(tied) == 1:
            return tied[0]
        base = self.base.get(obs)
        if base is None:
            base = self.base[obs] = self.owner.base_action(layout, here)
        return base if base in tied else tied[0]


class GridLearner(Agent):
    """A gridworld reward learner: V1 NaiveLearner over the legal actions, its base agent's move on ties.

    With probability 0.15 a uniformly random legal action; otherwise the legal action with the best
    average immediate reward ``sum / (1 + count)`` (observation-blind, as V1's NaiveLearner), ties
    going to what the base gridworld agent does in the current state. With no rewards (a BIB task)
    it therefore behaves like its base agent, apart from the exploration. Its answers are
    memoised by history. In the integer environments of the classic battery (no layout, no legal
    moves, no base move) it is V1's NaiveLearner itself.

    Args:
        base: a gridworld agent (``act(layout, state)``), the tie-break.
        codec: the run's observation codec.
        seed: seeds the exploration draws.
    """

    name = "learner"

    def __init__(self, base: Any, codec: Codec, seed: int = 0) -> None:
        super().__init__()
        self.base_agent = base
        self.codec = codec
        self.uniforms = Uniforms(np.random.default_rng([int(seed), 0x1EA2]))

    def base_action(self, layout: Layout, state: AgentState) -> int:
        """The base agent's action in a state."""
        return check_action(self.base_agent.act(layout, state), N_ACTIONS, "learner base")

    def _make_policy(self, num_actions: int, num_observations: int, **options: Any) -> Policy:
        if options:
            raise TypeError(f"GridLearner got unexpected keyword argument(s) {', '.join(sorted(options))}")
        if (num_actions, num_observations) != (N_ACTIONS, OBSERVATIONS):
            # an integer environment: no layout, no legal-move mask, no base move; V1's NaiveLearner
            return _NaivePolicy(num_actions, num_observations, self.uniforms)
        return _LearnerPolicy(self)


class HistoryActor:
    """A history agent (:class:`bib.reflection.agents.Agent`) behind the gridworld protocol ``act(layout, state)``.

    Each call appends the percept ``(0, (layout, state))`` to the agent's running history (no
    rewards outside an extended environment) and records the action it answers, so a learner
    keeps its memory across the trials it acts in.
    """

    def __init__(self, agent: Agent, codec: Codec) -> None:
        self.agent = agent
        self.codec = codec
        self.policy = agent.policy(N_ACTIONS, OBSERVATIONS)
        self.state = self.policy.empty()

    def act(self, layout: Layout, state: AgentState) -> int:
        """The agent's action on its history so far plus this observation."""
        self.state = self.policy.percept(self.state, 0, self.codec.encode(layout, state))
        action = self.policy.act(self.state)
        self.state = self.policy.record(self.state, action)
        return action


class LearnerAgent:
    """:class:`GridLearner` with a gridworld face: ``act(layout, state)`` through its own :class:`HistoryActor`,
    and :meth:`as_history_agent` for extended environments (where it learns from their rewards).

    Args:
        base: the gridworld agent whose move breaks ties.
        seed: seeds the exploration draws.
    """

    def __init__(self, base: Any, seed: int = 0) -> None:
        self.base = base
        self.seed = int(seed)
        self._actor: HistoryActor | None = None

    def as_history_agent(self, codec: Codec) -> GridLearner:
        """A fresh learner (empty memory) observing through ``codec``."""
        return GridLearner(self.base, codec, self.seed)

    def act(self, layout: Layout, state: AgentState) -> int:
        """The learner's action on its history of observations so far (no rewards)."""
        if self._actor is None:
            codec = Codec()
            self._actor = HistoryActor(self.as_history_agent(codec), codec)
        return self._actor.act(layout, state)


def history_agent(agent: Any, codec: Codec, name: str = "agent") -> Agent:
    """The agent as extended environments see it: its own history agent when it has one
    (``as_history_agent(codec)``, e.g. :class:`LearnerAgent`), else a :class:`MarkovAgent`."""
    own = getattr(agent, "as_history_agent", None)
    if own is not None:
        found = own(codec)
        found.name = name
        return found
    return MarkovAgent(agent, codec, name)


# ---------------------------------------------------------------- environments


class GridEnvironment(Environment):
    """Base class of the extended gridworld environments: the world supplies the observations.

    A rule implements ``_react(action) -> (reward, ignored)`` judging the action in the current
    state (before the world moves); :meth:`prepare` may change a trial's layout as it begins.
    Rules carried over from V1 (history rewrites) are mixed in unchanged.
    """

    num_actions: ClassVar[int] = N_ACTIONS
    num_observations: ClassVar[int] = OBSERVATIONS
    family: ClassVar[str] = ""

    def __init__(self, agent: Agent, uniforms: Uniforms, sign: int = 1, world: World | None = None) -> None:
        if world is None:
            raise BibInputError("a gridworld environment needs a World")
        self.world = world
        self.codec = world.codec
        super().__init__(agent, uniforms, sign)

    def _first(self) -> tuple[int, int]:
        return 0, self.world.start(self.prepare)

    def prepare(self, layout: Layout, index: int) -> Layout:
        """The layout trial ``index`` shows (default: the base trial's)."""
        return layout

    def step(self, action: int) -> tuple[int, int]:
        """Judge the action, then let the world move."""
        r, _ = self._react(action)
        o = self.world.advance(action, self.prepare)
        self.actions.append(action)
        self.flat.append(action)
        if self.tracks_real:
            self.play = self.sim.record(self.real, action)
        return self._deliver(r, o)

    @property
    def done(self) -> bool:
        """True once the last trial has ended."""
        return self.world.done


class _View(GridEnvironment, _Rewrite):
    """+1 iff the action equals ``back(T(view(history)))``: every observation of the history replaced by its view.

    Subclasses name the view (``VIEW``, the codec's cache key) and give it as ``VIEW_FN`` or override :meth:`_view`.
    """

    VIEW: ClassVar[str] = ""
    VIEW_FN: ClassVar[Callable[[Layout, AgentState], Observation] | None] = None

    def _view(self, layout: Layout, state: AgentState) -> Observation:
        return type(self).VIEW_FN(layout, state)  # type: ignore[misc]

    def _view_action(self, action: int) -> int:
        return action

    def _back(self, action: int) -> int:
        return action

    def _judge(self, action: int) -> int:
        reward = 1 if action == self._back(self.sim.act(self.cf)) else -1
        self.base = self.sim.record(self.cf, self._view_action(action))
        return reward

    def _react(self, action: int) -> tuple[int, int]:
        return self._judge(action), 0

    def _rewrite_percept(self, reward: int, obs: int) -> tuple[int, int]:
        return reward, self.codec.view(self.VIEW, obs, self._view)


class MirrorWorld(_View):
    """Act as you would in the mirrored world: +1 iff the action is the mirror image of the simulated action there."""

    name = "MirrorWorld"
    family = "elsewhere"
    VIEW = "mirror"
    VIEW_FN = staticmethod(mirror)

    def _view_action(self, action: int) -> int:
        return MIRROR_ACTION[action]

    def _back(self, action: int) -> int:
        return MIRROR_ACTION[action]


class SwappedObjects(_View):
    """Act as you would if the objects had swapped identities (the V1 IgnoreObservations family)."""

    name = "SwappedObjects"
    family = "elsewhere"
    VIEW = "swap"
    VIEW_FN = staticmethod(swap_objects)


class KeyElsewhere(_View):
    """Act as you would if the key lay elsewhere (:func:`key_elsewhere`; layouts without a key are unchanged)."""

    name = "KeyElsewhere"
    family = "elsewhere"
    VIEW = "key"
    VIEW_FN = staticmethod(key_elsewhere)


class IgnoreDistractors(_View):
    """Act as you would if only the trial's goal object were there (V1 IgnoreObservations)."""

    name = "IgnoreDistractors"
    family = "elsewhere"
    VIEW = "goal-only"

    def _view(self, layout: Layout, state: AgentState) -> Observation:
        return only_goal(layout, state, self.world.preference)


class FourMoves(_View):
    """Act as you would with diagonals forbidden (V1 ThirdActionForbidden: a smaller action set)."""

    name = "FourMoves"
    family = "policy property"
    VIEW = "four-moves"
    VIEW_FN = staticmethod(four_moves)


class FalseKey(_View):
    """A false memory: act as you would if you believed you held the key (layouts without a key are unchanged)."""

    name = "FalseKey"
    family = "false memories"
    VIEW = "holding-key"
    VIEW_FN = staticmethod(holding_key)


class EarlierState(GridEnvironment, _Rewrite):
    """Act as you would one step earlier: every observation replaced by the previous one of its trial
    (a trial's first observation stays; V1 ShiftedRewards / AfterImages, one step late)."""

    name = "EarlierState"
    family = "elsewhere"

    def setup(self) -> None:
        super().setup()
        self.previous: int | None = None

    def _react(self, action: int) -> tuple[int, int]:
        reward = 1 if action == self.sim.act(self.cf) else -1
        self.base = self.sim.record(self.cf, action)
        return reward, 0

    def _rewrite_percept(self, reward: int, obs: int) -> tuple[int, int]:
        shown = obs if self.world.t == 0 or self.previous is None else self.previous
        self.previous = obs
        return reward, shown


class DelayedMirror(MirrorWorld):
    """MirrorWorld's verdict paid :data:`DELAY` steps late (0 for the first steps): delayed consequences."""

    name = "DelayedMirror"
    family = "delayed consequences"
    DELAY: ClassVar[int] = 3

    def setup(self) -> None:
        super().setup()
        self.pending: deque[int] = deque()

    def _react(self, action: int) -> tuple[int, int]:
        self.pending.append(self._judge(action))
        return (self.pending.popleft() if len(self.pending) > self.DELAY else 0), 0


class IncentivizeGreedy(GridEnvironment, _OtherPolicy):
    """Act as you would with your randomness turned off (``with_options(greedy=True)``; V1 IncentivizeLearningRate).

    An agent without that option (no ``with_options``, or one raising TypeError) gets -1 every step.
    """

    name = "IncentivizeGreedy"
    family = "policy property"
    OPTIONS = {"num_actions": N_ACTIONS, "num_observations": OBSERVATIONS, "greedy": True}


def button_cell(layout: Layout) -> GridCell | None:
    """Where :class:`TemptingKey` shows its button: the first free edge neighbour of the agent's home
    (N, E, S, W) that holds no object; None in layouts with a key or lock, or without such a cell."""
    if layout.key is not None or layout.lock is not None:
        return None
    home = layout.agent.home
    taken = {o.cell for o in layout.objects}
    for a in (0, 2, 4, 6):
        dx, dy = ACTIONS[a]
        c = (home[0] + dx, home[1] + dy)
        if layout.is_free(c) and c not in taken:
            return c
    return None


@lru_cache(maxsize=4096)
def with_button(layout: Layout) -> Layout:
    """The layout with a key (the button) on :func:`button_cell`."""
    return replace(layout, key=button_cell(layout))


class TemptingKey(GridEnvironment):
    """V1 TemptingButton in the gridworld; the world changes: a key (the button) appears beside the home.

    At the start of each trial without key or lock the button is shown with probability 1/4. The
    first decision of a trial is judged: with the button shown, stepping onto it gives +1 and
    anything else -1; without it the action is ignored and the agent gets +1 iff, had the button
    been there, it would NOT have stepped onto it. Later decisions give 0.
    """

    name = "TemptingKey"
    family = "world changes"
    tracks_real = True
    PROBABILITY: ClassVar[float] = 0.25

    def setup(self) -> None:
        self.shown = False

    def prepare(self, layout: Layout, index: int) -> Layout:
        self.shown = button_cell(layout) is not None and self.uniforms() < self.PROBABILITY
        return with_button(layout) if self.shown else layout

    def _react(self, action: int) -> tuple[int, int]:
        world = self.world
        if world.t != 0:
            return 0, 0
        if self.shown:
            return (1 if world.after(action).cell == world.layout.key else -1), 0
        button = button_cell(world.layout)
        if button is None:
            return 0, 0
        r_n, _ = self.percepts[-1]
        shown = self.codec.encode(with_button(world.layout), world.state)
        would = self.sim.act(self.sim.percept(self.play, r_n, shown))
        pushed = world.state.cell if would == STAY else _target(world.state.cell, would)
        return (-1 if pushed == button else 1), 0


def _target(cell: GridCell, action: int) -> GridCell:
    dx, dy = ACTIONS[action]
    return (cell[0] + dx, cell[1] + dy)


class GridIgnoreRewards(GridEnvironment, IgnoreRewards):
    """V1 IgnoreRewards on gridworld histories: act as you would had every reward been 0."""

    name = "IgnoreRewards"
    family = "ignore rewards"


class GridIgnoreRewards2(GridEnvironment, IgnoreRewards2):
    """V1 IgnoreRewards2 on gridworld histories: act as you would had the rewarded steps never happened."""

    name = "IgnoreRewards2"
    family = "ignore rewards"


class GridFalseMemories(GridEnvironment, FalseMemories):
    """V1 FalseMemories on gridworld histories: a fixed false prehistory (twice the world's first
    observation, each followed by the move N) before the real one."""

    name = "FalseMemories"
    family = "false memories"


class GridBackwardConsciousness(GridEnvironment, BackwardConsciousness):
    """V1 BackwardConsciousness on gridworld histories: act as you would on the reversed history,
    whose last observation is the world's first one."""

    name = "BackwardConsciousness"
    family = "elsewhere"


class GridDelayedRewards(GridEnvironment, DelayedRewards):
    """V1 DelayedRewards on gridworld histories: act as you would had every other reward come one step late."""

    name = "DelayedRewards"
    family = "delayed consequences"


RULES: tuple[type[GridEnvironment], ...] = (
    MirrorWorld,
    SwappedObjects,
    KeyElsewhere,
    IgnoreDistractors,
    FourMoves,
    EarlierState,
    GridBackwardConsciousness,
    GridIgnoreRewards,
    GridIgnoreRewards2,
    IncentivizeGreedy,
    GridFalseMemories,
    FalseKey,
    GridDelayedRewards,
    DelayedMirror,
    TemptingKey,
)
"""The gridworld rules; :func:`grid_battery` adds each one's opposite."""


@dataclass(frozen=True)
class GridEnvSpec(EnvSpec):
    """A gridworld rule and the sign of its rewards (-1 for its opposite); picklable. Named as
    :class:`bib.reflection.environments.EnvSpec` (``Name`` or ``opposite(Name)``), made in a world."""

    cls: type[GridEnvironment]  # type: ignore[assignment]

    def make(self, agent: Agent, uniforms: Uniforms, world: World | None = None) -> GridEnvironment:  # type: ignore[override]
        """A fresh environment simulating ``agent`` in ``world``."""
        return self.cls(agent, uniforms, self.sign, world=world)


def grid_battery(rules: Sequence[type[GridEnvironment]] = RULES) -> list[GridEnvSpec]:
    """Every rule and its opposite (V1 ``minus_rewards`` semantics)."""
    return [GridEnvSpec(cls, sign) for cls in rules for sign in (1, -1)]


def grid_rule(name: str) -> GridEnvSpec:
    """Look a gridworld environment up by its report name (``MirrorWorld`` or ``opposite(MirrorWorld)``)."""
    for spec in grid_battery():
        if spec.name == name:
            return spec
    raise BibInputError(f"unknown gridworld environment {name!r}; known: {', '.join(s.name for s in grid_battery())}")


# ---------------------------------------------------------------- runs and the measure


@dataclass
class GridRun:
    """One environment run: the score (total reward / steps), its steps, and the world it played."""

    environment: str
    score: float
    steps: int
    total: int
    world: World

    def episodes(self) -> list[Episode]:
        """The run as ``bib.episode/1`` episodes (see :meth:`World.episodes`)."""
        label = self.environment.replace("(", "-").replace(")", "")
        return self.world.episodes(label)


def run_grid_environment(spec: GridEnvSpec, agent: Agent, world: World, uniforms: Uniforms) -> GridRun:
    """Run ``agent`` through every trial of ``world`` under one rule.

    The first percept's reward counts and every action is judged (the run ends when the world
    does, after the last action's percept); score = total reward / actions. An agent answer that
    is no action raises :class:`~bib.reflection.IllegalActionError` naming the state.
    """
    env = spec.make(agent, uniforms, world)
    policy = agent.policy(N_ACTIONS, OBSERVATIONS)
    r, o = env.start()
    total, steps = r, 0
    state = policy.percept(policy.empty(), r, o)
    while True:
        try:
            action = check_action(policy.act(state), N_ACTIONS, agent.name)
        except IllegalActionError as exc:
            if " at cell " in str(exc):
                raise
            raise IllegalActionError(f"{exc} at {describe_state(world.layout, world.state)}") from None
        steps += 1
        state = policy.record(state, action)
        r, o = env.step(action)
        total += r
        if world.done:
            break
        state = policy.percept(state, r, o)
    return GridRun(spec.name, total / steps, steps, total, world)


def run_grid_battery(
    agent: Agent,
    episodes: Sequence[Episode],
    codec: Codec,
    seed: int,
    specs: Sequence[GridEnvSpec] | None = None,
    stream: int = 1,
    max_moves: int = MAX_MOVES,
    keep: bool = False,
) -> list[GridRun]:
    """Run one agent instance on every environment, each in a fresh world over ``episodes``.

    Every environment gets its own seeded uniforms (``[seed, stream, i]``); the agent and its
    caches are shared (V1's memo scope). ``keep=False`` drops the worlds' records (memory).
    """
    specs = grid_battery() if specs is None else list(specs)
    runs = []
    for i, spec in enumerate(specs):
        world = World(episodes, codec, max_moves=max_moves)
        run = run_grid_environment(spec, agent, world, Uniforms(np.random.default_rng([int(seed), stream, i])))
        if not keep:
            world.records = []
        runs.append(run)
    return runs


def measure_runs(name: str, reality_check: bool, runs: Sequence[Sequence[GridRun]]) -> Measurement:
    """The self-reflection measure of per-seed runs: mean over seeds of the mean environment score,
    with the correct standard error (:class:`bib.reflection.harness.Measurement`)."""
    cells = [[Cell(r.environment, r.score) for r in seed_runs] for seed_runs in runs]
    steps = [r.steps for seed_runs in runs for r in seed_runs]
    mean_steps = int(round(float(np.mean(steps)))) if steps else 0
    return summarise(name, reality_check, mean_steps, cells)


def reality_checked(agent: Agent) -> Agent:
    """``RC(agent)`` (:class:`bib.reflection.RealityCheck`), sharing the agent's memo and caches."""
    return RealityCheck(agent)


def action_name(action: int) -> str:
    """``N`` ... ``NW`` or ``stay``."""
    return ACTION_NAMES[action]
