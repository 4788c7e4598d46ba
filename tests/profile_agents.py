"""Hand-made gridworld agents for the `bib profile` tests (imported as ``profile_agents:Class``)."""

from __future__ import annotations

from bib.world.dynamics import STAY


class WallWalker:
    """Always moves north: sooner or later into a wall."""

    def act(self, layout, state):
        return 0


class NotAnAction:
    """Answers with a word."""

    def act(self, layout, state):
        return "north"


class Crashes:
    """Raises from act."""

    def act(self, layout, state):
        raise ZeroDivisionError("no plan")


class NoAct:
    """Has no act method."""

    def move(self, layout, state):
        return STAY


class Stayer:
    """Stays put (ends every trial at once); takes goals and a seed."""

    def __init__(self, goals=(), seed=0):
        self.goals = goals
        self.seed = seed

    def act(self, layout, state):
        return STAY


class BadInit:
    """Its constructor fails."""

    def __init__(self):
        raise RuntimeError("missing weights")

    def act(self, layout, state):
        return STAY
