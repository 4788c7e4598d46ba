"""Challenge-platform bundles: a Codabench competition of a ``bib blind`` kit, scored against its key (issue 38).

``bib blind SET --out KIT --key KEY --codabench BUNDLE.zip`` writes, beside the kit and its key, a
competition bundle in Codabench's format (a zip with ``competition.yaml`` at its root, ``version: 2``):

- ``competition.yaml``: title, description, logo, the Docker image the scoring program runs in, the
  pages, one task (reference data + scoring program), one phase and a leaderboard whose columns are
  the mean of conditions (``mean``, ranked) and each condition of the kit (its id), as the scoring
  program writes them;
- ``scoring_program/``: ``metadata.yaml`` (``command: python3 $program/score.py $input $output``) and
  ``score.py``, which calls :func:`run_program` of the ``bib`` installed in the Docker image;
- ``reference_data/key.csv``: the key (Codabench keeps reference data from participants);
- ``starting_kit/``: ``results.csv`` (the results template: every kit id, surprise 0) and
  ``README.md`` (the participant instructions, also a page);
- ``pages/``: overview, submitting (the instructions), evaluation, terms; ``logo.png``.

Codabench runs the scoring program with ``$input/ref`` (the reference data), ``$input/res`` (the
participant's zip, unpacked) and ``$output``. :func:`run_program` reads the one CSV under ``res``,
evaluates it against ``ref/key.csv`` exactly as ``bib evaluate KEY RESULTS`` does
(:func:`bib.api.evaluate`: max readout, bootstrap seed 0) and writes ``$output/scores.json``
(:func:`leaderboard_scores`: the accuracies of ``bib evaluate KEY RESULTS --json``, as fractions, to
the last digit) and ``$output/evaluation.json`` (the whole evaluation). A bad submission (no CSV or
two, ids missing, another kit's ids, a value that is not finite) is one line on stderr and exit
code 2, which Codabench shows as a failed submission with that log.

Nothing in the bundle names the set's seed or a real episode id.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import os
import struct
import sys
import zipfile
import zlib
from pathlib import Path

from bib.errors import BibInputError

KEY_FILE = "key.csv"
"""The key's name in the bundle's reference data (``$input/ref/key.csv`` when Codabench scores)."""
RESULTS_NAME = "results.csv"
PROGRAM_COMMAND = "python3 $program/score.py $input $output"
"""The scoring program's command in its ``metadata.yaml``; Codabench substitutes the three folders."""
PROGRAM = '''"""bib's scoring program for Codabench: $input/res/*.csv against $input/ref/key.csv -> $output/scores.json."""
import sys

from bib.challenge import run_program

sys.exit(run_program(sys.argv[1:]))
'''
DOCKER_IMAGE = "bib-voe:{version}"
"""The default ``docker_image``: an image with this version of ``bib`` installed from its wheel (docs/blind-scoring.md)."""
DESCRIPTION = ("Violation-of-expectation (VOE) pairs: say how surprising each episode of the kit is; "
               "scored by pairwise accuracy per condition.")
MEAN = "mean"
"""The leaderboard's first, ranked column: the mean of the conditions' accuracies."""


def check_bundle_path(bundle: str | os.PathLike[str], kit: str | os.PathLike[str], force: bool = False) -> Path:
    """Refuse (BibInputError, nothing written) a bundle path that is not a ``.zip``, lies inside the kit, is a
    folder, exists without ``force``, or whose folder cannot be written."""
    from bib.stimuli.kit import check_private_file

    b = Path(bundle)
    if b.suffix.lower() != ".zip":
        raise BibInputError(f"--codabench {bundle}: name the bundle's .zip file (Codabench uploads a zip)")
    check_private_file(bundle, kit, option="--codabench", name="the bundle's .zip file",
                       why="the bundle holds the key, keep it apart", force=force)
    parent = b.parent if str(b.parent) else Path(".")
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise BibInputError(f"--codabench {bundle}: cannot write into {parent}")
    return b


def _q(text: str) -> str:
    """A YAML double-quoted scalar (a JSON string is one)."""
    return json.dumps(text)


