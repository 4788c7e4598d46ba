"""The blind view: an episode as a viewer of its videos knows it, and nothing of its design (issue 26).

Every path that hands episodes to a model (``bib score`` and :func:`bib.observers.scoring.score_refs`,
training: ``bib train`` and a learned observer's ``fit`` (:mod:`bib.observers.training`), a model's own
``fit`` (:class:`bib.observers.trainable.BackgroundEpisodes`), a submission kit) passes them through
:func:`blind_episode`. The view keeps

- the trials' layouts, the agents' paths and events (timing), each trial's occluder (the rectangle only:
  what lies under it is in no episode file, :mod:`bib.world.occluder`), and the condition (and task);

and replaces or drops everything else:

- the episode id becomes an opaque id (:func:`opaque_id`): a hash of a secret and the real id, so
  the id tells nothing and cannot be recomputed from a guess of the real id;
- object and agent ids become role-free ids drawn per episode from its seed and the secret (one
  id per entity, the same in every trial of the episode), and the objects of each layout are
  listed in the order of those ids (random), so neither a name nor a list position says which
  object the familiarization preferred;
- each trial's goal is what its path ends on (an object's new id, ``"key"``, or none), a fact of
  the picture;
- outcome (``none``), pair, twin, variant, difficulty, beta, seed (0), generator and each trial's
  excess cost are absent.

The secret is what a model cannot see: for ``bib score`` the SHA-256 of the episode's own file
(:func:`file_secret`: deterministic, and unknown to a model that is handed only the view); for a
kit, the kit's secret (kept in its key, :mod:`bib.stimuli.kit`).

The view cannot stop code running in the scoring process from opening the set's files on disk:
a model you did not write is scored from a submission kit, which holds only blind episodes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bib.episode import Episode, Trial, dumps
from bib.errors import BibInputError
from bib.world.grid import Agent, GridObject

VIEW = "bib.blind/1"
"""Version of the view (part of every hash, so another view gives other ids)."""
GENERATOR = {"name": "unknown", "version": "unknown"}
"""The ``generator`` of every blind episode: what an episode file without one reads as (it names no set)."""
OMIT = ("pair_id", "outcome", "seed", "generator")
"""Fields a blind episode's text leaves out (:func:`blind_text`): they read back as None, ``none``, 0 and
:data:`GENERATOR`, the same for every blind episode."""
ID_HEX = 16
"""Hex digits of an opaque episode id (64 bits): ``e`` + 16 hex digits, a safe file name."""


def _digest(secret: bytes, what: str, real_id: str) -> bytes:
    return hashlib.sha256(b"|".join([VIEW.encode(), secret, what.encode(), real_id.encode("utf-8")])).digest()


def opaque_id(secret: bytes, real_id: str) -> str:
    """The opaque id of the episode ``real_id`` under ``secret``: ``e`` and 16 hex digits."""
    return "e" + _digest(secret, "id", real_id).hex()[:ID_HEX]


def file_secret(path: str | os.PathLike[str]) -> bytes:
    """The secret of an episode scored from its file: the SHA-256 of the file's bytes."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).digest()
    except OSError as exc:
        raise BibInputError(f"{path}: cannot read ({exc.strerror})") from None


def _entity_ids(ep: Episode, rng: np.random.Generator) -> dict[str, str]:
    """Original object/agent id -> a role-free id (``o`` or ``a`` + 4 hex digits), one per entity of the episode."""
    objects = sorted({o.id for t in ep.trials for o in t.layout.objects})
    agents = sorted({a.id for t in ep.trials for a in t.layout.agents})
    draws = rng.choice(16**4, size=len(objects) + len(agents), replace=False)
    names = [f"{int(d):04x}" for d in draws]
    return {**{k: "o" + n for k, n in zip(objects, names)},
            **{k: "a" + n for k, n in zip(agents, names[len(objects):])}}


