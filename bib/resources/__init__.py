"""Files ``bib`` reads at run time, shipped inside the package and found through ``importlib.resources``.

- ``published/voe_anchors.csv``: published VOE accuracies (the leaderboard's anchors).
- ``published/infant_pilot.csv``: the BIB infant pilot summaries (power analysis, example data).
- ``looking_times/example.csv``: SYNTHETIC example looking times (the demo's analysis input).
- ``analysis/infant-pilot.toml``: the analysis spec of the infant pilot (the demo's).

In a checkout, ``data/published``, ``data/looking_times`` and ``analysis/infant-pilot.toml`` are
links to these files, so the paths the docs use work there too.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def resource(name: str) -> Path:
    """The path of the packaged file ``name`` (e.g. ``published/voe_anchors.csv``).

    Raises:
        FileNotFoundError: no such resource (a packaging error, not a user error).
    """
    path = Path(str(files(__name__).joinpath(name)))
    if not path.is_file():
        raise FileNotFoundError(f"bib is missing its resource {name!r} (looked at {path}); reinstall the package")
    return path
