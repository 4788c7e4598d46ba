"""``bib profile``: run the instruments for one or more agents, reduce them to :class:`~bib.profile.result.Profile`
objects, and write the output folder whole or not at all.

One agent writes ``profile.json``, ``profile.md``, ``profile.png`` (and ``.svg``), ``episodes/`` (the
agent's own BIB episodes, unless turned off), ``timings.json`` and ``provenance.json``; several agents
write one such folder per agent (named after the agent) plus ``profiles.json``, ``profiles.md`` and
``profiles.png``. The folder is a :class:`bib.io.OutputFolder`: checked before the work, built beside
the target as ``.<name>.tmp-<pid>`` and renamed at the end.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bib.errors import BibInputError
from bib.guard import output_path
from bib.profile.agents import AGENTS, AgentSpec, check_spec
from bib.profile.instruments import INSTRUMENTS, Job, Settings, finite, jobs_for, run_job
from bib.profile.result import Profile, ProfileTable, mean_se
from bib.results import Result


def _by_seed(rows: Sequence[dict[str, Any]], key: str) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = defaultdict(list)
    for r in rows:
        out[r["seed"]].append(r[key])
    return out


def _seed_summary(rows: Sequence[dict[str, Any]], key: str) -> dict[str, Any]:
    """Mean per seed of ``key`` over rows (finite values), then mean and SE over seeds."""
    per_seed = _by_seed(rows, key)
    return mean_se([statistics.fmean(v) if (v := finite(vals)) else None for _, vals in sorted(per_seed.items())])


def _per_condition(rows: Sequence[dict[str, Any]], keys: Sequence[str]) -> dict[str, dict[str, float | None]]:
    """Plain means of ``keys`` per condition (over seeds and units), conditions in registry order."""
    from bib.profile.instruments import conditions

    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[r["condition"]].append(r)
    return {cond: {k: (statistics.fmean(v) if (v := finite([r[k] for r in groups[cond]])) else None) for k in keys}
            for cond in conditions() if cond in groups}


def _measure(results: Sequence[dict[str, Any]], which: str, name: str) -> dict[str, Any]:
    """The measure of one arm (``plain`` or ``reality_check``) from per-seed ``(environment, score, steps)`` rows."""
    from bib.reflection.harness import Cell, summarise

    runs = [[Cell(env, score) for env, score, _ in r[which]] for r in results]
    steps = [s for r in results for _, _, s in r[which]]
    m = summarise(name, which == "reality_check", int(round(statistics.fmean(steps))) if steps else 0, runs)
    return {
        "score": mean_se(m.seed_means),
        "stderr_paper": m.stderr_paper,
        "seed_means": m.seed_means,
        "steps_per_environment": m.steps,
        "environments": m.environments,
    }


def _classic(results: Sequence[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """The classic integer battery's measure (agent and RC), or None for an agent without a history face."""
    classic = [r["classic"] for r in results if r.get("classic")]
    if not classic:
        return None
    return {which: _measure(classic, which, name) for which in ("plain", "reality_check")}


def reduce_results(spec: AgentSpec, settings: Settings, results: Sequence[dict[str, Any]], command: str = "") -> Profile:
    """Reduce the job results of one agent to its :class:`Profile`."""
    bib = [r for r in results if r["kind"] == "bib"]
    battery = sorted((r for r in results if r["kind"] == "self_reflection"), key=lambda r: r["seed"])
    agency = sorted((r for r in results if r["kind"] == "agency"), key=lambda r: r["seed"])
    trials = [{**row, "seed": r["seed"]} for r in bib for row in r["trials"]]
    for row in trials:
        row["reached_goal"] = float(row["reached"])
        row["optimal"] = float(row["optimal"])
        row["bump_share"] = row["bumps"] / max(row["steps"], 1)  # per move, as the agency suite counts bumps
        row["known"], row["unknown"] = row["meg_known"], row["meg_unknown"]
    actor = {
        "episodes": sum(len(r["episodes"]) for r in bib),
        "trials": len(trials),
        "steps": _seed_summary(trials, "steps"),
        "reached_goal": _seed_summary(trials, "reached_goal"),
        "optimal": _seed_summary(trials, "optimal"),
        "bumps": _seed_summary(trials, "bump_share"),
        "per_condition": _per_condition(trials, ("steps", "reached_goal", "optimal", "bump_share")),
    }
    meg = {
        "known": _seed_summary(trials, "known"),
        "unknown": _seed_summary(trials, "unknown"),
        "upper_bound": _seed_summary(trials, "meg_upper_bound"),
        "per_condition": _per_condition(trials, ("known", "unknown")),
    }
    surprise_rows = [{**row, "seed": r["seed"]} for r in bib for row in r["surprise"]]
    surprise: dict[str, Any] = {}
    from bib.evaluation import pair_score

    for name in settings.observers:
        rows = [row for row in surprise_rows if row["observer"] == name]
        surprise[name] = {
            "agent": _seed_summary(rows, "agent"),
            "expected": _seed_summary(rows, "expected"),
            "unexpected": _seed_summary(rows, "unexpected"),
            "below_unexpected": statistics.fmean(pair_score(r["agent"], r["unexpected"]) for r in rows) if rows else None,
            "per_condition": _per_condition(rows, ("agent", "expected", "unexpected")),
        }
    grids = [{**row, "seed": r["seed"]} for r in agency for row in r["grids"]]
    agency_summary: dict[str, Any] = {"grids": len(grids)}
    from bib.profile.instruments import AGENCY_METRICS

    for key in AGENCY_METRICS:
        agency_summary[key] = _seed_summary(grids, key)
    entry = AGENTS.get(spec.name)
    description = entry.description if entry else ("an OpenAI-compatible endpoint" if spec.name == "endpoint"
                                                   else "a user agent class")
    return Profile(
        agent={"name": spec.label, "description": description},
        settings=settings.to_json(),
        actor=actor,
        meg=meg,
        self_reflection={"plain": _measure(battery, "plain", spec.label),
                         "reality_check": _measure(battery, "reality_check", spec.label),
                         "classic": _classic(battery, spec.label)},
        agency=agency_summary,
        surprise=surprise,
        command=command,
    )


