"""Files ``bib`` reads at run time, shipped inside the package and found through ``importlib.resources``.

- ``published/voe_anchors.csv``: published VOE accuracies (the leaderboard's anchors).
- ``baselines/results.csv``: our observers' accuracies, the default table of ``bib leaderboard``.
- ``baselines/agent_results.csv``: our observers' accuracies on AGENT's scenarios that bib translates (issue 43), the
  "ours" of the AGENT board ``bib leaderboard`` prints when its table has none.
- ``published/infant_pilot.csv``: the BIB infant pilot summaries (power analysis, example data).
- ``published/meg_cliffworld.csv``: the MEG paper's CliffWorld tables (Appendix D.1), for ``bib meg cliffworld --paper``.
- ``published/reflection_table1_environments.csv``: the extended-environments library's results behind Table 1
  (every agent, environment, seed and length), for ``bib.reflection.published``.
- ``looking_times/example.csv``: SYNTHETIC example looking times (the demo's analysis input).
- ``ratings/example/*_ratings.csv``: SYNTHETIC adult surprise ratings of the infant-pilot set (20 raters), written by
  ``bib simulate-ratings`` (data/README.md).
- ``analysis/infant-pilot.toml``: the analysis spec of the infant pilot (the demo's).
- ``stimuli/*.toml``: the built-in stimulus specs (``bib generate bib-eval``).

In a checkout, ``baselines/results.csv``, ``baselines/agent/results.csv``, ``data/published``, ``data/looking_times``, ``data/ratings``, ``stimuli`` and ``analysis/infant-pilot.toml`` are
links to these files, so the paths the docs use work there too.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources import files
from pathlib import Path


def resource(name: str) -> Path:
    """The path of the packaged file ``name`` (e.g. ``published/voe_anchors.csv``).

    Raises:
        FileNotFoundError: no such resource (a packaging error, not a user error).
    """
    return _packaged(name, Path.is_file, "resource")


def resource_dir(name: str) -> Path:
    """The path of the packaged folder ``name`` (e.g. ``stimuli``).

    Raises:
        FileNotFoundError: no such folder (a packaging error, not a user error).
    """
    return _packaged(name, Path.is_dir, "resource folder")


def _packaged(name: str, exists: Callable[[Path], bool], what: str) -> Path:
    path = Path(str(files(__name__).joinpath(name)))
    if not exists(path):
        raise FileNotFoundError(f"bib is missing its {what} {name!r} (looked at {path}); reinstall the package")
    return path
