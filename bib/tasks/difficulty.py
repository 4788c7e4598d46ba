"""Graded difficulty of a pair: the size of its deviation (excess cost, cells) and the evidence it carries (nats).

Two measures, both computed from the generative side only (the layouts, the paths, the stimulus
agent's recorded ``beta``; never from an observer's scores):

**The deviation's size** (in cells: 1 per orthogonal move, sqrt 2 per diagonal; optimal costs in
the key/lock state space of :mod:`bib.world.keylock`). This is what the generator grades and
stratifies on (a spec's ``difficulty`` bins, the episode's ``difficulty`` field and the manifest's
``difficulty`` column):

- :func:`excess_cost` of a trial: its path's cost minus the cost of an optimal path from the
  agent's home to the path's last cell in the trial's layout (0 for an optimal path).
- :func:`pair_difficulty` of a pair, by condition:

  - ``efficiency-path``, ``efficiency-time``: the excess cost of the unexpected test path (the
    familiar curved path, or its prefix to the goal placed closer). Catch pairs (the familiar path
    is the expected one) use the unexpected, novel path's excess cost the same way.
  - ``efficiency-irrational``: the excess cost of the curved test path both episodes share.
  - ``instrumental-no-barrier``, ``-inconsequential``, ``-blocking``: the key's detour in the
    unexpected test layout: the cost of walking to the key and on to the object (holding it)
    minus the cost of the best route to the object. Small means the key lies nearly on the way.
  - ``preference``, ``multi-agent``, ``inaccessible-goal``: None. Their outcomes differ in which
    goal the agent pursues, not in a graded deviation.

**The evidence** (:func:`pair_evidence`, in nats; the manifest's ``evidence`` column, the axis
``bib evaluate`` bins its difficulty curve on). A pair is judged on one number per episode, the
surprise of its test trial, read out as the largest surprise of any move (the benchmark's ``max``
readout). The evidence is how much larger that readout is for the unexpected episode than for the
expected one when the surprise is computed by the generator's own agent model:

- a move's surprise is ``-log pi(move | state)`` under the Boltzmann policy the stimulus agent
  acts from (:class:`bib.tasks.agents.BoltzmannAgent`: ``pi ∝ exp(-beta * (move cost + cost-to-go
  after it))`` over the key/lock planner's values), with the episode's recorded ``beta`` (the unit's);
- the agent's goal is the one its familiarization showed: the goals the familiarization trials of
  the SAME agent (by id) ended on, in order, the first one still reachable (what the generator's
  agent pursues). Where none is reachable, or the test agent is new (multi-agent), the goal is
  unknown: the move is scored under the mixture of the policies towards every object reachable at
  the trial's start, uniform at first and Bayes-updated by each move of the trial;
- the irrational familiarization of ``efficiency-irrational``'s expected episode shows an agent that
  is no Boltzmann agent (it curves where nothing blocks it): its test moves are scored as the
  ``beta -> 0`` limit of the family, uniform over the legal moves (:data:`IRRATIONAL`);
- a move the policy gives probability 0 (it would make the goal unreachable) is scored
  :data:`MAX_SURPRISE` nats, so every pair gets a finite number.

``evidence = max_t surprise(unexpected test move t) - max_t surprise(expected test move t)``, plus,
where the condition registers one (:attr:`bib.tasks.registry.TaskSpec.evidence`), the evidence the
familiarization itself carries. unobserved-constraints registers the familiarization walks' log-likelihood
ratio of the two reveals, ``sum_trials log pi(walk | expected walls) - log pi(walk | unexpected walls)``
(:func:`bib.tasks.unobserved.evidence`): what an observer with the generator's agent and ``beta`` adds to the
unexpected reveal's surprise, ``-log P(reveal | walks)``, over the expected one's (equal priors); its
``at-goal`` tests tie move for move, so this is all of their evidence.
Every condition gets one (None only where the set's agent has no ``beta``: the noise-free planner
of BIB-faithful sets, under which any deviation is infinitely surprising). It is the margin by which
an observer that knows the agent's goal and rationality exactly would call the pair right:
negative when the expected outcome's own noisy moves are more surprising than the unexpected
outcome's deviation (the pair misleads even the model that generated it), small when the two are
close, large when the deviation stands out. The excess cost grades only the unexpected outcome's
path; on bib-ctrl it is the expected outcome's own noise that makes pairs hard (docs/observers.md,
"Results on bib-ctrl"). The familiarization enters through the goal it shows and through
``beta``; its own excess costs do not (the generator's agent ends every familiarization trial on
its goal, so the goal is certain whatever the detours).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from bib.episode import Episode, Trial
from bib.world.dynamics import AgentState, action_between, adjacent_to_lock, legal_actions, step
from bib.world.grid import Layout
from bib.world.keylock import move_costs, optimal_cost
from bib.world.planning import path_cost
from bib.world.terrain import excess_time

DECIMALS = 4
"""Difficulties, evidence and excess costs are rounded to this many decimals where they are stored."""

MAX_SURPRISE = 50.0
"""Surprise (nats) of a move the generator's policy can never make (probability 0): a finite cap."""