def run_profiles(
    specs: Sequence[AgentSpec],
    settings: Settings,
    *,
    workers: int = 1,
    progress: bool = True,
    command: str = "",
    keep_battery: bool = False,
) -> tuple[list[Profile], list[list[dict[str, Any]]], dict[str, Any]]:
    """Run every instrument for every agent.

    Returns:
        ``(profiles, results, timings)``: one Profile per spec, the raw job results per spec (they
        hold the episodes), and the timings (CPU seconds per instrument per agent, and wall time).
    """
    from bib.parallel import map_ordered

    for spec in specs:
        check_spec(spec)
    if workers < 1:
        raise BibInputError(f"--workers must be >= 1, got {workers}")
    jobs: list[Job] = [job for spec in specs for job in jobs_for(spec, settings, keep_battery)]
    start = time.perf_counter()
    endpoint = any(s.name == "endpoint" for s in specs)
    if endpoint:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=workers)
        stream = pool.map(run_job, jobs)
    else:
        pool = None
        stream = map_ordered(run_job, jobs, workers=workers)
    if progress:
        from bib.progress import track

        stream = track(stream, total=len(jobs), description="profile")
    try:
        outputs = list(stream)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    wall = time.perf_counter() - start
    per_spec: list[list[dict[str, Any]]] = [[] for _ in specs]
    timings: dict[str, Any] = {"wall_seconds": wall, "workers": workers, "cpu_seconds": {}}
    n = len(jobs) // len(specs)
    for i, spec in enumerate(specs):
        per_spec[i] = outputs[i * n:(i + 1) * n]
        cpu = {k: 0.0 for k in INSTRUMENTS}
        for r in per_spec[i]:
            for k, v in r["timings"].items():
                cpu[k] += v
        timings["cpu_seconds"][spec.label] = cpu
    profiles = [reduce_results(spec, settings, res, command) for spec, res in zip(specs, per_spec)]
    return profiles, per_spec, timings


# ---------------------------------------------------------------- output folder


def _write_one(folder: Path, profile: Profile, results: Sequence[dict[str, Any]], episodes: bool) -> None:
    """``profile.json``, ``profile.md``, the figure (png and svg) and, optionally, the episodes."""
    from bib.episode import save_episode

    profile.save(folder)
    if not episodes:
        return
    (folder / "episodes").mkdir(exist_ok=True)
    for r in results:
        if r["kind"] == "bib":
            for ep in r["episodes"]:
                save_episode(ep, output_path(folder, "episodes", f"{ep.id}.json"), durable=False)
        elif r["kind"] == "self_reflection" and r.get("episodes"):
            for key, eps in r["episodes"].items():
                which, _ = key.split("/", 1)
                sub = folder / "episodes" / "battery" / which
                sub.mkdir(parents=True, exist_ok=True)
                for ep in eps:
                    save_episode(ep, sub / f"{ep.id}.json", durable=False)


def profile_command(
    agents: Sequence[AgentSpec],
    out: str | os.PathLike[str],
    settings: Settings,
    *,
    workers: int = 1,
    force: bool = False,
    episodes: bool = True,
    battery_episodes: bool = False,
    progress: bool = True,
    argv: Sequence[str] = (),
) -> tuple[Result, dict[str, Any], list[Path]]:
    """Everything ``bib profile`` does: check, run, reduce, write (whole or not at all).

    One agent writes its profile into ``out``; several write one folder per agent (named by
    :attr:`AgentSpec.slug`) and the table. Every folder gets ``timings.json`` (CPU seconds per
    instrument, wall time) and ``out`` its ``provenance.json``.

    Returns:
        ``(result, timings, files)``: the :class:`Profile` (one agent) or :class:`ProfileTable`,
        the timings, and the main files written (json, md).
    """
    from bib.io import OutputFolder, atomic_write_text

    if not agents:
        raise BibInputError("give at least one AGENT")
    labels = [s.label for s in agents]
    if len(set(labels)) != len(labels):
        raise BibInputError(f"AGENT: each agent once, got {', '.join(labels)}")
    job = {"command": "profile", "agents": labels, "settings": settings.to_json(),
           "episodes": bool(episodes), "battery_episodes": bool(battery_episodes)}
    folder = OutputFolder(out, job, force=force)
    command = "bib profile " + " ".join(argv) if argv else ""
    profiles, results, timings = run_profiles(agents, settings, workers=workers, progress=progress, command=command,
                                              keep_battery=battery_episodes)
    with folder as tmp:
        if len(profiles) == 1:
            result: Result = profiles[0]
            _write_one(tmp, profiles[0], results[0], episodes or battery_episodes)
        else:
            result = ProfileTable(list(profiles), command)
            for p, res, spec in zip(profiles, results, agents):
                _write_one(tmp / spec.slug, p, res, episodes or battery_episodes)
            result.save(tmp)
        atomic_write_text(tmp / "timings.json", json.dumps(timings, indent=2) + "\n")
    stem = result.name
    return result, timings, [Path(out) / f"{stem}.json", Path(out) / f"{stem}.md"]
