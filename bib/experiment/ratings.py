"""``bib experiment SET --ratings --out STUDY/``: an adult surprise-rating study as AGENT ran it (Shu et al. 2021).

Each trial plays one pair's familiarization videos, then ONE of its two test videos, then asks for a
0-100 surprise rating on a slider ("not at all surprising" to "extremely surprising"); every rater
rates every pair once, in AGENT's between-rater design (:func:`bib.analysis.ratings.rating_plan`:
which outcome and in which order come from the study seed and the rater's number; the plans of
raters 1..``raters`` are written into the study, so the page needs no random numbers of its own).

``STUDY/`` holds ``ratings.html`` and ``ratings.js`` (ours; no third-party code, no network),
``experiment.css``, ``study.js`` (the pairs, the plans, the columns, loaded with a ``<script>`` tag
so the study works from ``file://``) and ``videos/`` (the per-trial videos under names made from
their bytes' hash, so a file name never tells the outcome; hard-linked or copied, not re-encoded).
The page shows the trial number, the videos and the slider, never the task, the pair or the outcome.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from bib.analysis.ratings import RATING_COLUMNS, RATINGS_SUFFIX, SCALE_LABELS, RatingProtocol, rating_plan, study_id_of
from bib.errors import BibInputError
from bib.experiment.build import _link_or_copy, study_orders
from bib.report.site import building, output_folder


@dataclass
class RatingStudySummary:
    """What :func:`build_rating_study` wrote."""

    out: Path
    n_pairs: int
    n_raters: int
    n_videos: int


def _hashed_name(path: Path) -> str:
    return f"videos/{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}{path.suffix}"


def rating_pairs(root: Path) -> list[dict[str, object]]:
    """The set's pairs (sorted by pair id) from its first presentation order: ``pair_id, task``, the
    familiarization videos in order, and each outcome's ``episode_id`` and video (paths in the set).

    Raises:
        BibInputError: the set has no orders or per-trial videos (:func:`study_orders`), or a pair lacks an outcome.
    """
    rows = [r for r in study_orders(root) if r["order"] == "1"]
    pairs: dict[str, dict[str, object]] = {}
    for row in sorted(rows, key=lambda r: int(r["position"])):
        pair = pairs.setdefault(row["pair_id"], {"pair_id": row["pair_id"], "task": row["task"], "familiarization": []})
        if row["phase"] == "familiarization":
            pair["familiarization"].append(row["video_path"])  # type: ignore[union-attr]
        else:
            pair[row["outcome"]] = {"episode_id": row["episode_id"], "video": row["video_path"]}
    for pair_id, pair in pairs.items():
        if "expected" not in pair or "unexpected" not in pair:
            raise BibInputError(f"{root / 'orders.csv'}: pair {pair_id} lacks its expected or unexpected test trial")
    return [pairs[k] for k in sorted(pairs)]


def build_rating_study(stimuli: Path, out: Path, *, command: str, seed: int = 0, raters: int = 40,
                       force: bool = False) -> RatingStudySummary:
    """Check the set, then write the rating study into a temporary folder and move it to ``out``.

    Raises:
        BibInputError: no orders, missing videos, an unusable ``--out``; nothing is written then.
    """
    from bib import __version__
    from bib.stimuli.spec import load_spec

    root = Path(stimuli)
    pairs = rating_pairs(root)
    if raters < 2:
        raise BibInputError(f"--raters {raters}: at least 2 (raters come in couples that see complementary outcomes)")
    folder = output_folder(Path(out), "experiment", force)
    spec = load_spec(root / "spec.toml") if (root / "spec.toml").is_file() else None
    name = spec.name if spec is not None else root.resolve().name
    protocol = RatingProtocol(seed=seed)
    names: dict[str, str] = {}
    for pair in pairs:
        for src in [*pair["familiarization"], pair["expected"]["video"], pair["unexpected"]["video"]]:  # type: ignore[index, misc]
            names.setdefault(src, _hashed_name(root / src))
    ids = [{"pair_id": p["pair_id"], "task": p["task"], "expected": p["expected"]["episode_id"],  # type: ignore[index]
            "unexpected": p["unexpected"]["episode_id"]} for p in pairs]  # type: ignore[index]
    study = {
        "name": name, "id": study_id_of(name, ids), "made_by": command, "version": __version__,
        "criteria_hash": protocol.digest(), "protocol": asdict(protocol), "labels": list(SCALE_LABELS),
        "columns": list(RATING_COLUMNS), "suffix": RATINGS_SUFFIX,
        "pairs": [{"pair_id": p["pair_id"], "task": p["task"],
                   "familiarization": [names[v] for v in p["familiarization"]],  # type: ignore[union-attr]
                   "tests": [{"outcome": o, "episode_id": p[o]["episode_id"], "video": names[p[o]["video"]]}  # type: ignore[index]
                             for o in ("expected", "unexpected")]} for p in pairs],
        "plans": [rating_plan(len(pairs), r, seed) for r in range(1, raters + 1)],
    }
    with building(folder, command, "bib.experiment") as site:
        site.copy_static(["ratings.js", "experiment.css"])
        text = "// Written by bib experiment --ratings; the pairs, the raters' plans and the data columns.\n"
        text += f"window.BIB_RATINGS = {json.dumps(study, indent=1, sort_keys=True)};\n"
        site.path("study.js").write_text(text, encoding="utf-8")
        site.page("ratings.html", "ratings.html", title=f"{name}: surprise ratings", study=study)
        site.page("index.html", "ratings.html", title=f"{name}: surprise ratings", study=study)
        for src, dst in names.items():
            _link_or_copy(root / src, site.path(dst))
    return RatingStudySummary(Path(out), len(pairs), raters, len(set(names.values())))