IRRATIONAL = frozenset({("efficiency-irrational", "expected")})
"""(condition, outcome) of the episodes whose familiarization shows an irrational agent (not a
Boltzmann agent of any ``beta``): their test moves are scored uniform over the legal moves."""


def excess_cost(trial: Trial) -> float:
    """Cost of the trial's path minus that of an optimal key/lock-space path from home to its last cell (>= 0).

    With mud (:mod:`bib.world.terrain`) both are times: stays included, mud entered at its cost.
    """
    path = trial.path
    if trial.layout.terrain:
        return excess_time(trial.layout, path)
    best = optimal_cost(trial.layout, tuple(path[-1]), AgentState(tuple(path[0])))
    return max(0.0, path_cost(path) - best)


def key_detour(trial: Trial) -> float:
    """How much walking to the key and on to object ``A`` (holding the key) costs more than the best route to ``A``.

    Read in the trial's layout from the agent's home; ``inf`` when the object cannot be reached
    from the key.
    """
    lay = trial.layout
    home, key, obj = lay.agent.home, lay.key, lay.object("A").cell
    if key is None:
        raise ValueError("key_detour needs a layout with a key")
    to_key = optimal_cost(lay, key, AgentState(home))
    onwards = optimal_cost(lay, obj, AgentState(key, True, adjacent_to_lock(lay, key)))
    return max(0.0, to_key + onwards - optimal_cost(lay, obj, AgentState(home)))


def pair_difficulty(expected: Episode, unexpected: Episode) -> float | None:
    """The difficulty of a pair (the measure its condition registers, see the module docstring),
    rounded to :data:`DECIMALS`; None where pairs are not graded."""
    from bib.tasks.registry import REGISTRY

    spec = REGISTRY.get(expected.condition)
    if spec is None or spec.difficulty is None:
        return None
    return round(spec.difficulty(expected, unexpected), DECIMALS)


# ---------------------------------------------------------------- evidence (nats)


def move_log_probs(layout: Layout, state: AgentState, goal: str, beta: float) -> dict[int, float]:
    """``{action: log pi(action | state)}`` of the Boltzmann agent after ``goal`` ({} when ``goal`` is unreachable)."""
    here, moves = move_costs(layout, state, layout.goal_cell(goal))
    if not moves:
        return {}
    logits = [-beta * (c - here) for _, c in moves]
    top = max(logits)
    norm = top + math.log(sum(math.exp(v - top) for v in logits))
    return {a: v - norm for (a, _), v in zip(moves, logits)}


def _reachable(layout: Layout, goal: str, state: AgentState) -> bool:
    if goal == "key" and state.has_key:  # a key already held is no longer a goal
        return False
    try:
        cell = layout.goal_cell(goal)
    except KeyError:
        return False
    return math.isfinite(optimal_cost(layout, cell, state))


def _surprise(log_p: float) -> float:
    return min(MAX_SURPRISE, -log_p)


