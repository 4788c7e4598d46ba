"""The rebuild attack: regenerate the shipped specs and look a set's episodes up by what they show (issue 38).

The generator is public and seeded. An entrant who wants a kit's outcomes can build every spec that
ships with ``bib`` from its own seed and look each kit episode up in the copy by its content: the
grid, every trial's walls, barriers, key, lock, objects (cell and look), agent (home and look) and
path (:func:`content_key`; nothing of ids, outcomes or names). On a bib-ctrl kit built from the
spec's seed this read the outcome of 98.9% of the pairs.

:func:`rebuild` does the same for ``bib audit``: for every shipped spec whose settings match the
set's (it lists each condition of the set, with the same generation options when the set records
them in its ``spec.toml``), it regenerates, from the spec's own seed, the units at the indices the
set's pair ids name (unit ``k - k % group`` for pair ``<task>-<k>``; every unit up to the set's count
where a pair id does not parse), and reports the share of the set's paired episodes it finds there
and the accuracy of reading each pair's outcome from the copy (a pair found with both outcomes
scores 1 or 0, one that is not found scores 0.5, a coin). A set generated from the spec's seed is
found whole; a ``--secret-seed`` set (:mod:`bib.stimuli.origin`) is not found at all. The audit
FAILs a spec with any episode found.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from bib.episode import Episode
from bib.evaluation import pair_score, pair_up
from bib.stimuli.sets import EpisodeSet


def content_key(episode: Episode) -> str:
    """A digest of what an episode shows: grid and, per trial, walls, barriers, key, lock, objects (cell, shape,
    colour), agent (home, shape, colour) and path; no id, role, outcome or design field."""
    trials = []
    for t in episode.trials:
        lay = t.layout
        trials.append([
            sorted(lay.walls), sorted(lay.barriers), lay.key, lay.lock,
            sorted((o.cell, o.shape, tuple(o.color)) for o in lay.objects),
            sorted((a.home, a.shape, tuple(a.color)) for a in lay.agents),
            [tuple(c) for c in t.path],
        ])
    text = json.dumps([[t.layout.width, t.layout.height] for t in episode.trials] + trials, default=list, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Rebuilt:
    """One shipped spec regenerated against a set."""

    spec: str
    seed: int
    episodes: int
    found: int
    accuracy: float
    """Pairwise accuracy of reading the outcomes from the copy (0.5 = chance)."""
    pairs: int

    @property
    def share(self) -> float:
        """The share of the set's paired episodes found in the copy."""
        return self.found / self.episodes if self.episodes else 0.0

    def to_json(self) -> dict[str, object]:
        """``{"spec", "seed", "episodes", "found", "share", "pairs", "accuracy", "status"}``."""
        return {"spec": self.spec, "seed": self.seed, "episodes": self.episodes, "found": self.found,
                "share": round(self.share, 6), "pairs": self.pairs, "accuracy": round(self.accuracy, 6),
                "status": "FAIL" if self.found else "ok"}


_PAIR = re.compile(r"^(?P<task>.+)-(?P<index>\d{6,})$")


