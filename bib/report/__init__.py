"""``bib report``: a static site (plain HTML + CSS, a small filter script) from stimulus sets,
evaluation results and analysis reports; see :mod:`bib.report.build` and ``docs/report.md``."""

from __future__ import annotations

from bib.report.build import ReportSummary, build_report

__all__ = ["ReportSummary", "build_report"]