def move_surprises(trial: Trial, beta: float, preference: Sequence[str] = (), irrational: bool = False) -> list[float]:
    """Surprise (nats) of each move of ``trial`` under the generator's agent model (module docstring).

    Args:
        trial: the trial whose moves are scored (its path, in its layout, from its first cell).
        beta: the agent's rationality.
        preference: the goals the agent is known to pursue, most preferred first (the goals its
            familiarization ended on); the first one reachable is its goal. Empty (or none
            reachable): the goal is unknown, a Bayes-updated uniform mixture over the objects
            reachable at the trial's start.
        irrational: score every move uniform over the legal moves (the ``beta -> 0`` agent).
    """
    lay = trial.layout
    state = AgentState(tuple(trial.path[0]))  # type: ignore[arg-type]
    log_w: dict[str, float] | None = None  # log posterior over the goal when it is unknown
    out = []
    for here, there in zip(trial.path, trial.path[1:]):
        action = action_between(tuple(here), tuple(there))  # type: ignore[arg-type]
        assert action is not None
        if irrational:
            out.append(math.log(len(legal_actions(lay, state.cell, state.unlocked, include_stay=False))))
        else:
            goal = next((g for g in preference if _reachable(lay, g, state)), None)
            if goal is not None:
                out.append(_surprise(move_log_probs(lay, state, goal, beta).get(action, -math.inf)))
            else:
                if log_w is None:
                    hyps = [o.id for o in lay.objects if _reachable(lay, o.id, state)]
                    log_w = {g: -math.log(len(hyps)) for g in hyps}
                joint = {g: w + move_log_probs(lay, state, g, beta).get(action, -math.inf) for g, w in log_w.items()}
                top = max(joint.values(), default=-math.inf)
                if top == -math.inf:  # no hypothesis explains the move: keep the belief
                    out.append(MAX_SURPRISE)
                else:
                    norm = top + math.log(sum(math.exp(v - top) for v in joint.values()))
                    out.append(_surprise(norm))
                    log_w = {g: v - norm for g, v in joint.items()}
        state, _ = step(lay, state, action)
    return out


def shown_goals(trial: Trial) -> tuple[str, ...]:
    """The goals a familiarization trial shows its agent pursuing: its goal, after the key when the agent
    fetched a key it did not need (the object reachable without it: a key-collecting agent, instrumental
    ``via-key`` twins)."""
    if trial.goal is None:
        return ()
    lay = trial.layout
    if trial.goal != "key" and trial.pickup_step() is not None and any(o.id == trial.goal for o in lay.objects) \
            and math.isfinite(optimal_cost(replace(lay, key=None), lay.object(trial.goal).cell)):
        return ("key", trial.goal)
    return (trial.goal,)


def episode_surprise(episode: Episode) -> float | None:
    """The largest surprise of any test move of ``episode`` under the generator's agent model (None without ``beta``)."""
    if episode.beta is None:
        return None
    fam = [t for t in episode.trials if t.phase == "familiarization"]
    irrational = (episode.condition, episode.outcome) in IRRATIONAL
    worst = 0.0
    for t in episode.trials:
        if t.phase != "test":
            continue
        shown = list(dict.fromkeys(g for f in fam if f.agent.id == t.agent.id for g in shown_goals(f)))
        worst = max(worst, *move_surprises(t, episode.beta, shown, irrational), 0.0)
    return worst


def pair_evidence(expected: Episode, unexpected: Episode) -> float | None:
    """The evidence (nats) of a pair: the unexpected test's largest move surprise minus the expected's,
    under the generator's own agent (module docstring), plus the familiarization's own evidence where the
    condition registers one (:attr:`bib.tasks.registry.TaskSpec.evidence`); rounded to :data:`DECIMALS`;
    None without ``beta``."""
    from bib.tasks.registry import REGISTRY

    e, u = episode_surprise(expected), episode_surprise(unexpected)
    if e is None or u is None:
        return None
    spec = REGISTRY.get(expected.condition)
    extra = spec.evidence(expected, unexpected) if spec is not None and spec.evidence is not None else 0.0
    return round(u - e + extra, DECIMALS)


def walk_log_prob(trial: Trial, layout: Layout, goal: str, beta: float) -> float:
    """``log pi(trial's walk)`` in ``layout`` under the Boltzmann agent after ``goal`` (each move's surprise capped
    at :data:`MAX_SURPRISE`, as the evidence's moves are)."""
    state = AgentState(tuple(trial.path[0]))  # type: ignore[arg-type]
    total = 0.0
    for here, there in zip(trial.path, trial.path[1:]):
        action = action_between(tuple(here), tuple(there))  # type: ignore[arg-type]
        assert action is not None
        total -= _surprise(move_log_probs(layout, state, goal, beta).get(action, -math.inf))
        state, _ = step(layout, state, action)
    return total
