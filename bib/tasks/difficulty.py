"""Graded difficulty of a pair and the excess cost of a path: how far the unexpected outcome strays from efficient.

Definitions (in cells: 1 per orthogonal move, sqrt 2 per diagonal; optimal costs in the key/lock
state space of :mod:`bib.world.keylock`):

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

Smaller is harder: an unexpected outcome that strays by 0.4 cell is closer to what a rational
agent might do than one that strays by 4.
"""

from __future__ import annotations

from bib.episode import Episode, Trial
from bib.world.dynamics import AgentState, adjacent_to_lock
from bib.world.keylock import optimal_cost
from bib.world.planning import path_cost

DECIMALS = 4
"""Difficulties and excess costs are rounded to this many decimals where they are stored."""

def excess_cost(trial: Trial) -> float:
    """Cost of the trial's path minus that of an optimal key/lock-space path from home to its last cell (>= 0)."""
    path = trial.path
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
