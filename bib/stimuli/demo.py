"""The stimulus step of `bib demo`: a few episodes with videos, validated, plus a contact sheet."""

from __future__ import annotations

from pathlib import Path

from bib.episode import load_episode
from bib.render.video import contact_sheet
from bib.stimuli.build import build
from bib.stimuli.check import check_path

DEMO_UNITS: list[tuple[str, int]] = [("single-object", 3), ("preference", 1), ("multi-agent", 1), ("inaccessible-goal", 1),
                                     ("efficiency-path", 1), ("efficiency-time", 1), ("efficiency-irrational", 1),
                                     ("instrumental-no-barrier", 1), ("instrumental-inconsequential", 1),
                                     ("instrumental-blocking", 1), ("no-navigation", 1), ("multi-agent-background", 1),
                                     ("agent-blocked-instrumental", 1)]
"""Tasks and counts the demo generates (every task family adds itself here)."""


def run(root: Path) -> None:
    """Generate the demo units with H.264 videos under ``root/stimuli`` and validate them."""
    out = root / "stimuli"
    summary = build(DEMO_UNITS, seed=0, out=out, video=True, workers=1)
    report = check_path(out / "episodes")
    first = sorted((out / "episodes").glob("*.json"))[0]
    contact_sheet(load_episode(first).test, out / "contact_sheet.png")
    print(f"stimuli: {summary.episodes} episodes, {report.n_valid} valid, videos in {out / 'videos'}, "
          f"contact sheet {out / 'contact_sheet.png'}")