def _units(found: EpisodeSet, options: dict[str, object]) -> dict[str, list[int]]:
    """``{condition: unit indices to regenerate}``: those the set's pair ids name, or every unit up to its count."""
    out: dict[str, set[int]] = {}
    counts: dict[str, set[str]] = {}
    for r in found.refs:
        if r.outcome not in ("expected", "unexpected"):
            continue
        group = options[r.condition].group_size  # type: ignore[attr-defined]
        counts.setdefault(r.condition, set()).add(r.pair_id or r.id)
        m = _PAIR.match(r.pair_id or "")
        if m and m["task"] == r.condition:
            k = int(m["index"])
            out.setdefault(r.condition, set()).add(k - k % group)
    for cond, pair_ids in counts.items():
        if cond not in out:
            group = options[cond].group_size  # type: ignore[attr-defined]
            out[cond] = {i * group for i in range(-(-len(pair_ids) // group))}
    return {c: sorted(v) for c, v in out.items()}


def _set_options(found: EpisodeSet) -> dict[str, object] | None:
    """The generation options the set records (its one ``spec.toml``), or None."""
    from pathlib import Path

    from bib.errors import BibInputError
    from bib.stimuli.spec import load_spec

    if len(found.sets) != 1:
        return None
    try:
        return dict(load_spec(Path(str(found.sets[0]["path"])) / "spec.toml").options())
    except (BibInputError, OSError, KeyError):
        return None


def matching_specs(found: EpisodeSet) -> list[str]:
    """The shipped specs whose settings match the set's: each lists every condition of the set (with the same
    options where the set records them)."""
    from bib.stimuli.spec import builtin_specs, load_spec

    conds = {r.condition for r in found.refs if r.outcome in ("expected", "unexpected")}
    own = _set_options(found)
    out = []
    for name, path in builtin_specs().items():
        opts = load_spec(path).options()
        if conds <= set(opts) and (own is None or all(own.get(c) == opts[c] for c in conds)):
            out.append(name)
    return out


def _regenerate(job: tuple[str, str, int]) -> list[tuple[str, str]]:
    """Worker: ``[(content key, outcome)]`` of unit ``index`` of ``task`` under the shipped spec at ``path``
    (nothing when the unit cannot be generated)."""
    from bib.stimuli.spec import load_spec
    from bib.tasks import make_unit

    path, task, index = job
    spec = load_spec(path)
    try:
        episodes = make_unit(task, index, spec.seed, spec.options()[task])
    except (RuntimeError, ValueError):
        return []
    return [(content_key(ep), ep.outcome) for ep in episodes]


def rebuild(found: EpisodeSet, keys: Mapping[str, str] | None = None, *,
            workers: int = 1, scheduler: str | None = None, progress: bool = True) -> list[Rebuilt]:
    """Regenerate every matching shipped spec (:func:`matching_specs`) and look the set's paired episodes up in it.

    Args:
        found: the set.
        keys: ``{id: content_key}`` of the set's paired episodes when the caller has them (``bib audit`` computes
            them from the blind views it reads anyway); else each episode is read from disk.
        workers, scheduler: as for ``bib generate``.
    """
    from bib.parallel import map_ordered
    from bib.progress import track
    from bib.stimuli.check import load_checked
    from bib.stimuli.spec import builtin_specs, load_spec

    paired = [r for r in found.refs if r.outcome in ("expected", "unexpected")]
    have = dict(keys or {})
    keys = {r.id: have[r.id] if r.id in have else content_key(load_checked(r.path)) for r in paired}
    out = []
    shipped = builtin_specs()  # by path: a folder named like a spec in the working directory is not the spec
    for name in matching_specs(found):
        spec = load_spec(shipped[name])
        units = _units(found, dict(spec.options()))
        jobs: Sequence[tuple[str, str, int]] = [(str(shipped[name]), task, i) for task, idx in sorted(units.items())
                                                for i in idx]
        rows: Iterator[list[tuple[str, str]]] = map_ordered(_regenerate, iter(jobs), workers=workers,
                                                           scheduler=scheduler, local=True)
        if progress:
            rows = track(rows, total=len(jobs), description=f"rebuilding {name}")
        copy = {k: outcome for unit in rows for k, outcome in unit}
        found_ids = {eid for eid, k in keys.items() if k in copy}
        scores = []
        for _cond, pairs in pair_up(paired).items():
            for e, u in pairs:
                read = {eid: {"expected": 0.0, "unexpected": 1.0}.get(copy.get(keys[eid], ""), 0.5) for eid in (e, u)}
                scores.append(pair_score(read[e], read[u]))
        accuracy = sum(scores) / len(scores) if scores else 0.5
        out.append(Rebuilt(name, spec.seed, len(keys), len(found_ids), accuracy, len(scores)))
    return out


__all__ = ["Rebuilt", "content_key", "matching_specs", "rebuild"]
