"""Episode sets: the one reader of a set of episodes (manifests, else episode files) for every command.

:func:`find_episodes` is what ``bib score``, ``evaluate``, ``audit``, ``stats``, ``export``,
``meg episodes``, ``compare``, ``train`` and :mod:`bib.data` read a set with. It returns
:class:`EpisodeRef` rows (no trials are parsed when a manifest describes the set).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bib.errors import BibInputError
from bib.guard import MiB, check_name, load_json, load_toml, read_text
from bib.stimuli.complete import check_complete


@dataclass(frozen=True)
class EpisodeRef:
    """One episode of a set, as far as evaluation needs it (no trials).

    ``twin_id``, ``difficulty`` (the excess cost of the pair's deviation, cells), ``variant`` and
    ``evidence`` (the pair's evidence in nats, :func:`bib.tasks.difficulty.pair_evidence`) come
    from the manifest columns of the same names when a set has them (controlled sets, issue 12);
    None otherwise (``evidence`` is only in manifests: a loose episode file has none). ``task`` is the generating
    task (``condition`` for evaluation episodes; background episodes have ``condition == ""``).
    """

    id: str
    pair_id: str | None
    condition: str
    outcome: str
    path: Path
    twin_id: str | None = None
    difficulty: float | None = None
    variant: str | None = None
    task: str = ""
    evidence: float | None = None


@dataclass
class EpisodeSet:
    """The episodes found under ``--episodes`` (a folder searched recursively, or a manifest).

    Attributes:
        refs: episodes in a stable order (sorted by id).
        sets: the generated sets found (``{"path", "name", "seed", "limited"}`` from each ``spec.toml``; a set
            generated with ``--secret-seed`` shows ``"seed": "secret"`` and ``"secret": true``,
            :mod:`bib.stimuli.origin`).
    """

    refs: list[EpisodeRef]
    sets: list[dict[str, object]] = field(default_factory=list)

    def ids(self) -> set[str]:
        """All episode ids."""
        return {r.id for r in self.refs}


def _spec_info(root: Path) -> dict[str, object] | None:
    spec = root / "spec.toml"
    if not spec.is_file():
        return None
    try:
        text = read_text(spec, MiB)
        data = load_toml(spec)
    except (OSError, ValueError):  # a BibInputError: not a regular file, too big or deep, malformed
        return None
    from bib.stimuli.origin import SECRET_SEED, is_secret_set

    limited = "built with --limit" in text.split("\n", 1)[0]
    secret = is_secret_set(root)  # its seed stays in its own folder: shown as "secret" wherever a set is reported
    return {"path": str(root), "name": data.get("name"), "seed": SECRET_SEED if secret else data.get("seed"),
            "limited": limited, **({"secret": True} if secret else {})}


def _manifest_refs(manifest: Path) -> list[EpisodeRef]:
    from bib.stimuli.manifest import read_manifest

    root = manifest.parent
    if manifest.name != "manifest.csv":
        raise BibInputError(f"{manifest}: a manifest must be named manifest.csv")
    return [
        EpisodeRef(r["episode_id"], r["pair_id"] or None, r["condition"], r["outcome"], root / r["episode_path"],
                   twin_id=r.get("twin_id") or None, difficulty=_number(manifest, r, "difficulty"),
                   variant=r.get("variant") or None, task=r["task"], evidence=_number(manifest, r, "evidence"))
        for r in read_manifest(root, strict=True)
    ]


def _number(manifest: Path, row: Mapping[str, str], column: str) -> float | None:
    raw = (row.get(column) or "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise BibInputError(f"{manifest}: episode {row['episode_id']!r}: field '{column}': {raw!r} is not a number") from None
    if not math.isfinite(value):
        raise BibInputError(f"{manifest}: episode {row['episode_id']!r}: field '{column}': {raw!r} is not finite")
    return value


def _json_ref(path: Path) -> EpisodeRef:
    from bib.episode import EPISODE_MAX

    data = load_json(read_text(path, EPISODE_MAX), path)
    if not isinstance(data, dict) or data.get("schema") != "bib.episode/1":
        raise BibInputError(f"{path}: not a bib.episode/1 file")
    for key in ("id", "condition"):
        if not isinstance(data.get(key), str):
            raise BibInputError(f"{path}: field '{key}': missing or not a string")
    if not isinstance(data.setdefault("outcome", "none"), str):  # a blind episode has none
        raise BibInputError(f"{path}: field 'outcome': not a string")
    check_name(data["id"], f"{path}: field 'id'")
    difficulty = data.get("difficulty")
    if difficulty is not None and (isinstance(difficulty, bool) or not isinstance(difficulty, (int, float))
                                   or not math.isfinite(difficulty)):
        raise BibInputError(f"{path}: field 'difficulty': expected a finite number, got {difficulty!r}")
    twin, variant = data.get("twin_id"), data.get("variant")
    return EpisodeRef(data["id"], data.get("pair_id"), data["condition"], data["outcome"], path,
                      twin_id=twin if isinstance(twin, str) and twin else None,
                      difficulty=None if difficulty is None else float(difficulty),
                      variant=variant if isinstance(variant, str) and variant else None,
                      task=data["task"] if isinstance(data.get("task"), str) else "")


def find_episodes(path: str | os.PathLike[str]) -> EpisodeSet:
    """The episodes under ``path``: a ``manifest.csv``, one episode file, or a folder searched recursively.

    In a folder, every ``manifest.csv`` found describes its set (fast: no episode is parsed);
    episode files outside any manifest's folder are read one by one. Several generated sets
    can therefore be scored together; an episode listed by two manifests with the same fields is
    kept once. This is the one reader of episode sets (scoring, evaluation, ``bib compare``,
    :mod:`bib.data`).

    Raises:
        BibInputError: nothing found, a malformed manifest or file, or one episode id listed with different fields.
    """
    from bib.stimuli.check import episode_files

    p = Path(path)
    refs: list[EpisodeRef] = []
    sets: list[dict[str, object]] = []
    if p.is_file() and p.suffix == ".csv":
        check_complete(p.parent)  # a set being written, or never finished, is refused (issue 39)
        refs = _manifest_refs(p)
        info = _spec_info(p.parent)
        sets = [info] if info else []
    elif p.is_file():
        refs = [_json_ref(p)]
    elif p.is_dir():
        manifests = sorted(m for m in p.rglob("manifest.csv") if not m.name.startswith("."))
        roots = [m.parent for m in manifests]
        for m in manifests:
            check_complete(m.parent)
            refs += _manifest_refs(m)
            info = _spec_info(m.parent)
            if info:
                sets.append(info)
        for f in episode_files(p):
            if not any(root == f.parent or root in f.parents for root in roots):
                refs.append(_json_ref(f))
    else:
        raise BibInputError(f"{p}: no such file or folder")
    if not refs:
        raise BibInputError(f"{p}: no episodes found (need episode *.json files or a manifest.csv)")
    seen: dict[str, EpisodeRef] = {}
    for r in refs:
        first = seen.get(r.id)
        if first is None:
            seen[r.id] = r
        elif (first.pair_id, first.condition, first.outcome) != (r.pair_id, r.condition, r.outcome):
            raise BibInputError(f"episode id {r.id!r} is listed with conflicting fields: {first.path} and {r.path}")
    return EpisodeSet(sorted(seen.values(), key=lambda r: r.id), sets)