def _yaml(title: str, conditions: list[str], docker_image: str, start: _dt.date) -> str:
    lines = [
        "# A Codabench competition bundle written by `bib blind --codabench` (docs/blind-scoring.md).",
        "version: 2",
        f"title: {_q(title)}",
        f"description: {_q(DESCRIPTION)}",
        "image: logo.png",
        "registration_auto_approve: true",
        f"docker_image: {_q(docker_image)}",
        "terms: pages/terms.md",
        "pages:",
        "  - title: Overview",
        "    file: pages/overview.md",
        "  - title: Submitting",
        "    file: pages/submitting.md",
        "  - title: Evaluation",
        "    file: pages/evaluation.md",
        "tasks:",
        "  - index: 0",
        f"    name: {_q('pairwise VOE accuracy')}",
        f"    description: {_q('results.csv (episode_id,surprise) scored against the kit key')}",
        "    reference_data: reference_data/",
        "    scoring_program: scoring_program/",
        "phases:",
        "  - index: 0",
        "    name: Test",
        f"    description: {_q('Score every episode of the kit and submit a zip holding results.csv.')}",
        f"    start: {start.month}-{start.day}-{start.year}",
        "    tasks:",
        "      - 0",
        "    starting_kit: starting_kit/",
        "leaderboards:",
        "  - title: Results",
        "    key: main",
        "    submission_rule: Force_Last",
        "    columns:",
    ]
    for i, (key, label) in enumerate([(MEAN, "mean of conditions"), *((c, c) for c in conditions)]):
        lines += [f"      - title: {_q(label)}", f"        key: {_q(key)}", f"        index: {i}",
                  "        sorting: desc", "        precision: 4"]
    return "\n".join(lines) + "\n"


def _logo() -> bytes:
    """A 64 x 64 PNG (BIB green on white, a grid of cells): the competition's image."""
    size, cell = 64, 8
    rows = []
    for y in range(size):
        row = bytearray([0])  # filter: none
        for x in range(size):
            wall = x % cell == 0 or y % cell == 0
            row += bytes((80, 146, 56) if wall else (255, 255, 255))
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + \
        chunk(b"IEND", b"")


def _pages(conditions: list[str], n_episodes: int, note: str | None) -> dict[str, str]:
    public = f"\n**{note}.** The organisers built this kit from a set anyone can rebuild (a tutorial).\n" if note else ""
    overview = f"""# Overview

Each episode of the kit shows an agent in a gridworld: familiarization trials, then a test trial.
In each pair of episodes one test is expected given what the familiarization showed and the other is
not. Your model says how surprising each episode is; a pair counts as right when the unexpected
episode is the more surprising one (a tie counts one half).

The kit holds {n_episodes} episodes of {len(conditions)} conditions ({', '.join(conditions)}), under
opaque ids, in a blind view: no outcome, pair or design field, nothing in a file's name, order or
size. The leaderboard ranks the mean of the conditions' accuracies and shows each condition.
{public}"""
    submitting = f"""# Submitting

1. Get the kit from the organisers (a folder: `episodes/<id>.json`, `kit.csv`, and `videos/` when the set
   has videos). The episode format is bib's episode schema (`bib.episode/1`).
2. Score every episode listed in `kit.csv`: one number per episode, higher = more surprising.
3. Write `{RESULTS_NAME}` with the header `episode_id,surprise` and one row per episode of the kit (the
   starting kit's `{RESULTS_NAME}` is the template: every id, surprise 0). Every id of the kit, no other
   id, each once, and finite numbers only.
4. Zip it (`zip submission.zip {RESULTS_NAME}`) and submit the zip.

With bib installed, a built-in observer or your own class writes the file:

```
bib score inverse-planner KIT --out RUN
bib score my_model:MyObserver KIT --out RUN
```

and `RUN/{RESULTS_NAME}` is the file to zip; `bib check-submission KIT RUN` checks its format first (no key
needed; the kit's `README.md` describes the formats).

A submission that breaks a rule fails with one line in its error log naming the file and the rows.
"""
    evaluation = """# Evaluation

Pairwise accuracy per condition: the share of pairs whose unexpected episode has the higher
surprise, a tie counting 0.5 (bib's `bib evaluate KEY RESULTS`, max readout). The leaderboard's
first column is the mean of the conditions' accuracies; the others are the conditions. The scoring
program also writes the whole evaluation (bootstrap 95% intervals, family averages) as
`evaluation.json` in the submission's output.
"""
    terms = """# Terms

Submit results computed by your model on the kit's episodes only. Do not try to rebuild the set or
to read the key.
"""
    return {"pages/overview.md": overview, "pages/submitting.md": submitting,
            "pages/evaluation.md": evaluation, "pages/terms.md": terms}


