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


class Wanderer:
    """Wanders: a uniformly random legal move, never staying (every BIB trial runs to the move limit);
    the user agent of benchmarks/profile_agent.py --user."""

    def __init__(self, rng):
        self.rng = rng

    def act(self, layout, state):
        from bib.world.dynamics import legal_actions

        moves = [a for a in legal_actions(layout, state.cell, state.unlocked) if a != STAY]
        return moves[int(self.rng.integers(len(moves)))] if moves else STAY