def _blind_trial(trial: Trial, ids: dict[str, str]) -> Trial:
    lay = trial.layout
    order = sorted(range(len(lay.objects)), key=lambda i: ids[lay.objects[i].id])
    objects = tuple(GridObject(ids[lay.objects[i].id], lay.objects[i].shape, lay.objects[i].color, lay.objects[i].cell)
                    for i in order)
    agents = tuple(Agent(ids[a.id], a.shape, a.color, a.home) for a in lay.agents)
    layout = dataclasses.replace(lay, objects=objects, agents=agents)
    end = trial.path[-1]
    goal = next((o.id for o in objects if o.cell == end), "key" if lay.key is not None and lay.key == end else None)
    rec = trial.recording
    if rec is not None and len(rec.objects) == len(lay.objects):
        rec = dataclasses.replace(rec, objects=tuple(rec.objects[i] for i in order))
    return Trial(trial.phase, layout, trial.path, trial.events, goal, None, rec, trial.occluder)


def blind_episode(ep: Episode, secret: bytes) -> Episode:
    """The blind view of ``ep`` under ``secret`` (see the module docstring); deterministic."""
    digest = _digest(secret, "entities", ep.id)
    rng = np.random.default_rng([int(ep.seed) & (2**63 - 1), int.from_bytes(digest[:8], "big")])
    ids = _entity_ids(ep, rng)
    return Episode(
        id=opaque_id(secret, ep.id), pair_id=None, task=ep.task, condition=ep.condition, outcome="none", seed=0,
        width=ep.width, height=ep.height, trials=tuple(_blind_trial(t, ids) for t in ep.trials), moves=ep.moves,
        generator=dict(GENERATOR),
    )


def episode_secret(ep: Episode) -> bytes:
    """The secret of an episode handed over in memory (no file): the SHA-256 of its JSON text."""
    return hashlib.sha256(dumps(ep).encode("utf-8")).digest()


def load_blind(path: str | os.PathLike[str], real_id: str | None = None) -> Episode:
    """Read an episode file with every reader's checks (:func:`bib.stimuli.check.load_checked`) and return
    its blind view under :func:`file_secret`.

    Raises:
        BibInputError: unreadable file, a broken world rule, or an id other than ``real_id`` (when given).
    """
    from bib.stimuli.check import load_checked

    ep = load_checked(path)
    if real_id is not None and ep.id != real_id:
        raise BibInputError(f"{path}: episode id is {ep.id!r}, but the manifest says {real_id!r}")
    return blind_episode(ep, file_secret(path))


def read_blind(path: str | os.PathLike[str], checked: set[str]) -> Episode:
    """The blind view of an episode file read several times (a training set, once per epoch): the world rules
    are checked the first time (:func:`load_blind`; the path then joins ``checked``), later reads only parse it.

    Raises:
        BibInputError: an unreadable file or, on its first read, a broken world rule.
    """
    key = str(path)
    if key not in checked:
        view = load_blind(path)
        checked.add(key)
        return view
    from bib.episode import load_episode

    return blind_episode(load_episode(path), file_secret(path))


def blind_text(view: Episode) -> str:
    """The JSON text of a blind episode: :func:`bib.episode.dumps` without the fields of :data:`OMIT`
    (schema ``bib.episode/1``; :func:`bib.episode.loads` reads it back equal)."""
    return dumps(view, OMIT)


def shuffled(episodes: Sequence[Episode]) -> list[int]:
    """The order a chunk of blind episodes is handed to a model in: by opaque id, i.e. a permutation drawn
    from the episodes' secrets (place in a chunk says nothing; the same chunk always gives the same order)."""
    return sorted(range(len(episodes)), key=lambda i: episodes[i].id)


__all__ = ["GENERATOR", "OMIT", "VIEW", "blind_episode", "blind_text", "episode_secret", "file_secret", "load_blind", "opaque_id",
           "read_blind", "shuffled"]