def write_codabench(key: str | os.PathLike[str], kit: str | os.PathLike[str], bundle: str | os.PathLike[str], *,
                    title: str | None = None, docker_image: str | None = None,
                    start: _dt.date | None = None) -> Path:
    """Write the Codabench bundle of a kit (``kit``: its folder, for ``kit.csv``) and its key to ``bundle``.

    The zip's entries are written in a fixed order with a fixed time, so the same kit, key, image and
    start date give the same bytes. Returns the bundle's path.

    Raises:
        BibInputError: not a key, or a kit whose ``kit.csv`` is missing.
    """
    from bib import __version__
    from bib.io import atomic_write_bytes
    from bib.stimuli.kit import KIT_LIST, key_note, read_key

    found, fingerprint = read_key(key)
    note = key_note(key)
    kit_list = Path(kit) / KIT_LIST
    if not kit_list.is_file():
        raise BibInputError(f"{kit}: no {KIT_LIST}; the bundle is written from a kit `bib blind` made")
    ids = [line.split(",", 1)[0] for line in kit_list.read_text(encoding="utf-8").splitlines()[1:] if line]
    from bib.tasks import table_order

    present = {r.condition for r in found.refs if r.outcome in ("expected", "unexpected")}
    conditions = [c for c in table_order() if c in present] + sorted(present - set(table_order()))
    image = docker_image or DOCKER_IMAGE.format(version=__version__)
    files: dict[str, bytes] = {
        "competition.yaml": _yaml(title or f"bib VOE challenge (kit {fingerprint})", conditions, image,
                                  start or _dt.datetime.now(_dt.UTC).date()).encode(),
        "logo.png": _logo(),
        "scoring_program/metadata.yaml": f"command: {PROGRAM_COMMAND}\ndescription: {_q('bib: pairwise VOE accuracy against the kit key')}\n".encode(),
        "scoring_program/score.py": PROGRAM.encode(),
        f"reference_data/{KEY_FILE}": Path(key).read_bytes(),
        f"starting_kit/{RESULTS_NAME}": ("episode_id,surprise\n" + "".join(f"{i},0\n" for i in ids)).encode(),
    }
    pages = _pages(conditions, len(ids), note)
    files["starting_kit/README.md"] = pages["pages/submitting.md"].encode()
    files.update({k: v.encode() for k, v in pages.items()})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, files[name])
    out = Path(bundle)
    if str(out.parent):
        out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out, buf.getvalue())
    return out


def leaderboard_scores(evaluation: dict[str, object]) -> dict[str, float]:
    """``{"mean": ..., condition: ...}`` from an evaluation's JSON (``bib evaluate --json``): the numbers of its
    ``overall.mean`` and ``conditions.<c>.accuracy``, unchanged (fractions, every digit)."""
    conds = evaluation["conditions"]
    overall = evaluation["overall"]
    assert isinstance(conds, dict) and isinstance(overall, dict)
    return {MEAN: overall["mean"], **{c: v["accuracy"] for c, v in conds.items()}}


def _submission(res: Path) -> Path:
    csvs = sorted(p for p in res.rglob("*.csv") if p.is_file() and "__MACOSX" not in p.parts)
    if not csvs:
        raise BibInputError(f"{res}: the submission holds no .csv file; zip your {RESULTS_NAME} "
                            "(episode_id,surprise) and submit the zip")
    if len(csvs) > 1:
        shown = ", ".join(str(p.relative_to(res)) for p in csvs[:3])
        raise BibInputError(f"{res}: the submission holds {len(csvs)} .csv files ({shown}); submit only {RESULTS_NAME}")
    return csvs[0]


def score_submission(input_dir: str | os.PathLike[str], output_dir: str | os.PathLike[str]) -> dict[str, float]:
    """Score ``input_dir/res`` against ``input_dir/ref/key.csv`` as ``bib evaluate KEY RESULTS`` does, and write
    ``output_dir/scores.json`` (:func:`leaderboard_scores`) and ``output_dir/evaluation.json``.

    Raises:
        BibInputError: no key, no CSV or several in the submission, or results the key refuses (ids missing or
            unknown, another kit's ids, values that are not finite).
    """
    from bib.api import evaluate
    from bib.io import atomic_write_text

    inp, out = Path(input_dir), Path(output_dir)
    key = inp / "ref" / KEY_FILE
    if not key.is_file():
        raise BibInputError(f"{key}: no key in the reference data (the bundle's reference_data/{KEY_FILE})")
    results = _submission(inp / "res")
    result = evaluate(key, results)
    doc = json.loads(result.to_json_text())
    scores = leaderboard_scores(doc)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "evaluation.json", json.dumps(doc, indent=2) + "\n")
    atomic_write_text(out / "scores.json", json.dumps(scores, indent=2) + "\n")
    return scores


def run_program(argv: list[str]) -> int:
    """The scoring program's entry (``score.py INPUT OUTPUT``): 0 and the scores printed, or 2 and one line on stderr."""
    if len(argv) != 2:
        print("bib: error: usage: score.py INPUT OUTPUT (Codabench's $input and $output)", file=sys.stderr)
        return 2
    try:
        scores = score_submission(argv[0], argv[1])
    except BibInputError as exc:
        print(f"bib: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(scores))
    return 0


__all__ = ["DOCKER_IMAGE", "KEY_FILE", "MEAN", "PROGRAM_COMMAND", "check_bundle_path", "leaderboard_scores",
           "run_program", "score_submission", "write_codabench"]
