"""The stimulus step of `bib demo`: a few episodes with videos, validated, plus a contact sheet."""

from __future__ import annotations

from pathlib import Path

from bib.episode import load_episode
from bib.render.video import contact_sheet
from bib.stimuli.build import build
from bib.stimuli.check import check_path
from bib.tasks import conditions, task_ids

DEMO_UNITS: list[tuple[str, int]] = [(t, 1) for t in (*conditions(), *task_ids("background"))]
"""One unit of every evaluation condition and background task of the registry."""


def run(root: Path) -> None:
    """Generate the demo units with H.264 videos under ``root/stimuli`` and validate them."""
    out = root / "stimuli"
    summary = build(DEMO_UNITS, seed=0, out=out, video=True, workers=1)
    report = check_path(out / "episodes")
    first = sorted((out / "episodes").glob("*.json"))[0]
    contact_sheet(load_episode(first).test, out / "contact_sheet.png")
    print(f"stimuli: {summary.episodes} episodes, {report.n_valid} valid, videos in {out / 'videos'}, "
          f"contact sheet {out / 'contact_sheet.png'}")
