"""Extended environments: the self-reflection battery, agents, the reality check and the harness."""

from __future__ import annotations

from bib.reflection.agents import Agent, ConstantAgent, FunctionAgent, NaiveLearner, RandomAgent
from bib.reflection.environments import ACTIVE, SLOW, Environment, EnvSpec, battery, by_name, opposite
from bib.reflection.harness import Cell, Measurement, measure, run_battery, run_environment, table
from bib.reflection.policy import IllegalActionError, Policy
from bib.reflection.reality_check import RealityCheck

__all__ = [
    "ACTIVE",
    "SLOW",
    "Agent",
    "Cell",
    "ConstantAgent",
    "EnvSpec",
    "Environment",
    "FunctionAgent",
    "IllegalActionError",
    "Measurement",
    "NaiveLearner",
    "Policy",
    "RandomAgent",
    "RealityCheck",
    "battery",
    "by_name",
    "measure",
    "opposite",
    "run_battery",
    "run_environment",
    "table",
]
