"""A submitter's side of a ``bib blind`` kit (issue 42 item 6): the kit's README, its sample submission, and
``bib check-submission KIT RESULTS``, which checks a submission's format without the key.

``bib blind`` writes, into the kit (:func:`write_kit_docs`, before the kit is renamed into place):

- ``README.md`` (:func:`kit_readme`): what the kit is, every file it holds, how to score a model on it
  with ``bib score``, and the two results formats accepted, with their columns, types and rules;
- ``sample-submission/``: ``results.csv`` and ``results.steps.parquet`` with surprise 0 at every test step
  of every kit episode (a sample: every pair ties, 50%), in exactly the formats a submission takes.

:func:`check_submission` applies the rules of the readers ``bib evaluate`` and the Codabench scoring program
use (:func:`bib.evaluation.read_results`, :func:`bib.evaluation.read_steps`,
:func:`bib.evaluation.check_steps_agree`, :func:`bib.stimuli.kit.check_results_kit`) to the kit's ids from
``kit.csv`` and, for per-step surprise, the step counts of the kit's episodes: no second copy of the rules.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from bib.results import Result

README = "README.md"
SAMPLE = "sample-submission"
"""The sample submission's folder inside a kit."""


def kit_readme(n_episodes: int, conditions: dict[str, int], folders: list[str], video_suffix: str = ".mp4") -> str:
    """The kit's README: what it is, its files (``folders``: the kit's folders besides the sample; its videos'
    ``video_suffix``), how to score a model and the accepted results formats."""
    from bib.evaluation import RESULTS, STEPS_COLUMNS, steps_path
    from bib.stimuli.kit import KIT_LIST

    steps = steps_path(RESULTS).name
    what = {
        "episodes": "`episodes/<id>.json`: every episode of the kit in its blind view (bib's episode schema, "
                    "`bib.episode/1`), under its opaque id; each file padded with spaces to one size.",
        "videos": f"`videos/<id>{video_suffix}`: the episode's video, padded to one size with a block players skip.",
        "bib-json": "`bib-json/<id>.json`: the episode in BIB's per-frame JSON, padded with spaces to one size.",
    }
    files = [f"- `{README}`: this file.", f"- `{KIT_LIST}`: `episode_id,condition`, one row per episode, sorted by id.",
             *(f"- {what[f]}" for f in folders),
             f"- `{SAMPLE}/{RESULTS}` and `{SAMPLE}/{steps}`: a SAMPLE submission (surprise 0 at every step of every "
             "episode: every pair ties, 50%), in the formats below. Replace it with your model's numbers."]
    conds = "\n".join(f"- {c}: {n}" for c, n in conditions.items())
    types = ", ".join(f"`{c}` ({t})" for c, t in STEPS_COLUMNS.items())
    return f"""# A bib submission kit

This kit holds {n_episodes} violation-of-expectation episodes, by condition:

{conds}

Each shows an agent in a gridworld: familiarization trials, then a test trial. Episodes come in pairs you cannot see: one
test is expected given what the familiarization showed, the other is not. Your model says how
surprising each episode is (higher = more surprising); the organisers score a pair as right when
its unexpected episode is the more surprising one (a tie counts one half), per condition, with a
key that is not in this kit. Ids are opaque and say nothing of the pair or the outcome.

## Files

{chr(10).join(files)}

## Score a model

With bib installed, a built-in observer or your own class scores the kit:

```
bib score inverse-planner KIT --out RUN
bib score my_model:MyObserver KIT --out RUN
```

`RUN/{RESULTS}` and `RUN/{steps}` are the submission. Check its format before you send it
(no key needed; one line and exit code 2 on the first problem):

```
bib check-submission KIT RUN
```

Any other program may write the files itself, in the formats below.

## Results formats

**`{RESULTS}`** (required), one surprise per episode, UTF-8 CSV:

- header `episode_id,surprise`;
- `episode_id`: text, an id of `{KIT_LIST}`; every id of the kit exactly once, no other id;
- `surprise`: a decimal number (`3.25`, `1e-3`), finite (no `nan`, `inf`); the max over the test
  trial's steps when your model gives one value per step.

**`{steps}`** (optional, beside `{RESULTS}`), one surprise per test step, Parquet:

- columns {types}, no empty values;
- one row per step of each episode's test trial: `step` runs 1, 2, ..., n, each once, where n is the
  test trial's number of moves (its `path` length minus one);
- every episode of `{RESULTS}`, no other id; every `surprise` finite, and each episode's max equal to
  its `surprise` in `{RESULTS}`.

With it, the organisers can also score the mean over the steps (`bib evaluate --readout mean`).
"""


