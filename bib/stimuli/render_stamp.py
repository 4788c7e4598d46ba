"""What a set's videos were rendered with, per task: ``render.json`` in the set folder, compared when a build resumes.

A video's size, frame rate and frame count do not show a changed preset, crf, pixel format, colour or
pause, so a resumed build keeps a unit's videos only when its task's stamp (every render setting, the
codec and :data:`PIPELINE`) is the current one. The stamp is written before any unit is built, for the
tasks of the build, so a manifest never lists a video rendered with settings other than its task's stamp.
A set built before stamps existed has none; its videos are kept as before (size, frame rate and frame
count checked).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from pathlib import Path

from bib.errors import BibInputError
from bib.guard import MiB, read_json
from bib.io import atomic_write_text
from bib.render.frames import RenderSettings

STAMP = "render.json"
"""The stamp file, relative to the set folder."""

PIPELINE = "h264-segments-1"
"""The video pipeline's output version: raised when the same settings give other videos (here: H.264 in
segments, a keyframe at every test trial)."""


def stamp(settings: RenderSettings, codec: str) -> dict[str, object]:
    """The stamp of videos rendered with ``settings`` and ``codec`` (JSON values)."""
    return json.loads(json.dumps({"pipeline": PIPELINE, "codec": codec, **dataclasses.asdict(settings)}))


def read_stamps(root: Path) -> dict[str, dict[str, object]] | None:
    """Task id -> stamp of the set in ``root``; None when it has no stamp file (or an unreadable one)."""
    try:
        data = read_json(root / STAMP, MiB)
    except (OSError, ValueError):  # a BibInputError (a ValueError): not a regular file, too big, too deep
        return None
    return data if isinstance(data, dict) else None


def stale_tasks(root: Path, tasks: Iterable[str], current: dict[str, object]) -> frozenset[str]:
    """The tasks whose videos in ``root`` were rendered with another stamp than ``current`` (none when the
    set has no stamp file: a set from before stamps keeps its videos)."""
    stamps = read_stamps(root)
    if stamps is None:
        return frozenset()
    return frozenset(t for t in tasks if stamps.get(t) != current)


def write_stamps(root: Path, tasks: Iterable[str], current: dict[str, object]) -> None:
    """Record ``current`` as the stamp of ``tasks`` (other tasks' stamps kept)."""
    stamps = read_stamps(root) or {}
    stamps.update(dict.fromkeys(tasks, current))
    atomic_write_text(root / STAMP, json.dumps(stamps, indent=1, sort_keys=True) + "\n")


def set_render_settings(episode_file: Path, episode_id: str) -> tuple[RenderSettings, str, Path] | None:
    """The render settings and codec a set rendered an episode with, for an episode file of that set
    (``SET/episodes/<id>.json``, listed in its manifest): ``(settings, codec, source)`` from the set's
    stamp of the episode's task (``render.json``), else from its ``spec.toml``; None when the file is
    not in a set or the set records neither."""
    from bib.stimuli.manifest import read_manifest

    root = Path(episode_file).resolve().parent.parent
    if not (root / "manifest.csv").is_file():
        return None
    task = next((r["task"] for r in read_manifest(root) if r["episode_id"] == episode_id), None)
    if task is None:
        return None
    entry = (read_stamps(root) or {}).get(task)
    if isinstance(entry, dict):
        fields = {f.name for f in dataclasses.fields(RenderSettings)}
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in entry.items() if k in fields}
        try:
            settings = RenderSettings(**values)
        except (TypeError, ValueError) as exc:  # a value of the wrong type (the ranges are BibInputErrors)
            raise BibInputError(f"{root / STAMP}: task {task}: not render settings ({exc})") from None
        return settings, str(entry.get("codec", "h264")), root / STAMP
    if (root / "spec.toml").is_file():
        from bib.stimuli.spec import load_spec

        render = load_spec(root / "spec.toml").render
        return render.settings(), render.codec, root / "spec.toml"
    return None
