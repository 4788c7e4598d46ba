"""Build a stimulus set: episodes (JSON), optional videos and the manifest; parallel, streaming, resumable.

Work is split into units (one pair of an evaluation condition, or one background episode).
Each unit is generated from its own seed (:func:`bib.tasks.unit_seed`), so the output is
byte-identical for any worker count. A rerun into the same folder keeps every unit whose files
match the hashes in the manifest (and whose recorded seed is the unit's seed under the current base
seed) and only builds the rest; a video is kept only when its size, frame rate and frame count
are what the current render settings give and its task's render stamp (``render.json``, every
render setting: :mod:`bib.stimuli.render_stamp`) is the current one. :func:`build_spec` builds a whole
:class:`~bib.stimuli.spec.StimulusSpec` and writes the resolved ``spec.toml`` (rerunnable) and,
for lab sets, ``orders.csv``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bib.episode import Episode, load_episode, save_episode
from bib.guard import load_toml, output_path
from bib.io import append_bytes, atomic_open, atomic_write_text, check_space, ensure_dir, folder_bytes, no_space
from bib.parallel import check_scheduler, map_ordered
from bib.progress import track
from bib.render.frames import RenderSettings, episode_frame_count
from bib.render.video import CODECS, check_video, codec_for, render_episodes
from bib.stimuli import render_stamp
from bib.stimuli.complete import mark_complete, mark_started
from bib.stimuli.manifest import COLUMNS, MANIFEST, format_rows, iter_manifest, read_manifest, row_is_intact
from bib.tasks import get_task, make_unit, unit_id, unit_seed
from bib.tasks.difficulty import DECIMALS, pair_difficulty, pair_evidence
from bib.tasks.options import LEGACY, TaskOptions
from bib.tasks.registry import design_group

if TYPE_CHECKING:
    from bib.io import OutputFolder
    from bib.stimuli.spec import StimulusSpec

@dataclass(frozen=True)
class Job:
    """One unit of work (picklable, sent to worker processes)."""

    task: str
    index: int
    seed: int
    out: str
    video: bool
    settings: RenderSettings
    codec: str
    per_trial: bool
    options: TaskOptions = LEGACY

    @property
    def unit_id(self) -> str:
        return unit_id(self.task, self.index)

    @property
    def pair_ids(self) -> list[str]:
        """Ids of the unit's pairs (or of its background episode)."""
        return [unit_id(self.task, self.index + j) for j in range(self.options.group_size)]

    @property
    def n_episodes(self) -> int:
        """Episodes the unit yields."""
        return 2 * self.options.group_size if get_task(self.task).kind == "evaluation" else 1


@dataclass(frozen=True)
class BuildSummary:
    """What a build did: units built and kept, episodes in the manifest, output folder."""

    out: Path
    built: int
    kept: int
    episodes: int


#: The first line of a set's spec.toml when it was built with ``--limit`` (its counts are not the spec's).
LIMIT_NOTE = "built with --limit {limit} (at most {limit} units per task)"


def built_limit(root: str | os.PathLike[str]) -> int | None:
    """The ``--limit`` a set in ``root`` was built with (from its spec.toml's first line), or None."""
    import re

    try:
        with open(Path(root) / "spec.toml", encoding="utf-8") as fh:
            first = fh.readline()
    except OSError:
        return None
    pattern = re.escape("# " + LIMIT_NOTE).replace(re.escape("{limit}"), r"(\d+)")
    found = re.match(pattern, first.strip())
    return int(found.group(1)) if found else None


def _number(x: float | None) -> str:
    """A manifest number: 4 decimals, ``""`` for None."""
    return "" if x is None else f"{x:.{DECIMALS}f}"


