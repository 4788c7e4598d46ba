"""``bib experiment SET --out STUDY/``: a browser looking-time study for a set's presentation orders.

``STUDY/`` holds ``index.html`` (the experimenter's window: form, status, data), ``stimulus.html``
and ``stimulus.js`` (the infant's window, opened and driven by the experimenter's: stimuli and
attention-getters only),
``experiment.js``, ``habituation.js`` (the habituation rule) and ``experiment.css`` (ours; no
third-party code, no network), ``study.js``
(this study's orders, criteria and columns, loaded with a ``<script>`` tag so the study works from
``file://``) and ``videos/`` (the per-trial videos, hard-linked or copied, never re-encoded), so the
folder can be copied to the lab's computer as it is.

The trial-ending rule and its options (play-through, looking measured from the outcome frame,
minimum and maximum trial length, PyHab's look-away and minimum looking) are declared once in
:mod:`bib.stimuli.timing` (:class:`Criteria`); :func:`looking_time` is the rule in Python (for the
tests and to recompute looking times from the raw look log), ``experiment.js`` the same rule in the
page. The set's spec may hold them (``[study]``); the command's options override it.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from bib.errors import BibInputError
from bib.report.site import building, output_folder
from bib.stimuli.timing import END_REASONS, Criteria, looking_time

__all__ = ["END_REASONS", "Criteria", "ExperimentSummary", "build_experiment", "looking_time", "study_criteria"]

#: Extra columns of the trials CSV after the canonical ones: the trial's timing, then the participant
#: record (docs/experiment.md), then what the row belongs to (``study_id``: the study's orders,
#: ``criteria_hash``: :meth:`Criteria.digest`; ``bib analyze`` refuses to join rows that differ in them).
EXTRA_COLUMNS = ("study", "position", "episode_id", "pair_id", "video", "trial_duration_s", "n_looks",
                 "end_reason", "video_s", "looking_from_s", "restarts", "session_date",
                 "trial_exclusion", "session_exclusion", "session_ok", "session_notes", "recording_consent",
                 "hab_role", "habituated_at", "hab_end", "hab_criterion_s", "frames_shown", "stalls", "stall_max_ms",
                 "outcome_shown_s", "outcome_offset_ms", "session_max_stall_ms", "session_max_outcome_offset_ms",
                 "study_id", "criteria_hash")
#: Columns of the raw look log.
LOOK_COLUMNS = ("participant_id", "order", "position", "attempt", "event", "t_s", "clock_ms")


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
    from bib.stimuli.complete import check_complete

    check_complete(root)  # a set being written, or never finished, is refused (issue 39)
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


def study_criteria(stimuli: Path, **options: object) -> Criteria:
    """The trial timing of a study of the set ``stimuli``: the defaults, then the ``[study]`` table of
    the set's ``spec.toml`` (when it has one), then ``options`` that are not None (the CLI's).

    Raises:
        BibInputError: an out-of-range value or min_trial >= max_trial, naming where it came from.
    """
    from bib.stimuli.spec import load_spec

    spec_path = Path(stimuli) / "spec.toml"
    spec = load_spec(spec_path) if spec_path.is_file() else None
    base = spec.study.criteria() if spec is not None and spec.study is not None else Criteria()
    given = {k: v for k, v in options.items() if v is not None}
    return replace(base, **given) if given else base


def _trial_times(row: dict[str, str], root: Path, criteria: Criteria) -> dict[str, float]:
    """``video_s``, ``outcome_s`` (seconds in its video) and ``fps`` of an order row, from the orders' timing columns."""
    from bib.stimuli.orders import ORDERS

    if not row.get("fps"):
        if criteria.needs_video_timing:
            raise BibInputError(f"{root / ORDERS}: no trial timing (fps, video_frames, outcome_frame): the set was generated "
                                "before bib recorded it; generate it again, or use --no-play-through --measure-from start")
        return {"video_s": 0.0, "outcome_s": 0.0, "fps": 0}
    fps = int(row["fps"])
    return {"video_s": int(row["video_frames"]) / fps, "outcome_s": int(row["outcome_frame"]) / fps, "fps": fps}


def build_experiment(stimuli: Path, out: Path, criteria: Criteria | None = None, *, command: str, lab: str = "",
                     practice_trials: int = 2, force: bool = False) -> ExperimentSummary:
    """Check the set, then write the study into a temporary folder and move it to ``out``.

    Raises:
        BibInputError: no orders, missing videos, an unusable ``--out``; nothing is written then.
    """
    from bib import __version__
    from bib.analysis.exclusions import EXCLUSION_CODES, SESSION_OK
    from bib.analysis.schema import COLUMNS, RECORDING_SUFFIX
    from bib.stimuli.spec import load_spec

    root = Path(stimuli)
    rows = study_orders(root)
    criteria = criteria or study_criteria(root)
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
            **_trial_times(row, root, criteria),
        })
    lengths = {len(t) for t in trials.values()}
    study = {
        "name": name, "id": f"{name}-{__import__('hashlib').sha256(json.dumps(trials, sort_keys=True).encode()).hexdigest()[:10]}",
        "made_by": command, "version": __version__, "lab": lab, "criteria": asdict(criteria),
        "criteria_hash": criteria.digest(), "exclusion_codes": EXCLUSION_CODES, "session_ok": list(SESSION_OK),
        "practice_trials": practice_trials, "columns": list(COLUMNS), "extra_columns": list(EXTRA_COLUMNS),
        "look_columns": list(LOOK_COLUMNS), "orders": {str(o): t for o, t in sorted(trials.items())},
        "recording_suffix": RECORDING_SUFFIX,
    }
    with building(folder, command, "bib.experiment") as site:
        site.copy_static(["experiment.js", "habituation.js", "experiment.css", "stimulus.js", "code.js"])
        text = "// Written by bib experiment; the study's orders, criteria and data columns.\n"
        text += f"window.BIB_STUDY = {json.dumps(study, indent=1, sort_keys=True)};\n"
        site.path("study.js").write_text(text, encoding="utf-8")
        site.page("index.html", "index.html", title=f"{name}: looking-time study", study=study, criteria=criteria)
        site.page("stimulus.html", "stimulus.html", study=study)
        site.page("code.html", "code.html", study=study)
        for src, dst in videos.items():
            _link_or_copy(root / src, site.path(dst))
    return ExperimentSummary(out, len(trials), max(lengths), len(videos))
