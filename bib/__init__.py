"""bib: a violation-of-expectation benchmark suite on one procedural gridworld."""

from __future__ import annotations

__version__ = "0.1.0"
