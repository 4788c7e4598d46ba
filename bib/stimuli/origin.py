"""Where a set's episodes come from, and whether anyone can rebuild them (issue 38).

The generator is public and seeded. A set built from a spec's own seed (``bib generate bib-ctrl``),
from any seed someone could guess, or imported from public recordings (``bib import``) can be
rebuilt by anyone: regenerate it, look each kit episode up by what it shows, and read its outcome
from the copy (98.9% on a bib-ctrl kit). A kit of such a set is not blind, whatever its ids.

``bib generate SPEC --secret-seed --out SET`` draws the base seed from the operating system
(:func:`draw_secret_seed`, :data:`SECRET_BITS` bits, :mod:`secrets`) and keeps it only in the set's
own folder (the organiser's private copy): its ``spec.toml`` (so the set rebuilds from its folder) and
its ``provenance.json``, whose job lists the set as ``{"set", "seed", "secret": true}``
(:func:`is_secret_set`). Everything that reports a set elsewhere (evaluations, audits, keys, model
cards, tables) reads it through :func:`bib.stimuli.sets.find_episodes`, which shows such a set's
seed as ``"secret"``. A rerun of the same command into the same folder resumes with the seed kept
there (:func:`held_secret_seed`).

``bib blind`` refuses a set for which :func:`public_reason` finds a reason anyone could rebuild it,
unless ``--allow-public`` (tutorials), which writes :data:`PUBLIC_NOTE` into the key; ``bib
evaluate KEY`` prints it.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from bib.io import read_provenance

if TYPE_CHECKING:
    from bib.stimuli.sets import EpisodeSet
    from bib.stimuli.spec import StimulusSpec

SECRET_BITS = 128
"""Bits of a seed drawn by ``--secret-seed``."""
SECRET_SEED = "secret"
"""How a secret set's seed is shown wherever a set is reported outside its own folder."""
PUBLIC_NOTE = "public: scores are not blind"
"""What ``bib blind --allow-public`` writes into the key and ``bib evaluate KEY`` prints."""


def draw_secret_seed() -> int:
    """A base seed of :data:`SECRET_BITS` bits from the operating system's random source."""
    return secrets.randbits(SECRET_BITS)


def _generate_sets(root: str | os.PathLike[str]) -> list[dict[str, object]] | None:
    """The ``sets`` of a `bib generate` folder's provenance, or None when it is not one."""
    doc = read_provenance(root)
    job = doc.get("job") if doc else None
    if not isinstance(job, dict) or job.get("command") != "generate" or not isinstance(job.get("sets"), list):
        return None
    return [s for s in job["sets"] if isinstance(s, dict)]


def held_secret_seed(out: str | os.PathLike[str], name: str) -> int | None:
    """The secret seed of the set ``name`` that ``out`` already holds (a rerun resumes with it), or None."""
    for s in _generate_sets(out) or []:
        if s.get("set") == name and s.get("secret") is True and isinstance(s.get("seed"), int):
            return int(s["seed"])  # type: ignore[call-overload]
    return None


def with_secret_seed(spec: StimulusSpec, out: str | os.PathLike[str], *, force: bool = False) -> tuple[StimulusSpec, bool]:
    """``(spec with a secret seed, whether it resumes)``: the seed ``out`` already keeps for this set (a rerun
    resumes), else (or with ``force``, which replaces the folder) a fresh one from :func:`draw_secret_seed`."""
    from bib.stimuli.spec import override

    held = None if force else held_secret_seed(out, spec.name)
    seed = draw_secret_seed() if held is None else held
    return override(spec, "--secret-seed", seed=seed), held is not None


def secret_note(out: str | os.PathLike[str], resumed: bool) -> str:
    """What `bib generate --secret-seed` says once the set is built: where its seed is kept, and what to do."""
    where = " and ".join(str(Path(out) / f) for f in ("spec.toml", "provenance.json") if (Path(out) / f).is_file())
    drawn = "the one this folder keeps" if resumed else f"drawn from the operating system ({SECRET_BITS} bits)"
    return (f"seed: {drawn}, kept only in {where}: keep {out} private; "
            f"`bib blind {out} --out KIT --key KEY` writes the kit to hand out")


def is_secret_set(root: str | os.PathLike[str]) -> bool:
    """True when ``root`` was written by `bib generate` and every set it holds was drawn by ``--secret-seed``."""
    sets = _generate_sets(root)
    return bool(sets) and all(s.get("secret") is True for s in sets)  # type: ignore[union-attr]


def _set_root(path: Path, cache: dict[Path, Path | None]) -> Path | None:
    """The folder above ``path`` that holds a ``manifest.csv`` (the set it belongs to), or None."""
    start = path.parent
    seen = []
    folder: Path | None = start
    while folder is not None:
        if folder in cache:
            root = cache[folder]
            break
        seen.append(folder)
        if (folder / "manifest.csv").is_file():
            root = folder
            break
        folder = None if folder.parent == folder else folder.parent
    else:
        root = None
    for f in seen:
        cache[f] = root
    return root


def public_reason(found: EpisodeSet) -> str | None:
    """Why anyone could rebuild the episodes of ``found`` (None when every one is of a ``--secret-seed`` set).

    The reasons, for the first episode that has one: it belongs to no generated set (loose episode files:
    nothing records a secret seed), to a set imported from recordings (``bib import``), or to a set
    generated from a seed that was not drawn by ``--secret-seed`` (a spec's own seed, or one given with
    ``--seed``).
    """
    cache: dict[Path, Path | None] = {}
    verdicts: dict[Path, str | None] = {}
    for ref in found.refs:
        root = _set_root(ref.path.absolute(), cache)
        if root is None:
            return f"{ref.path}: an episode file of no generated set, so nothing records a secret seed"
        if root not in verdicts:
            verdicts[root] = _root_reason(root)
        if verdicts[root]:
            return verdicts[root]
    return None


def _root_reason(root: Path) -> str | None:
    doc = read_provenance(root)
    job = doc.get("job") if doc else None
    command = job.get("command") if isinstance(job, dict) else None
    if command == "import":
        return f"{root}: imported from recordings (`bib import`), which are public"
    sets = _generate_sets(root)
    if not sets:
        return f"{root}: no provenance.json of `bib generate` records a secret seed"
    for s in sets:
        if s.get("secret") is not True:
            return (f"{root}: the set {s.get('set')} was generated from seed {s.get('seed')}, "
                    "not from a seed drawn by --secret-seed")
    return None


__all__ = ["PUBLIC_NOTE", "SECRET_BITS", "SECRET_SEED", "draw_secret_seed", "held_secret_seed", "is_secret_set",
           "public_reason", "secret_note", "with_secret_seed"]