def write_kit_docs(folder: str | os.PathLike[str]) -> None:
    """Write :func:`kit_readme` and the sample submission (surprise 0 at every test step) into a kit's folder."""
    import numpy as np

    from bib.episode import load_episode
    from bib.evaluation import RESULTS, steps_path, write_results, write_steps
    from bib.io import atomic_write_text
    from bib.stimuli.kit import read_kit

    root = Path(folder)
    found, _ = read_kit(root)
    steps = [(r.id, np.zeros(load_episode(r.path).test.n_steps)) for r in found.refs]
    sample = root / SAMPLE
    sample.mkdir(exist_ok=True)
    write_steps(steps_path(sample / RESULTS), steps)
    write_results(sample / RESULTS, {eid: 0.0 for eid, _ in steps})
    counts: dict[str, int] = {}
    for r in found.refs:
        counts[r.condition] = counts.get(r.condition, 0) + 1
    folders = [f for f in ("episodes", "videos", "bib-json") if (root / f).is_dir()]
    suffixes = sorted({v.suffix for v in (root / "videos").iterdir()}) if "videos" in folders else [".mp4"]
    atomic_write_text(root / README, kit_readme(len(found.refs), dict(sorted(counts.items())), folders,
                                                "` or `".join(suffixes)))


@dataclass(frozen=True)
class SubmissionCheck(Result):
    """What ``bib check-submission`` found: a submission in the accepted formats for every episode of the kit."""

    name: ClassVar[str] = "check-submission"
    results: Path
    kit: Path
    fingerprint: str
    episodes: int
    steps: Path | None = None
    n_steps: int = 0
    conditions: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        """``{"ok": true, "results", "kit", "fingerprint", "episodes", "steps", "n_steps", "conditions"}``."""
        return {"ok": True, "results": str(self.results), "kit": str(self.kit), "fingerprint": self.fingerprint,
                "episodes": self.episodes, "steps": None if self.steps is None else str(self.steps),
                "n_steps": self.n_steps, "conditions": self.conditions}

    def to_markdown(self) -> str:
        """One line: OK, the episodes and steps checked, the kit."""
        per_step = (f"; {self.steps.name}: {self.n_steps} steps, counts match the test trials, max = surprise"
                    if self.steps is not None else "; no per-step Parquet")
        return (f"OK: {self.results}: {self.episodes} episodes of kit {self.fingerprint}, each once, finite surprise"
                f"{per_step}")


def check_submission(kit: str | os.PathLike[str], results: str | os.PathLike[str]) -> SubmissionCheck:
    """Check a submission's format against a kit, without the key (see the module docstring).

    ``results`` is a ``bib score`` folder or a results CSV; a per-step Parquet beside the CSV
    (:func:`bib.evaluation.steps_path`) is checked too.

    Raises:
        BibInputError: the first problem, in one line: not a kit, results of another kit, a row the results reader
            refuses (ids missing, foreign or repeated, values not finite), or a per-step Parquet that is unreadable,
            of the wrong columns or types, with steps that do not count the test trials', or disagrees with the CSV.
    """
    from bib.episode import load_episode
    from bib.evaluation import check_steps_agree, read_results, read_steps, results_file, steps_path
    from bib.stimuli.kit import check_results_kit, read_kit

    found, fingerprint = read_kit(kit)
    path = results_file(results)
    check_results_kit(path, found, fingerprint, kit, what="the kit")
    per_episode = read_results(path, found)
    steps_file = steps_path(path)
    n_steps = 0
    if steps_file.exists():
        counts = {r.id: load_episode(r.path).test.n_steps for r in found.refs}
        steps = read_steps(steps_file, found, counts)
        check_steps_agree(path, per_episode, steps)
        n_steps = sum(len(v) for v in steps.values())
    conditions: dict[str, int] = {}
    for r in found.refs:
        conditions[r.condition] = conditions.get(r.condition, 0) + 1
    return SubmissionCheck(path, Path(kit), fingerprint, len(per_episode), steps_file if steps_file.exists() else None,
                           n_steps, dict(sorted(conditions.items())))


__all__ = ["README", "SAMPLE", "SubmissionCheck", "check_submission", "kit_readme", "write_kit_docs"]
