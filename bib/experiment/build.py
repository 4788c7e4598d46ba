"""``bib experiment SET --out STUDY/``: a browser looking-time study for a set's presentation orders.

``STUDY/`` holds ``index.html`` (the experimenter's form and the stimulus screen),
``experiment.js`` and ``experiment.css`` (ours; no third-party code, no network), ``study.js``
(this study's orders, criteria and columns, loaded with a ``<script>`` tag so the study works from
``file://``) and ``videos/`` (the per-trial videos, hard-linked or copied, never re-encoded), so the
folder can be copied to the lab's computer as it is.

The trial-ending rule is PyHab's standard one: a trial starts at the experimenter's first
look-on key press after the attention-getter; it ends when the infant, having looked for at least
``min_on`` seconds in total, looks away for ``lookaway`` seconds in a row (the trial ends at the
start of that look-away plus ``lookaway``), or at ``max_trial`` seconds. Looking time is the sum of
the looks within the trial. :func:`looking_time` is the same rule in Python (for the tests and to
recompute looking times from the raw look log).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from bib.errors import BibInputError
from bib.report.site import building, output_folder

#: Extra columns of the trials CSV after the canonical ones.
EXTRA_COLUMNS = ("study", "position", "episode_id", "pair_id", "video", "trial_duration_s", "n_looks",
                 "end_reason", "restarts", "session_date")
#: Columns of the raw look log.
LOOK_COLUMNS = ("participant_id", "order", "position", "attempt", "event", "t_s", "clock_ms")


@dataclass(frozen=True)
class Criteria:
    """PyHab's trial-end criteria (seconds): look-away in a row (maxOff), maximum length (maxDur),
    minimum looking before a look-away can end the trial (minOn)."""

    lookaway: float = 2.0
    max_trial: float = 60.0
    min_on: float = 1.0

    def __post_init__(self) -> None:
        if not (self.lookaway > 0 and self.max_trial > 0 and self.min_on >= 0):
            raise BibInputError(f"criteria out of range: {self}")


def looking_time(events: Sequence[tuple[float, str]], criteria: Criteria) -> tuple[float, float, str]:
    """Apply the trial-end rule to a trial's look events.

    Args:
        events: ``(t, "on" | "off")`` in seconds from trial start, in time order; the trial starts
            with a look (``(0, "on")``); an extra ``(t, "end")`` marks the experimenter ending it.

    Returns:
        ``(looking time, trial duration, end reason)`` with the reason ``lookaway``, ``max_trial``
        or ``ended``; a trial whose events stop early runs to ``max_trial`` (with the last state).
    """
    c = criteria
    looking, on_since, off_since, total = True, 0.0, None, 0.0
    for t, kind in [*events, (float("inf"), "eof")]:
        # did the trial end before this event?
        if not looking and off_since is not None and total >= c.min_on and off_since + c.lookaway <= min(t, c.max_trial):
            return total, off_since + c.lookaway, "lookaway"
        if t >= c.max_trial:
            if looking:
                total += c.max_trial - on_since
            return total, c.max_trial, "max_trial"
        if kind == "end":
            if looking:
                total += t - on_since
            return total, t, "ended"
        if kind == "on" and not looking:
            looking, on_since = True, t
        elif kind == "off" and looking:
            looking, off_since = False, t
            total += t - on_since
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass
class ExperimentSummary:
    """What :func:`build_experiment` wrote."""

    out: Path
    n_orders: int
    n_trials: int
    n_videos: int


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def study_orders(root: Path) -> list[dict[str, str]]:
    """The set's order rows, checked: orders exist, every row has a per-trial video on disk."""
    from bib.stimuli.manifest import read_manifest
    from bib.stimuli.orders import ORDERS, read_orders

    if not root.is_dir():
        raise BibInputError(f"{root}: not a folder (give the stimulus set folder)")
    if not read_manifest(root):
        raise BibInputError(f"{root / 'manifest.csv'}: not a stimulus set (no manifest.csv or no episodes)")
    rows = read_orders(root)
    if not rows:
        raise BibInputError(f"{root / ORDERS}: the set has no presentation orders (generate it from a spec with [orders], "
                            "e.g. stimuli/infant-pilot.toml)")
    for row in rows:
        if not row["video_path"]:
            raise BibInputError(f"{root / ORDERS}: order {row['order']} position {row['position']} has no per-trial video "
                                "(generate with per_trial = true)")
        if not (root / row["video_path"]).is_file():
            raise BibInputError(f"{root / row['video_path']}: video of order {row['order']} position {row['position']} is missing")
    return rows


def build_experiment(stimuli: Path, out: Path, criteria: Criteria, *, command: str, lab: str = "",
                     practice_trials: int = 2, force: bool = False) -> ExperimentSummary:
    """Check the set, then write the study into a temporary folder and move it to ``out``.

    Raises:
        BibInputError: no orders, missing videos, an unusable ``--out``; nothing is written then.
    """
    from bib import __version__
    from bib.analysis.schema import COLUMNS
    from bib.stimuli.spec import load_spec

    root = Path(stimuli)
    rows = study_orders(root)
    out = Path(out)
    folder = output_folder(out, "experiment", force)
    spec = load_spec(root / "spec.toml") if (root / "spec.toml").is_file() else None
    name = spec.name if spec is not None else root.resolve().name
    videos: dict[str, str] = {}
    trials: dict[int, list[dict[str, object]]] = {}
    for row in sorted(rows, key=lambda r: (int(r["order"]), int(r["position"]))):
        video = videos.setdefault(row["video_path"], f"videos/{Path(row['video_path']).name}")
        trials.setdefault(int(row["order"]), []).append({
            "position": int(row["position"]), "task": row["task"], "pair_id": row["pair_id"], "phase": row["phase"],
            "outcome": row["outcome"], "episode_id": row["episode_id"], "video": video,
        })
    lengths = {len(t) for t in trials.values()}
    study = {
        "name": name, "id": f"{name}-{__import__('hashlib').sha256(json.dumps(trials, sort_keys=True).encode()).hexdigest()[:10]}",
        "made_by": command, "version": __version__, "lab": lab, "criteria": asdict(criteria),
        "practice_trials": practice_trials, "columns": list(COLUMNS), "extra_columns": list(EXTRA_COLUMNS),
        "look_columns": list(LOOK_COLUMNS), "orders": {str(o): t for o, t in sorted(trials.items())},
    }
    with building(folder, command, "bib.experiment") as site:
        site.copy_static(["experiment.js", "experiment.css"])
        text = "// Written by bib experiment; the study's orders, criteria and data columns.\n"
        text += f"window.BIB_STUDY = {json.dumps(study, indent=1, sort_keys=True)};\n"
        site.path("study.js").write_text(text, encoding="utf-8")
        site.page("index.html", "index.html", title=f"{name}: looking-time study", study=study, criteria=criteria)
        for src, dst in videos.items():
            _link_or_copy(root / src, site.path(dst))
    return ExperimentSummary(out, len(trials), max(lengths), len(videos))
