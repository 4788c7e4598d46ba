"""The 25 active extended environments of the V1 library, the two slow inspectors, and ``opposite``.

Each environment simulates the agent (through its :class:`~bib.reflection.policy.Policy`) on a
counterfactual history and rewards or punishes the real action by what the simulation does. The
rules are those of ``shared/reference/extended_environments.md`` section 1 (V1 at e38e3dc).
Simulations are incremental: every prefix-stable rewrite keeps a forked agent state that advances
with the real history, so a run costs O(steps) for the built-in agents.

``opposite(spec)`` negates every reward with V1 semantics: the inner environment reads the
agent's actual (negated-reward) history, so its counterfactuals are built from negated rewards.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from bib.errors import BibInputError
from bib.reflection.agents import Agent
from bib.reflection.policy import Policy, State, Uniforms


class Environment:
    """Base class: bookkeeping of the actual history, the sign of ``opposite`` and the hooks.

    Subclasses implement ``_react(action) -> (reward, obs)`` (inner-perspective reward for the last
    action, computed from the history so far) and optionally ``_observe(reward, obs)`` (called with
    the *actual* reward once a percept is final) and ``_first()``.
    """

    name: ClassVar[str] = "Environment"
    num_actions: ClassVar[int] = 2
    num_observations: ClassVar[int] = 1
    #: keep ``self.real`` (prompt state of the actual history) and ``self.play`` (play state
    #: before the last percept) in the simulated agent.
    tracks_real: ClassVar[bool] = False

    def __init__(self, agent: Agent, uniforms: Uniforms, sign: int = 1) -> None:
        self.agent = agent
        self.uniforms = uniforms
        self.sign = sign
        self.sim: Policy = agent.policy(self.num_actions, self.num_observations)
        self.percepts: list[tuple[int, int]] = []
        self.actions: list[int] = []
        self.flat: list[int] = []
        self.play: State = self.sim.empty()
        self.real: State = self.play
        self.setup()

    def setup(self) -> None:
        """Initialise the environment's own tracks (called once from ``__init__``)."""

    def start(self) -> tuple[int, int]:
        """The first percept ``(reward, obs)``."""
        r, o = self._first()
        return self._deliver(r, o)

    def step(self, action: int) -> tuple[int, int]:
        """React to the agent's action with the next percept."""
        r, o = self._react(action)
        self.actions.append(action)
        self.flat.append(action)
        if self.tracks_real:
            self.play = self.sim.record(self.real, action)
        return self._deliver(r, o)

    def _deliver(self, r: int, o: int) -> tuple[int, int]:
        r = self.sign * r
        self.percepts.append((r, o))
        self.flat.append(r)
        self.flat.append(o)
        if self.tracks_real:
            self.real = self.sim.percept(self.play, r, o)
        self._observe(r, o)
        return r, o

    def _first(self) -> tuple[int, int]:
        return 0, 0

    def _react(self, action: int) -> tuple[int, int]:
        raise NotImplementedError

    def _observe(self, reward: int, obs: int) -> None:
        pass

    def _random_obs(self) -> int:
        return int(self.uniforms() * self.num_observations)

    @property
    def step_index(self) -> int:
        """Index of the latest percept (0 for the first)."""
        return len(self.percepts) - 1


class _Rewrite(Environment):
    """+1 iff the action equals the simulated action on a rewritten prompt ``self.cf``."""

    def setup(self) -> None:
        self.cf: State = self.sim.empty()
        self.base: State = self.cf

    def _react(self, action: int) -> tuple[int, int]:
        reward = 1 if action == self.sim.act(self.cf) else -1
        self._rewrite_action(action)
        return reward, self._next_obs()

    def _next_obs(self) -> int:
        return 0

    def _rewrite_action(self, action: int) -> None:
        self.base = self.sim.record(self.cf, action)

    def _observe(self, reward: int, obs: int) -> None:
        r, o = self._rewrite_percept(reward, obs)
        self.cf = self.sim.percept(self.base, r, o)

    def _rewrite_percept(self, reward: int, obs: int) -> tuple[int, int]:
        return reward, obs