def design_columns(episodes: Sequence[Episode]) -> dict[str, dict[str, str]]:
    """Episode id -> the manifest's design columns (``variant``, ``twin_id``, ``difficulty``, ``beta``, ``evidence``).

    A pair's difficulty is the one its episodes record, or else (sets built without the
    controlled-set options) :func:`bib.tasks.difficulty.pair_difficulty` of the pair; its evidence
    is :func:`bib.tasks.difficulty.pair_evidence` (``""`` without ``beta``).
    """
    pairs: dict[str, dict[str, Episode]] = {}
    for ep in episodes:
        if ep.pair_id is not None:
            pairs.setdefault(ep.pair_id, {})[ep.outcome] = ep
    evidence = {pid: pair_evidence(p["expected"], p["unexpected"]) for pid, p in pairs.items()
                if {"expected", "unexpected"} <= set(p)}
    out = {}
    for ep in episodes:
        difficulty = ep.difficulty
        pair = pairs.get(ep.pair_id or "", {})
        if difficulty is None and {"expected", "unexpected"} <= set(pair):
            difficulty = pair_difficulty(pair["expected"], pair["unexpected"])
        out[ep.id] = {"variant": ep.variant, "twin_id": ep.twin_id or "", "difficulty": _number(difficulty),
                      "beta": _number(ep.beta), "evidence": _number(evidence.get(ep.pair_id or ""))}
    return out


def build_unit(job: Job) -> list[dict[str, object]]:
    """Generate one unit, write its episode files (and videos); return its manifest rows."""
    root = Path(job.out)
    rows = []
    episodes = make_unit(job.task, job.index, job.seed, job.options)
    design = design_columns(episodes)
    videos = [f"videos/{ep.id}{CODECS[job.codec]}" if job.video else "" for ep in episodes]
    if job.video:  # the unit's episodes together: the trials they share are drawn and encoded once
        per_trial = root / "videos" / "trials" if job.per_trial else None
        render_episodes(episodes, [output_path(root, *v.split("/")) for v in videos], job.settings, job.codec, per_trial)
    for ep, video_rel in zip(episodes, videos):
        rel = f"episodes/{ep.id}.json"
        text = save_episode(ep, output_path(root, *rel.split("/")), durable=False)  # verified by hash on resume
        rows.append(
            {
                "episode_id": ep.id,
                "pair_id": ep.pair_id or "",
                "task": ep.task,
                "condition": ep.condition,
                "outcome": ep.outcome,
                "seed": ep.seed,
                "n_trials": len(ep.trials),
                "n_steps": ep.n_steps,
                "episode_path": rel,
                "video_path": video_rel,
                "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                **design[ep.id],
            }
        )
    return rows


def _video_matches(out: Path, row: dict[str, str], job: Job) -> bool:
    """True when the row's video has the size, frame rate and frame count the job's settings give."""
    import cv2

    if not row["video_path"].endswith(CODECS[job.codec]):
        return False
    ep = load_episode(out / row["episode_path"])
    want = (*job.settings.frame_size(ep.width, ep.height), job.settings.fps, episode_frame_count(ep, job.settings))
    cap = cv2.VideoCapture(str(out / row["video_path"]))
    try:
        if not cap.isOpened():
            return False
        props = (cv2.CAP_PROP_FRAME_WIDTH, cv2.CAP_PROP_FRAME_HEIGHT, cv2.CAP_PROP_FPS, cv2.CAP_PROP_FRAME_COUNT)
        return tuple(int(round(cap.get(p))) for p in props) == want
    finally:
        cap.release()


def _row_ok(out: Path, row: dict[str, str], job: Job) -> bool:
    if not row_is_intact(out, row, job.video):
        return False
    if row["seed"] != str(unit_seed(job.seed, job.task, job.index, job.options)):
        return False
    if job.video and not _video_matches(out, row, job):
        return False
    if job.video and job.per_trial:
        ext = CODECS[job.codec]
        trials = out / "videos" / "trials"
        return all((trials / f"{row['episode_id']}-trial{k}{ext}").is_file() for k in range(int(row["n_trials"])))
    return True


