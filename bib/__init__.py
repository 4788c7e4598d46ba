"""bib: a violation-of-expectation benchmark suite on one procedural gridworld."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "evaluate", "score", "train"]


def __getattr__(name: str) -> object:
    """``bib.score``, ``bib.evaluate`` and ``bib.train`` (:mod:`bib.api`), imported on first use so ``import bib``
    stays light."""
    if name in ("score", "evaluate", "train"):
        import importlib  # by name: the package itself sits above no layer (bib.api is a top layer)

        return getattr(importlib.import_module("bib.api"), name)
    raise AttributeError(f"module 'bib' has no attribute {name!r}")