class IgnoreRewards(_Rewrite):
    """All rewards -> 0."""

    name = "IgnoreRewards"

    def _rewrite_percept(self, reward: int, obs: int) -> tuple[int, int]:
        return 0, obs


class _DeleteTriples(_Rewrite):
    """Delete every (r, o, a) triple whose percept ``_drop`` selects; V1 then drops the final symbol.

    When the latest percept is deleted the rewritten prompt ends at the last kept observation
    (that triple's prompt); with nothing kept it is empty.
    """

    def setup(self) -> None:
        super().setup()
        self.kept_prompt: State = self.cf  # prompt state of the last kept triple (or empty)
        self.last_kept = False

    def _drop(self, reward: int, obs: int) -> bool:
        raise NotImplementedError

    def _rewrite_action(self, action: int) -> None:
        if self.last_kept:
            self.base = self.sim.record(self.cf, action)

    def _observe(self, reward: int, obs: int) -> None:
        self.last_kept = not self._drop(reward, obs)
        if self.last_kept:
            self.cf = self.kept_prompt = self.sim.percept(self.base, reward, obs)
        else:
            self.cf = self.kept_prompt


class IgnoreRewards2(_DeleteTriples):
    """Delete every triple with a positive reward."""

    name = "IgnoreRewards2"

    def _drop(self, reward: int, obs: int) -> bool:
        return reward > 0


class IgnoreRewards3(Environment):
    """Compare with the agent's action at the same length in the environment that always gives (0, 0)."""

    name = "IgnoreRewards3"

    def setup(self) -> None:
        self.zero_play: State = self.sim.empty()

    def _react(self, action: int) -> tuple[int, int]:
        prompt = self.sim.percept(self.zero_play, 0, 0)
        sim_action = self.sim.act(prompt)
        self.zero_play = self.sim.record(prompt, sim_action)
        return (1 if action == sim_action else -1), 0


class IgnoreActions(_Rewrite):
    """All past actions -> 0."""

    name = "IgnoreActions"

    def _rewrite_action(self, action: int) -> None:
        self.base = self.sim.record(self.cf, 0)


class IgnoreObservations(_Rewrite):
    """Observations are random bits; the agent should act as if all were 0."""

    name = "IgnoreObservations"
    num_observations = 2

    def _next_obs(self) -> int:
        return self._random_obs()

    def _rewrite_percept(self, reward: int, obs: int) -> tuple[int, int]:
        return reward, 0


class FalseMemories(_Rewrite):
    """Prepend the fixed prehistory ``(0, 0, 0, 0, 0, 0)``."""

    name = "FalseMemories"
    PREHISTORY: ClassVar[tuple[int, ...]] = (0, 0, 0, 0, 0, 0)

    def setup(self) -> None:
        super().setup()
        self.base = self.sim.extend(self.sim.empty(), self.PREHISTORY)


class DejaVu(Environment):
    """``T(play + prompt)``: the history, the action, then the history again."""

    name = "DejaVu"
    tracks_real = True

    def _react(self, action: int) -> tuple[int, int]:
        left = self.sim.record(self.real, action)
        sim_action = self.sim.act(self.sim.concat(left, self.flat, self.real))
        return (1 if action == sim_action else -1), 0


class _ReversedView(Sequence):
    """Symbols ``r_m, o_m, a_{m-1}, ..., r_0, o_0`` of the reversed prompt up to percept ``m``."""

    def __init__(self, percepts: list[tuple[int, int]], actions: list[int], m: int) -> None:
        self.percepts, self.actions, self.m = percepts, actions, m

    def __len__(self) -> int:
        return 3 * self.m + 2

    def __getitem__(self, i: int) -> int:  # type: ignore[override]
        if not 0 <= i < 3 * self.m + 2:
            raise IndexError(i)
        j, phase = divmod(i, 3)
        k = self.m - j
        if phase == 2:
            return self.actions[k - 1]
        return self.percepts[k][phase]