@dataclass
class Plan:
    """The units of a build, in order, without listing them (memory does not grow with their number).

    A unit's *key* is ``(rank of its task in the build, index of its first pair)``; units are built
    and listed in the manifest in key order.
    """

    tasks: tuple[tuple[str, int, TaskOptions], ...]
    """``(task id, units' pair count, options)`` in build order."""
    seed: int
    out: str
    video: bool
    settings: RenderSettings
    codec: str
    per_trial: bool

    def __post_init__(self) -> None:
        self._ranks = {t: (r, c, o.group_size) for r, (t, c, o) in enumerate(self.tasks)}

    def job(self, rank: int, index: int) -> Job:
        task, _, o = self.tasks[rank]
        return Job(task, index, self.seed, self.out, self.video, self.settings, self.codec, self.per_trial, o)

    def jobs(self) -> Iterator[tuple[tuple[int, int], Job]]:
        """``(key, job)`` of every unit, in key order."""
        for rank, (_, count, o) in enumerate(self.tasks):
            for i in range(0, count, o.group_size):
                yield (rank, i), self.job(rank, i)

    def n_episodes(self) -> int:
        """Episodes of the whole plan (a pair is two)."""
        return sum(count * (2 if get_task(t).kind == "evaluation" else 1) for t, count, _ in self.tasks)

    def n_units(self) -> int:
        return sum(-(-count // o.group_size) for _, count, o in self.tasks)

    def key(self, row: dict[str, str]) -> tuple[int, int] | None:
        """The key of the unit a manifest row belongs to, or None when the unit is not in this build."""
        found = self._ranks.get(row["task"])
        if found is None:
            return None
        rank, count, g = found
        pid = row["pair_id"] or row["episode_id"]
        rest = pid[len(row["task"]) + 1 :] if pid.startswith(row["task"] + "-") else ""
        if not rest.isdigit():
            return None
        start = int(rest) - int(rest) % g
        return (rank, start) if start < count else None


def _groups(rows: Iterator[dict[str, str]], plan: Plan) -> Iterator[tuple[tuple[int, int] | None, list[dict[str, str]]]]:
    """Consecutive rows of one unit (a unit's rows are written together), with the unit's key
    (None: a unit of another set, whose rows come one by one)."""
    key: tuple[int, int] | None = None
    group: list[dict[str, str]] = []
    for row in rows:
        k = plan.key(row)
        if group and (k is None or k != key):
            yield key, group
            group = []
        key = k
        group.append(row)
    if group:
        yield key, group


@dataclass
class _Kept:
    """Where the manifest rewritten at the start of a build keeps what: other sets' rows, then the
    complete units of this build in runs of ascending key (byte ranges of the manifest)."""

    others: tuple[int, int] = (0, 0)
    runs: list[tuple[int, int]] = field(default_factory=list)
    n_other_rows: int = 0
    n_units: int = 0
    n_rows: int = 0


_MANIFEST_PARTS = (".manifest.others.tmp", ".manifest.kept.tmp")


def _keep_intact(root: Path, plan: Plan, stale: frozenset[str] = frozenset()) -> _Kept:
    """Rewrite ``manifest.csv`` (atomically, streaming) to its intact rows: rows of other units whose
    files match their hashes, then this build's complete units whose files match their hashes,
    seeds and render settings (with video, none of a task in ``stale``: its videos were rendered with
    other settings, :mod:`bib.stimuli.render_stamp`); record where each part lies."""
    kept = _Kept()
    others_path, kept_path = (root / n for n in _MANIFEST_PARTS)
    try:
        return _rewrite_manifest(root, plan, stale, kept, others_path, kept_path)
    except OSError as exc:  # a full disk: the manifest is left as it was
        raise no_space(exc, root / MANIFEST) or exc from None
    finally:
        for part in (others_path, kept_path):
            part.unlink(missing_ok=True)


def _rewrite_manifest(root: Path, plan: Plan, stale: frozenset[str], kept: _Kept, others_path: Path,
                      kept_path: Path) -> _Kept:
    """The body of :func:`_keep_intact`, writing ``others_path`` and ``kept_path`` on the way."""
    import shutil

    run_starts: list[int] = []
    last: tuple[int, int] | None = None
    with open(others_path, "w", encoding="utf-8", newline="") as others, \
            open(kept_path, "w", encoding="utf-8", newline="") as units:
        for key, rows in _groups(iter_manifest(root, strict=False), plan):
            if key is None:
                intact = [r for r in rows if row_is_intact(root, r, bool(r["video_path"]))]
                others.write(format_rows(intact, header=False))
                kept.n_other_rows += len(intact)
                continue
            job = plan.job(*key)
            if job.video and job.task in stale:
                continue
            if len(rows) != job.n_episodes or not all(_row_ok(root, r, job) for r in rows):
                continue
            if last is None or key <= last:
                run_starts.append(units.tell())
            last = key
            units.write(format_rows(rows, header=False))
            kept.n_units += 1
            kept.n_rows += len(rows)
        size_others, size_units = others.tell(), units.tell()
    header = format_rows([], header=True)
    base = len(header.encode("utf-8"))
    kept.others = (base, base + size_others)
    start = base + size_others
    bounds = [*run_starts, size_units]
    kept.runs = [(start + a, start + b) for a, b in zip(bounds, bounds[1:]) if b > a]
    with atomic_open(root / MANIFEST, "w", encoding="utf-8", newline="") as fh:
        fh.write(header)
        for part in (others_path, kept_path):
            with open(part, encoding="utf-8", newline="") as src:
                shutil.copyfileobj(src, fh)
    return kept


def _lines(path: Path, span: tuple[int, int], plan: Plan) -> Iterator[tuple[tuple[int, int], str]]:
    """``(key, line)`` of the manifest rows in the byte range ``span`` of ``path``."""
    import csv

    for line in _span_lines(path, span):
        values = next(csv.reader([line]))
        key = plan.key(dict(zip(COLUMNS, values)))
        assert key is not None
        yield key, line


def _merged(path: Path, spans: Sequence[tuple[int, int]], plan: Plan) -> Iterator[tuple[tuple[int, int], str]]:
    """The rows of several runs of ascending key, merged in key order (a unit's rows stay together;
    a unit found in two runs is taken from the first)."""
    import heapq

    seen: tuple[int, int] | None = None
    source: int | None = None
    for key, run, line in heapq.merge(*[((k, r, ln) for k, ln in _lines(path, span, plan)) for r, span in enumerate(spans)],
                                      key=lambda t: (t[0], t[1])):
        if key == seen and run != source:
            continue  # the same unit again, from another run
        seen, source = key, run
        yield key, line
EPISODE_BYTES = 6_000
"""About the bytes of one episode file (measured: 4.8-4.9 KB for single-object; the estimate of
:func:`episode_bytes` that `bib generate` checks free space against)."""

VIDEO_BYTES = 100_000
"""About the bytes of one episode's H.264 video at 20 px cells (measured: 81-100 KB for single-object);
other cell sizes scale it by the pixel count."""


def episode_bytes(video: bool, settings: RenderSettings, per_trial: bool = False) -> int:
    """The estimated bytes one episode adds to a set: its file, and its video(s) when ``video``."""
    if not video:
        return EPISODE_BYTES
    return EPISODE_BYTES + int(VIDEO_BYTES * (settings.cell_px / 20) ** 2 * (2 if per_trial else 1))


def _check_space(plan: Plan, out: str | os.PathLike[str]) -> None:
    """Refuse when the plan's estimated size, less what ``out`` already holds, exceeds the free space."""
    episodes = plan.n_episodes()
    need = episodes * episode_bytes(plan.video, plan.settings, plan.per_trial)
    need -= sum(folder_bytes(Path(out) / f) for f in ("episodes", "videos"))
    check_space(out, need, f"generating {episodes} episodes" + (" with videos" if plan.video else ""))


def check_build_space(spec: StimulusSpec, out: str | os.PathLike[str], video: bool | None = None,
                      limit: int | None = None) -> None:
    """What :func:`build_spec` checks of the free space, before anything is written (the CLI asks first,
    before the output folder is made).

    Raises:
        BibInputError: the estimated output (:func:`episode_bytes` per episode) does not fit.
    """
    r = spec.render
    with_video = r.video if video is None else video
    plan = Plan(_planned(spec.units, limit, spec.options()), spec.seed, str(Path(out)), with_video, r.settings(),
                r.codec, r.per_trial and with_video)
    _check_space(plan, out)


def _planned(units: Sequence[tuple[str, int]], limit: int | None,
             opts: dict[str, TaskOptions]) -> tuple[tuple[str, int, TaskOptions], ...]:
    """``(task, count, options)`` of each task of a build: ``count`` cut by ``limit`` to whole groups."""
    return tuple((task, n if limit is None else min(n, -(-limit // o.group_size) * o.group_size), o)
                 for task, n in units for o in [opts.get(task, LEGACY)])


def _remove_leftovers(root: Path) -> None:
    """Remove the temporary files (hidden ``.*tmp*``) an interrupted or killed run left in ``episodes/`` and ``videos/``."""
    for sub in ("episodes", "videos"):
        folder = root / sub
        if folder.is_dir():
            for f in folder.rglob(".*"):
                if ".tmp" in f.name and f.is_file():
                    f.unlink(missing_ok=True)


def build(
    units: Sequence[tuple[str, int]],
    seed: int,
    out: str | os.PathLike[str],
    *,
    video: bool = False,
    settings: RenderSettings | None = None,
    codec: str | None = None,
    per_trial: bool = False,
    workers: int = 1,
    scheduler: str | None = None,
    limit: int | None = None,
    options: dict[str, TaskOptions] | None = None,
    finish: bool = True,
) -> BuildSummary:
    """Generate ``n`` units of each ``(task, n)`` into ``out``.

    Args:
        units: ``[(task_id, n), ...]``; n counts pairs for evaluation conditions and episodes for
            background tasks.
        seed: base seed of the set.
        out: output folder (``manifest.csv``, ``episodes/``, ``videos/``).
        video: also render one video per episode.
        settings: render settings (defaults: BIB's 20 px cells, 25 fps).
        codec: ``h264`` (default), ``vp9`` or ``mp4v``.
        per_trial: also write one video per trial under ``videos/trials/``.
        workers: local worker processes.
        scheduler: Dask scheduler address, instead of local processes.
        limit: build at most this many units per task (for trying a big spec); with twins, this
            many pairs rounded up to whole groups.
        options: generation options per task id (:mod:`bib.tasks.options`; default: none, BIB's
            design). With twins ``n`` must be even; a unit is then a pair and its twin.
        finish: write the set's completion marker at the end (:mod:`bib.stimuli.complete`; it says
            "being written" from the start); :func:`build_spec` writes it itself, after its own files.
    """
    opts = options or {}
    for task, n in units:
        get_task(task)  # fail early on an unknown id
        if n < 0:
            raise ValueError(f"negative count {n} for task {task}")
    s = settings or RenderSettings()
    chosen = codec_for("x.mp4", codec) if video else "h264"
    if video:
        check_video(chosen, s)  # before anything is written
    check_scheduler(scheduler)
    if limit is not None and limit < 0:
        raise ValueError(f"negative limit {limit}")
    plan = Plan(_planned(units, limit, opts), seed, str(Path(out)), video, s, chosen, per_trial)
    _check_space(plan, out)
    root = ensure_dir(out)
    mark_started(root)  # before any other write: a reader refuses the set until mark_complete
    ensure_dir(root / "episodes")
    if video:
        ensure_dir(root / "videos")
    _remove_leftovers(root)
    current = render_stamp.stamp(s, chosen)
    tasks = [t for t, _, _ in plan.tasks]
    stale = render_stamp.stale_tasks(root, tasks, current) if video else frozenset()
    kept = _keep_intact(root, plan, stale)  # drops rows whose files are missing or changed
    if video:  # from here on, the manifest lists only videos of these settings for these tasks
        render_stamp.write_stamps(root, tasks, current)
    manifest_path = root / MANIFEST

    def todo() -> Iterator[Job]:
        done = (k for k, _ in _merged(manifest_path, kept.runs, plan))
        nxt = next(done, None)
        for key, job in plan.jobs():
            while nxt is not None and nxt < key:
                nxt = next(done, None)
            if nxt != key:
                yield job

    n_todo = plan.n_units() - kept.n_units
    built_rows = 0
    with open(manifest_path, "ab", buffering=0) as manifest:
        manifest.seek(0, os.SEEK_END)
        built_start = manifest.tell()
        results: Iterator[list[dict[str, object]]] = map_ordered(build_unit, todo(), workers=workers, scheduler=scheduler)
        # closing: Ctrl-C or an error in this loop stops the pool during the unwind, not when the
        # generator (held by the traceback's frames) is collected
        with closing(results):
            for rows in track(results, total=n_todo, description="generating"):
                append_bytes(manifest, format_rows(rows, header=False).encode("utf-8"), manifest_path)  # whole rows or none
                built_rows += len(rows)
        built_end = manifest.tell()
    runs = [*kept.runs, (built_start, built_end)] if built_end > built_start else kept.runs
    if len(runs) > 1:  # kept units and new ones interleave: list them in unit order
        with atomic_open(manifest_path, "w", encoding="utf-8", newline="") as fh:
            fh.write(format_rows([], header=True))
            fh.writelines(_span_lines(manifest_path, kept.others))
            fh.writelines(line for _, line in _merged(manifest_path, runs, plan))
    if finish:
        mark_complete(root)
    return BuildSummary(out=root, built=n_todo, kept=kept.n_units,
                        episodes=kept.n_other_rows + kept.n_rows + built_rows)


def _span_lines(path: Path, span: tuple[int, int]) -> Iterator[str]:
    """The lines of ``path`` that start in the byte range ``span``, decoded."""
    start, end = span
    with open(path, "rb") as fh:
        fh.seek(start)
        while fh.tell() < end:
            raw = fh.readline()
            if not raw:
                return
            yield raw.decode("utf-8")


PROBE_ATTEMPTS = 60
"""Layout attempts a difficulty bin gets in :func:`check_difficulty` before the spec is refused."""


def check_difficulty(spec: StimulusSpec) -> None:
    """Refuse, before anything is written, a difficulty bin no layout of its condition meets.

    For every task with ``difficulty`` bins, the first two units of each (variant, bin) are
    generated (they are regenerated, identically, by the build) with at most
    :data:`PROBE_ATTEMPTS` layout attempts each.

    Raises:
        BibInputError: naming the task entry, the condition and the bin.
    """
    from bib.errors import BibInputError

    options = spec.options()
    for i, t in enumerate(spec.tasks):
        o = options[t.id]
        if o.difficulty is None or t.n == 0:
            continue
        n_var = len(o.variants)
        for b in range(len(o.difficulty) - 1):
            seen = set()
            for v, name in enumerate(o.variants):
                if name in seen:
                    continue
                seen.add(name)
                slot = b * n_var + v  # variant v in bin b, in both orders (the groups the seed gave these slots)
                try:
                    for s in (slot, slot + n_var * o.n_bins):
                        g = design_group(spec.seed, t.id, s, o)
                        make_unit(t.id, g * o.group_size, spec.seed, o, attempts=PROBE_ATTEMPTS)
                except RuntimeError:
                    lo, hi = o.difficulty[b], o.difficulty[b + 1]
                    what = f"{t.id} ({name}) layout" if name else f"{t.id} layout"
                    raise BibInputError(
                        f"{spec.name}: field 'tasks[{i}].difficulty': no {what} met the bin [{lo}, {hi}) cells "
                        f"in {PROBE_ATTEMPTS} tries; widen or drop it") from None


def check_orders(spec: StimulusSpec) -> None:
    """Refuse, before anything is written, ``[orders]`` with a task whose two outcomes do not share
    one familiarization (e.g. efficiency-irrational): presentation orders show both outcomes after
    one familiarization. The first unit of each such task is generated to see (probe, not written).

    Raises:
        BibInputError: naming the task entry and the condition.
    """
    from bib.errors import BibInputError
    from bib.tasks.registry import pairs_of

    if spec.orders is None:
        return
    options = spec.options()
    for i, t in enumerate(spec.tasks):
        if t.n == 0 or get_task(t.id).kind != "evaluation":
            continue
        for e, u in pairs_of(make_unit(t.id, 0, spec.seed, options[t.id])):
            if e.familiarization != u.familiarization:
                raise BibInputError(
                    f"{spec.name}: field 'orders': task {t.id} (tasks[{i}]) shows its expected and unexpected outcomes "
                    "after different familiarizations, so presentation orders cannot pair them; drop [orders] or the task")


def check_spec(spec: StimulusSpec) -> None:
    """Every check of a spec that needs generation (difficulty bins, orders), before anything is written."""
    check_difficulty(spec)
    check_orders(spec)


def generate_job(spec: StimulusSpec, out: str | os.PathLike[str], *, force: bool = False,
                 append: bool = False, secret: bool = False) -> OutputFolder:
    """The output folder of `bib generate` (checked, nothing written): ``out`` may hold nothing, this
    set (``name`` and ``seed``: a rerun resumes), or, with ``append``, other sets this one is added to.
    ``secret``: the seed was drawn by ``--secret-seed``; the job records the set as ``{"set", "seed",
    "secret": true}`` (:mod:`bib.stimuli.origin`).

    Raises:
        BibInputError: ``out`` is a file, not writable, or holds another set (without ``append``)
            or files that `bib generate` did not write (without ``force``).
    """
    from bib.errors import BibInputError
    from bib.io import FolderLock, OutputFolder, read_provenance

    ident: dict[str, object] = {"set": spec.name, "seed": spec.seed, **({"secret": True} if secret else {})}
    p = Path(out)
    FolderLock(p).check()  # a job writing into it now: say so, rather than what its half-built folder holds
    sets = [ident]
    if p.is_dir() and any(p.iterdir()) and not force:
        doc = read_provenance(p)
        job = doc.get("job") if doc else None
        if isinstance(job, dict) and job.get("command") == "generate" and isinstance(job.get("sets"), list):
            held = list(job["sets"])
        elif doc is None and (p / MANIFEST).is_file():
            held = _legacy_sets(p, spec, ident)
        else:
            raise BibInputError(f"{p}: folder holds files not written by `bib generate`; "
                                "use --force to replace it, or choose another --out")
        if ident not in held:
            if not append:
                names = ", ".join(f"{s.get('set')}" + (f" (seed {_shown(s)})" if s.get("seed") is not None else "")
                                  for s in held) or "another set"
                raise BibInputError(f"{p}: folder holds the set {names}; use --append to add {spec.name} "
                                    f"(seed {_shown(ident)}) to it, --force to replace it, or choose another --out")
            held.append(ident)
        sets = held
    return OutputFolder(p, {"command": "generate", "sets": sets}, force=force, resume=True, checked=True)


def _shown(ident: dict[str, object]) -> object:
    """A set's seed as a message shows it: ``secret`` for one drawn by ``--secret-seed``."""
    from bib.stimuli.origin import SECRET_SEED

    return SECRET_SEED if ident.get("secret") is True else ident.get("seed")


def _legacy_sets(root: Path, spec: StimulusSpec, ident: dict[str, object]) -> list[dict[str, object]]:
    """The sets a folder generated before provenance.json existed holds: its spec.toml's, or, without
    one, this set when the manifest holds only this spec's tasks."""

    try:
        data = load_toml(root / "spec.toml")  # a FIFO or a deep spec.toml is refused, not waited on
        return [{"set": data.get("name"), "seed": data.get("seed")}]
    except (OSError, ValueError):
        pass
    from bib.errors import BibInputError

    try:  # strictly first: a manifest of an older header (before `evidence`) still names its tasks
        rows = read_manifest(root, strict=True)
    except BibInputError:
        rows = read_manifest(root, strict=False)
    tasks = {r["task"] for r in rows}
    if tasks <= {t.id for t in spec.tasks}:
        return [ident]
    return [{"set": "tasks " + ", ".join(sorted(tasks)), "seed": None}]


def build_spec(
    spec: StimulusSpec,
    out: str | os.PathLike[str],
    *,
    video: bool | None = None,
    workers: int = 1,
    scheduler: str | None = None,
    limit: int | None = None,
    record: bool = True,
    checked: bool = False,
) -> BuildSummary:
    """Build every task of ``spec`` into ``out``; write ``spec.toml`` and, if the spec asks, ``orders.csv``.

    Args:
        spec: a validated spec (see :func:`bib.stimuli.spec.load_spec`).
        out: output folder.
        video: render videos (None: as the spec's ``render.video`` says).
        workers: local worker processes.
        scheduler: Dask scheduler address, instead of local processes.
        limit: build at most this many units per task.
        record: write the resolved spec (overrides applied) as ``out/spec.toml``.
        checked: :func:`check_spec` has already passed (the CLI runs it before the output folder
            is touched).
    """
    from bib.stimuli.orders import presentation_orders, write_orders

    r = spec.render
    with_video = r.video if video is None else video
    per_trial = r.per_trial and with_video
    if not checked:
        check_spec(spec)
    summary = build(
        spec.units, spec.seed, out, video=with_video, settings=r.settings(), codec=r.codec,
        per_trial=per_trial, workers=workers, scheduler=scheduler, limit=limit, options=spec.options(), finish=False,
    )
    if record:
        from bib.stimuli.spec import override, spec_to_toml

        resolved = override(spec, "resolved", video=with_video, per_trial=per_trial)
        note = LIMIT_NOTE.format(limit=limit) if limit is not None else ""
        atomic_write_text(summary.out / "spec.toml", spec_to_toml(resolved, note))
    if spec.orders is not None:
        rows = read_manifest(summary.out)
        ext = CODECS[r.codec] if per_trial else None
        orders = presentation_orders(summary.out, rows, [t.id for t in spec.tasks], spec.orders.n_orders, ext, r.settings(),
                                     spec.orders.scheme, spec.seed)
        write_orders(summary.out, orders)
    mark_complete(summary.out)  # last: every episode, video, manifest row, spec.toml and orders.csv is written
    return summary
