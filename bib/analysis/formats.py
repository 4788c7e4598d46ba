"""Looking-time file formats: the registry ``--format`` lists (no pandas import, so ``bib --help`` stays fast)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bib.registry import Registry

IMPORTERS: Registry[Callable[[Path | list[Path], Any], Any]] = Registry("format", lazy=True)
"""Format -> ``reader(path, spec: AnalysisSpec) -> ImportResult``, ``path`` a file, a folder or a list of
them (several session files joined: one header, one file per participant) (a lazy :class:`bib.registry.Registry`:
the readers in :mod:`bib.analysis.importers` are imported on first use)."""
IMPORTERS.register("csv", "bib.analysis.importers:read_csv_format")
IMPORTERS.register("pyhab", "bib.analysis.importers:read_pyhab_format")