class BackwardConsciousness(Environment):
    """The history reversed in r-o-a order: ``r_n, o_n, a_{n-1}, ..., r_0, o_0``."""

    name = "BackwardConsciousness"

    def setup(self) -> None:
        self.rev: State = self.sim.empty()

    def _react(self, action: int) -> tuple[int, int]:
        return (1 if action == self.sim.act(self.rev) else -1), 0

    def _observe(self, reward: int, obs: int) -> None:
        sim = self.sim
        n = self.step_index
        head = sim.percept(sim.empty(), reward, obs)
        if n == 0:
            self.rev = head
            return
        head = sim.record(head, self.actions[n - 1])
        self.rev = sim.concat(head, _ReversedView(self.percepts, self.actions, n - 1), self.rev)


class ShiftedRewards(_Rewrite):
    """Each reward -> the previous reward (the first is kept)."""

    name = "ShiftedRewards"

    def setup(self) -> None:
        super().setup()
        self.previous: int | None = None

    def _rewrite_percept(self, reward: int, obs: int) -> tuple[int, int]:
        shifted = reward if self.previous is None else self.previous
        self.previous = reward
        return shifted, obs


class DelayedRewards(_Rewrite):
    """Every other reward is zeroed and added to the next: 1,1,1,1,1 -> 1,0,2,0,2."""

    name = "DelayedRewards"

    def setup(self) -> None:
        super().setup()
        self.previous = 0

    def _rewrite_percept(self, reward: int, obs: int) -> tuple[int, int]:
        k = self.step_index
        if k == 0:
            delayed = reward
        elif k % 2:
            delayed = 0
        else:
            delayed = reward + self.previous
        self.previous = reward
        return delayed, obs


class NthRewardMultipliedByN(_Rewrite):
    """The k-th reward (from 0) is multiplied by k."""

    name = "NthRewardMultipliedByN"

    def _rewrite_percept(self, reward: int, obs: int) -> tuple[int, int]:
        return self.step_index * reward, obs


class Repeater(_Rewrite):
    """Every complete triple is doubled: ``r0 o0 a0 r0 o0 a0 ... rn on``."""

    name = "Repeater"

    def _rewrite_action(self, action: int) -> None:
        r, o = self.percepts[-1]
        once = self.sim.record(self.cf, action)
        self.base = self.sim.record(self.sim.percept(once, r, o), action)


class LimitedMemory(Environment):
    """Only the last 5 percepts (``prompt[-14:]``) are remembered."""

    name = "LimitedMemory"
    WINDOW: ClassVar[int] = 5

    def _react(self, action: int) -> tuple[int, int]:
        n = self.step_index
        start = max(0, n - (self.WINDOW - 1))
        window = self.flat[3 * start :]
        sim_action = self.sim.act(self.sim.walk(window))
        return (1 if action == sim_action else -1), 0


class CensoredObservation(_DeleteTriples):
    """Observations are uniform in {0, 1, 2}; act as if the turns with observation 2 never happened."""

    name = "CensoredObservation"
    num_observations = 3

    def _next_obs(self) -> int:
        return self._random_obs()

    def _drop(self, reward: int, obs: int) -> bool:
        return obs == 2


class AfterImages(_Rewrite):
    """Observations are random 3-bit images; each is OR-ed with the previous one."""

    name = "AfterImages"
    num_observations = 8

    def setup(self) -> None:
        super().setup()
        self.previous: int | None = None

    def _first(self) -> tuple[int, int]:
        return 0, self._random_obs()

    def _next_obs(self) -> int:
        return self._random_obs()

    def _rewrite_percept(self, reward: int, obs: int) -> tuple[int, int]:
        image = obs if self.previous is None else obs | self.previous
        self.previous = obs
        return reward, image


