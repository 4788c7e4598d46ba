"""`bib profile`: one agent through every instrument (BIB tasks as the actor, MEG, the extended gridworld
battery, the agency suite, the observers' surprise) on the same layouts; see docs/profile.md."""

from __future__ import annotations

from bib.profile.agents import AGENTS, AgentSpec, register_agent
from bib.profile.instruments import Settings
from bib.profile.result import Profile, ProfileTable

__all__ = ["AGENTS", "AgentSpec", "Profile", "ProfileTable", "Settings", "register_agent"]
