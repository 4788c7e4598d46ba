"""Goal-directedness of agents (Arghal et al.): behavioural suite, perturbations, key rooms, probes, LLM adapter."""

from __future__ import annotations

from bib.agency.agents import AGENT_NAMES, AgentSpec, NoisyAgent, OptimalAgent, make_agents
from bib.agency.env import INVALID, MOVE_NAMES, MOVES, Grid, Rollout, load_grid, optimal_set, run_rollouts
from bib.agency.suite import SUITES, run_suite

__all__ = [
    "AGENT_NAMES", "INVALID", "MOVES", "MOVE_NAMES", "SUITES", "AgentSpec", "Grid", "NoisyAgent", "OptimalAgent",
    "Rollout", "load_grid", "make_agents", "optimal_set", "run_rollouts", "run_suite",
]