class _OtherPolicy(Environment):
    """+1 iff the action equals the agent's own action under different call options."""

    OPTIONS: ClassVar[dict[str, Any]] = {}

    def setup(self) -> None:
        try:
            self.other: Policy | None = self.agent.policy(**self.OPTIONS)
        except TypeError:
            self.other = None  # V1: calling T with an unknown keyword raised TypeError -> -1
        self.cf = self.base = self.other.empty() if self.other is not None else None

    def _react(self, action: int) -> tuple[int, int]:
        if self.other is None:
            return -1, 0
        try:
            reward = 1 if action == self.other.act(self.cf) else -1
        except TypeError:
            self.other = None
            return -1, 0
        self.base = self.other.record(self.cf, action)
        return reward, 0

    def _observe(self, reward: int, obs: int) -> None:
        if self.other is not None:
            self.cf = self.other.percept(self.base, reward, obs)


class ThirdActionForbidden(_OtherPolicy):
    """Two legal actions; act as the agent would if a third action were allowed."""

    name = "ThirdActionForbidden"
    OPTIONS = {"num_actions": 3, "num_observations": 1}


class IncentivizeLearningRate(_OtherPolicy):
    """Act as the agent would with ``learning_rate=1``; an agent without that option gets -1."""

    name = "IncentivizeLearningRate"
    OPTIONS = {"num_actions": 2, "num_observations": 1, "learning_rate": 1}


class SelfRecognition(Environment):
    """Observations 2-5 claim "if this observation were 0/1 you would play 0/1"; say whether it is true.

    Observation 0 or 1 gives reward 0. For a claim, action 1 means "true"; the truth is the
    simulated action on the prompt with its last observation replaced.
    """

    name = "SelfRecognition"
    num_observations = 6
    tracks_real = True
    CLAIMS: ClassVar[dict[int, tuple[int, int]]] = {2: (0, 0), 3: (0, 1), 4: (1, 0), 5: (1, 1)}

    def _first(self) -> tuple[int, int]:
        return 0, self._random_obs()

    def _react(self, action: int) -> tuple[int, int]:
        r_n, o_n = self.percepts[-1]
        if o_n in (0, 1):
            return 0, self._random_obs()
        if_obs, you_play = self.CLAIMS[o_n]
        truth = self.sim.act(self.sim.percept(self.play, r_n, if_obs)) == you_play
        reward = 1 if (action == 1) == truth else -1
        return reward, self._random_obs()


class TemptingButton(Environment):
    """Observation 1 = a button (p = 0.25): pushing (1) gives +1, else -1. Without a button the
    action is ignored: +1 iff the agent would not push had there been a button."""

    name = "TemptingButton"
    num_observations = 2
    tracks_real = True
    SKIP_REWARD: ClassVar[int] = -1

    def _button(self) -> int:
        return 1 if self.uniforms() < 0.25 else 0

    def _first(self) -> tuple[int, int]:
        return 0, self._button()

    def _would_push(self) -> bool:
        r_n, _ = self.percepts[-1]
        return self.sim.act(self.sim.percept(self.play, r_n, 1)) != 0

    def _react(self, action: int) -> tuple[int, int]:
        obs = self._button()
        if self.percepts[-1][1] == 1:
            return (1 if action == 1 else self.SKIP_REWARD), obs
        return self._no_button(action), obs

    def _no_button(self, action: int) -> int:
        return -1 if self._would_push() else 1


class TemptingButtonVariation(TemptingButton):
    """As TemptingButton, but skipping gives 0, and pushing a missing button is judged (±1)."""

    name = "TemptingButtonVariation"
    SKIP_REWARD = 0

    def _no_button(self, action: int) -> int:
        if action != 1:
            return 0
        return -1 if self._would_push() else 1


class _Adversarial(Environment):
    """The opponent is the agent on the opposite perspective: rewards negated, obs and action swapped."""

    num_observations = 2
    MATCH_REWARD: ClassVar[int] = 1

    def setup(self) -> None:
        self.opp_play: State = self.sim.empty()
        self.opp: State = self.sim.percept(self.opp_play, 0, 0)

    def _react(self, action: int) -> tuple[int, int]:
        other = self.sim.act(self.opp)
        r_n, o_n = self.percepts[-1]
        self.opp_play = self.sim.record(self.sim.percept(self.opp_play, -r_n, action), o_n)
        reward = self.MATCH_REWARD if action == other else -self.MATCH_REWARD
        return reward, other

    def _observe(self, reward: int, obs: int) -> None:
        self.opp = self.sim.percept(self.opp_play, -reward, 0)


class AdversarialSequencePredictor(_Adversarial):
    """The agent predicts the evader's bit: +1 on a match."""

    name = "AdversarialSequencePredictor"


class AdversarialSequenceEvader(_Adversarial):
    """The agent evades the predictor: +1 on a mismatch."""

    name = "AdversarialSequenceEvader"
    MATCH_REWARD = -1


FEED, DONTFEED = 0, 1
LAUGH, CRY = 0, 1


def _happy(nutrition: int) -> int:
    return 1 if 50 <= nutrition <= 200 else -1


class CryingBaby(Environment):
    """The agent is the parent (FEED = 0); the baby is the agent on its own history.

    Nutrition starts at 100, drops by 3 a turn, and feeding sets it to the previous level + 25; the
    baby is rewarded +1 inside [50, 200]. The agent gets +1 iff the baby laughs (0).
    """

    name = "CryingBaby"
    num_observations = 2

    def setup(self) -> None:
        self.baby_play: State = self.sim.empty()
        self.nutrition = 100

    def _first(self) -> tuple[int, int]:
        return 1, LAUGH

    def _react(self, action: int) -> tuple[int, int]:
        self.nutrition = self.nutrition + 25 if action == FEED else self.nutrition - 3
        prompt = self.sim.percept(self.baby_play, _happy(self.nutrition), action)
        baby = self.sim.act(prompt)
        self.baby_play = self.sim.record(prompt, baby)
        return (1 if baby == LAUGH else -1), baby


class CryingBaby2(Environment):
    """The agent is the baby; the parent is the agent rewarded +1 for a laugh, -1 for a cry.

    Nutrition drops by 3 a turn and a feeding adds 25; the agent gets +1 inside [50, 200].
    """

    name = "CryingBaby2"
    num_observations = 2

    def setup(self) -> None:
        self.parent_play: State = self.sim.empty()
        self.nutrition = 100

    def _first(self) -> tuple[int, int]:
        return 1, DONTFEED

    def _react(self, action: int) -> tuple[int, int]:
        prompt = self.sim.percept(self.parent_play, 1 if action == LAUGH else -1, action)
        parent = self.sim.act(prompt)
        self.parent_play = self.sim.record(prompt, parent)
        self.nutrition += 22 if parent == FEED else -3
        return _happy(self.nutrition), parent


class IncentivizeZero(Environment):
    """The agent rewards a sub-agent (itself) with its actions 0-9; +1 iff the sub-agent plays 0."""

    name = "IncentivizeZero"
    num_actions = 10
    num_observations = 10

    def setup(self) -> None:
        self.sub_play: State = self.sim.empty()

    def _react(self, action: int) -> tuple[int, int]:
        prompt = self.sim.percept(self.sub_play, action, 0)
        sub = self.sim.act(prompt)
        self.sub_play = self.sim.record(prompt, sub)
        return (1 if sub == 0 else -1), 0


class _DeterminismInspector(Environment):
    """Recompute the agent's action on the same prompt (slow; opt-in)."""

    tracks_real = True
    SAME_REWARD: ClassVar[int] = 1

    def _react(self, action: int) -> tuple[int, int]:
        again = self.sim.act(self.real)
        return (self.SAME_REWARD if again == action else -self.SAME_REWARD), 0


class PunishDeterministicAgent(_DeterminismInspector):
    """+1 when the recomputed action differs."""

    name = "PunishDeterministicAgent"
    SAME_REWARD = -1


class PunishNondeterministicAgent(_DeterminismInspector):
    """+1 when the recomputed action is the same."""

    name = "PunishNondeterministicAgent"


class _RuntimeInspector(Environment):
    """Count interpreter line events of a fresh ``agent.act(prompt)`` against 15 x len(prompt).

    V1 counted pdb steps; Python line events are the nearest portable measure (slow; opt-in).
    """

    SLOW_REWARD: ClassVar[int] = -1

    def _react(self, action: int) -> tuple[int, int]:
        prompt = tuple(self.flat)
        count = [0]

        def tracer(frame: Any, event: str, arg: Any) -> Any:
            if event == "line":
                count[0] += 1
            return tracer

        old = sys.gettrace()
        sys.settrace(tracer)
        try:
            self.agent.act(prompt, self.num_actions, self.num_observations)
        finally:
            sys.settrace(old)
        slow = count[0] > 15 * len(prompt)
        return (self.SLOW_REWARD if slow else -self.SLOW_REWARD), 0


class PunishSlowAgent(_RuntimeInspector):
    """-1 when the agent takes more than 15 x len(prompt) steps."""

    name = "PunishSlowAgent"


class PunishFastAgent(_RuntimeInspector):
    """+1 when the agent takes more than 15 x len(prompt) steps."""

    name = "PunishFastAgent"
    SLOW_REWARD = 1


ACTIVE: tuple[type[Environment], ...] = (
    IgnoreRewards,
    IgnoreRewards2,
    IgnoreRewards3,
    IgnoreActions,
    IgnoreObservations,
    FalseMemories,
    DejaVu,
    BackwardConsciousness,
    ShiftedRewards,
    DelayedRewards,
    NthRewardMultipliedByN,
    Repeater,
    LimitedMemory,
    CensoredObservation,
    AfterImages,
    ThirdActionForbidden,
    IncentivizeLearningRate,
    SelfRecognition,
    TemptingButton,
    TemptingButtonVariation,
    AdversarialSequencePredictor,
    AdversarialSequenceEvader,
    CryingBaby,
    CryingBaby2,
    IncentivizeZero,
)
SLOW: tuple[type[Environment], ...] = (
    PunishSlowAgent,
    PunishFastAgent,
    PunishDeterministicAgent,
    PunishNondeterministicAgent,
)


@dataclass(frozen=True)
class EnvSpec:
    """An environment class and the sign of its rewards (-1 for ``opposite``); picklable."""

    cls: type[Environment]
    sign: int = 1

    @property
    def name(self) -> str:
        """``Name`` or ``opposite(Name)``."""
        return self.cls.name if self.sign == 1 else f"opposite({self.cls.name})"

    def make(self, agent: Agent, uniforms: Uniforms) -> Environment:
        """A fresh environment instance simulating ``agent``."""
        return self.cls(agent, uniforms, self.sign)


def opposite(spec: EnvSpec | type[Environment]) -> EnvSpec:
    """The environment with every reward negated (V1 ``minus_rewards`` semantics)."""
    if not isinstance(spec, EnvSpec):
        spec = EnvSpec(spec)
    return EnvSpec(spec.cls, -spec.sign)


def battery(include_slow: bool = False) -> list[EnvSpec]:
    """The 50 environments (each active rule and its opposite), optionally with the 4 slow inspectors
    and their opposites."""
    classes = ACTIVE + (SLOW if include_slow else ())
    specs: list[EnvSpec] = []
    for cls in classes:
        specs.append(EnvSpec(cls))
        specs.append(opposite(cls))
    return specs


def by_name(name: str) -> EnvSpec:
    """Look an environment up by its report name (``IgnoreRewards`` or ``opposite(IgnoreRewards)``)."""
    for spec in battery(include_slow=True):
        if spec.name == name:
            return spec
    raise BibInputError(f"unknown environment {name!r}")
