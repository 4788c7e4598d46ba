"""Submission kits (``bib blind SET --out KIT --key KEY.csv``) and their keys (issue 26).

A kit is what an organiser gives a submitter whose model they do not run themselves:

- ``episodes/<id>.json``: every episode of the set in its blind view (:mod:`bib.stimuli.blind`,
  :func:`bib.stimuli.blind.blind_text`), under its opaque id;
- ``videos/<id>.mp4`` (or ``.webm``) when the set has videos, copied byte for byte (they are rendered
  without metadata and draw no id), then padded;
- ``bib-json/<id>.json`` with ``--format bib-json``: the blind episode in BIB's per-frame JSON;
- ``kit.csv``: ``episode_id,condition``, one row per episode, sorted by opaque id;
- from ``bib blind`` (``extras``: :func:`bib.challenge.submission.write_kit_docs`), ``README.md`` and
  ``sample-submission/`` (the results formats, and a sample in them: surprise 0 at every test step).

Nothing else: no provenance, no set name, no seed. The opaque ids are hashes of the kit's secret
(32 random bytes, or derived from ``--seed`` for a reproducible kit: then the seed must stay as
secret as the key) and the real ids, so names and order say nothing of the pair, the outcome or the
design; the files hold no such field, and every file of a folder (``episodes/``, ``videos/``,
``bib-json/``) is padded to one size with bytes its format ignores (:func:`_pad`: JSON whitespace, an
mp4 ``free`` box, a WebM ``Void`` element), so not even how long the agent moves shows in a file's
size (a video's duration, like a frame list's length, is what it shows: the audit's shortcut battery
measures such cues).

Only a set that no one can rebuild makes a blind kit: one generated with ``bib generate SPEC
--secret-seed`` (:mod:`bib.stimuli.origin`). Any other set is refused unless ``allow_public``
(``--allow-public``, for tutorials), and then the key carries ``"public": true`` and the note
``public: scores are not blind (why)``, which ``bib evaluate KEY`` prints.

The key (``KEY.csv``, written where the organiser says, never inside the kit) has a first line
``# bib blind key {JSON}`` (the kit's fingerprint, the SHA-256 of ``kit.csv``, the source set's
``name``/``seed``/``limited``, its seed ``"secret"`` for a secret set, and ``public``/``note`` for a
public one) and the columns :data:`KEY_COLUMNS`. ``bib evaluate KEY.csv RESULTS``
scores a results CSV (``episode_id,surprise`` over the kit's ids, from ``bib score`` or from any
program) against it.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from bib.errors import BibInputError
from bib.guard import read_text
from bib.io import atomic_write_text, csv_writer, ensure_dir
from bib.results import Result, markdown_table
from bib.stimuli.blind import blind_episode, blind_text, opaque_id
from bib.stimuli.sets import EpisodeRef, EpisodeSet, find_episodes

KEY_MARK = "# bib blind key "
"""The key's first line starts with this (then a JSON object)."""
KIT_LIST = "kit.csv"
KIT_COLUMNS = ["episode_id", "condition"]
KEY_COLUMNS = ["episode_id", "condition", "outcome", "pair_id", "twin_id", "variant", "difficulty", "evidence",
               "task", "real_id"]
FORMATS = ("episodes", "bib-json")


@dataclass(frozen=True)
class KitSummary(Result):
    """What ``bib blind`` wrote: the kit, its key and fingerprint, episodes per condition."""

    name: ClassVar[str] = "blind"
    kit: Path
    key: Path
    fingerprint: str
    videos: int
    conditions: dict[str, int] = field(default_factory=dict)
    note: str | None = None
    """The key's note (``public: scores are not blind (why)``) for a set anyone can rebuild; None for a secret set."""

    def to_json(self) -> dict[str, object]:
        """``{"kit", "key", "fingerprint", "episodes", "videos", "conditions", "note"}``."""
        return {"kit": str(self.kit), "key": str(self.key), "fingerprint": self.fingerprint,
                "episodes": sum(self.conditions.values()), "videos": self.videos, "conditions": self.conditions,
                "note": self.note}

    def to_markdown(self) -> str:
        """One line naming the kit and its key (and the key's note), and the episodes per condition."""
        head = (f"{sum(self.conditions.values())} blind episodes in {self.kit} (kit {self.fingerprint}"
                f"{f', {self.videos} videos' if self.videos else ''}); key in {self.key}: keep it away from the kit")
        if self.note:
            head += f"\n\n{self.note}"
        return head + "\n\n" + markdown_table(["condition", "episodes"], [[c, n] for c, n in self.conditions.items()])


def check_kit_paths(out: str | os.PathLike[str], key: str | os.PathLike[str], force: bool = False) -> tuple[Path, Path]:
    """Refuse (BibInputError, nothing written) a kit folder holding anything, a key inside the kit, an
    existing key without ``force`` or a key path that is a folder."""
    kit, k = Path(out), Path(key)
    if kit.exists() and not kit.is_dir():
        raise BibInputError(f"{kit}: exists and is a file; --out names the kit's folder")
    if kit.is_dir() and any(kit.iterdir()):
        raise BibInputError(f"{kit}: the kit folder holds files; a kit goes into a new or empty folder")
    check_private_file(key, out, option="--key", name="the key's CSV file",
                       why="write the key where the submitter cannot see it", force=force)
    return kit, k


def check_private_file(path: str | os.PathLike[str], kit: str | os.PathLike[str], *, option: str, name: str,
                       why: str, force: bool = False) -> Path:
    """Refuse (BibInputError, nothing written) a file that must stay away from the kit (the key, a bundle that
    holds it) when it lies inside the kit, is a folder, or exists without ``force``; ``option`` names it as
    given, ``name`` what it must be, ``why`` why it stays out."""
    p = Path(path)
    full_kit, full = Path(kit).resolve(), p.resolve()
    if full == full_kit or full_kit in full.parents:
        raise BibInputError(f"{option} {path}: inside the kit {kit}; {why}")
    if p.is_dir():
        raise BibInputError(f"{option} {path}: is a folder; name {name}")
    if p.exists() and not force:
        raise BibInputError(f"{option} {path}: exists; use --force to replace it")
    return p


def kit_secret(seed: int | None) -> bytes:
    """32 random bytes, or (``seed`` given) the SHA-256 of the seed: a reproducible kit, as secret as the seed."""
    return secrets.token_bytes(32) if seed is None else hashlib.sha256(f"bib.blind seed {seed}".encode()).digest()


def _csv(rows: list[list[object]], header: list[str]) -> str:
    buf = io.StringIO()
    writer = csv_writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(["" if v is None else v for v in r] for r in rows)
    return buf.getvalue()


def _videos(refs: list[EpisodeRef]) -> dict[str, Path]:
    """``{episode id: its video}`` for the episodes whose set's manifest names a video that exists (each
    manifest read once)."""
    from bib.stimuli.manifest import read_manifest

    rows: dict[Path, dict[str, str]] = {}
    out = {}
    for ref in refs:
        root = ref.path.parent.parent
        if root not in rows:
            rows[root] = {r["episode_id"]: r["video_path"] for r in read_manifest(root, strict=False)}
        rel = rows[root].get(ref.id)
        if rel and (root / rel).is_file():
            out[ref.id] = root / rel
    return out


def check_secret(found: EpisodeSet, source: object, allow_public: bool = False) -> str | None:
    """Refuse (BibInputError) a set anyone can rebuild (:func:`bib.stimuli.origin.public_reason`) unless
    ``allow_public``; return the reason it is public (None for a ``--secret-seed`` set)."""
    from bib.stimuli.origin import public_reason

    reason = public_reason(found)
    if reason and not allow_public:
        raise BibInputError(f"{source}: anyone can rebuild this set ({reason}), so a kit of it is not blind; "
                            "build it with `bib generate SPEC --secret-seed --out SET`, or give --allow-public "
                            "for a tutorial")
    return reason


def make_kit(source: str | os.PathLike[str] | EpisodeSet, out: str | os.PathLike[str], key: str | os.PathLike[str],
             *, fmt: str = "episodes", seed: int | None = None, force: bool = False,
             progress: bool = True, allow_public: bool = False,
             extras: Callable[[Path], None] | None = None) -> KitSummary:
    """Write the kit of a set into ``out`` and its key to ``key`` (see the module docstring).

    The kit is built in a temporary sibling folder and renamed at the end; the key is written
    (atomically) after it. Every episode is read with the world checks first. A set that anyone can
    rebuild (not generated with ``--secret-seed``: :mod:`bib.stimuli.origin`) is refused unless
    ``allow_public``, and then the key says :data:`bib.stimuli.origin.PUBLIC_NOTE`. ``extras`` (``bib blind``
    gives :func:`bib.challenge.submission.write_kit_docs`: the README and the sample submission) is called on the
    finished kit's temporary folder before the rename, so what it writes is in the kit or nothing is.

    Raises:
        BibInputError: the paths of :func:`check_kit_paths`, an unknown format, a public set without
            ``allow_public``, a set without expected/unexpected pairs, or an episode that does not load.
    """
    from bib.progress import track
    from bib.stimuli.check import load_checked

    if fmt not in FORMATS:
        raise BibInputError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    kit, k = check_kit_paths(out, key, force)
    found = source if isinstance(source, EpisodeSet) else find_episodes(source)
    public = check_secret(found, source, allow_public)
    if not any(r.outcome == "unexpected" and r.pair_id for r in found.refs):
        raise BibInputError(f"{source}: no expected/unexpected pairs (a kit is scored against them)")
    videos_of = _videos(found.refs)
    check_paddable(list(videos_of.values()))
    if str(k.parent):
        ensure_dir(k.parent)  # a key in a new folder (`--key private/key.csv`): made before the kit, not after it
    secret = kit_secret(seed)
    ids = {r.id: opaque_id(secret, r.id) for r in found.refs}
    if len(set(ids.values())) != len(ids):  # 64-bit ids: never in practice, but a kit must not merge two
        raise BibInputError("two episodes drew the same opaque id; rerun with another --seed")
    parent = kit.parent if str(kit.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    tmp = parent / f".{kit.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    videos = 0
    try:
        (tmp / "episodes").mkdir(parents=True)
        refs = sorted(found.refs, key=lambda r: ids[r.id])  # written in opaque order: not even mtimes follow the set
        for ref in track(refs, total=len(refs), description="blinding") if progress else refs:
            ep = load_checked(ref.path)
            if ep.id != ref.id:
                raise BibInputError(f"{ref.path}: episode id is {ep.id!r}, but the manifest says {ref.id!r}")
            view = blind_episode(ep, secret)
            assert view.id == ids[ref.id]
            (tmp / "episodes" / f"{view.id}.json").write_text(blind_text(view), encoding="utf-8")
            if fmt == "bib-json":
                from bib.stimuli.bibjson import episode_to_bib

                (tmp / "bib-json").mkdir(exist_ok=True)
                (tmp / "bib-json" / f"{view.id}.json").write_text(
                    json.dumps(episode_to_bib(view), separators=(",", ":")) + "\n", encoding="utf-8")
            video = videos_of.get(ref.id)
            if video is not None:
                (tmp / "videos").mkdir(exist_ok=True)
                shutil.copyfile(video, tmp / "videos" / f"{view.id}{video.suffix}")
                videos += 1
        for sub in ("episodes", "bib-json", "videos"):
            if (tmp / sub).is_dir():
                _pad(tmp / sub)
        kit_text = _csv([[ids[r.id], r.condition] for r in refs], KIT_COLUMNS)
        (tmp / KIT_LIST).write_text(kit_text, encoding="utf-8")
        fingerprint = kit_fingerprint(kit_text)
        if extras is not None:
            extras(tmp)
        if kit.is_dir():
            kit.rmdir()  # empty (checked): the rename replaces it
        os.replace(tmp, kit)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    meta: dict[str, object] = {"kit": fingerprint,
                               "sets": [{k2: s.get(k2) for k2 in ("name", "seed", "limited")} for s in found.sets]}
    if public:
        from bib.stimuli.origin import PUBLIC_NOTE

        meta.update(public=True, note=f"{PUBLIC_NOTE} ({public})")
    rows = [[ids[r.id], r.condition, r.outcome, r.pair_id, r.twin_id, r.variant, r.difficulty, r.evidence,
             r.task, r.id] for r in refs]
    atomic_write_text(k, KEY_MARK + json.dumps(meta, sort_keys=True) + "\n" + _csv(rows, KEY_COLUMNS))
    counts: dict[str, int] = {}
    for r in refs:
        counts[r.condition] = counts.get(r.condition, 0) + 1
    return KitSummary(kit, k, fingerprint, videos, dict(sorted(counts.items())), meta.get("note"))  # type: ignore[arg-type]


def kit_fingerprint(kit_text: str) -> str:
    """A kit's fingerprint: the first 16 hex digits of the SHA-256 of its ``kit.csv``."""
    return hashlib.sha256(kit_text.encode("utf-8")).hexdigest()[:16]


def read_kit(kit: str | os.PathLike[str]) -> tuple[EpisodeSet, str]:
    """``(the kit's episodes as a set, its fingerprint)`` from its ``kit.csv`` (no key needed): refs under the
    opaque ids with their condition and their file ``episodes/<id>.json``; no outcome, pair or design.

    Raises:
        BibInputError: not a kit folder, or a ``kit.csv`` that is not ``episode_id,condition`` rows of distinct ids.
    """
    folder = Path(kit)
    p = folder / KIT_LIST
    if not p.is_file():
        raise BibInputError(f"{kit}: no {KIT_LIST} inside (not a `bib blind` kit folder)")
    text = read_text(p)  # a regular file, size-capped, UTF-8 (bib.guard): one line otherwise
    reader = csv.reader(text.splitlines())
    if next(reader, None) != KIT_COLUMNS:
        raise BibInputError(f"{p}: line 1: header must be {','.join(KIT_COLUMNS)}")
    refs: dict[str, EpisodeRef] = {}
    for n, row in enumerate(reader, start=2):
        if len(row) != len(KIT_COLUMNS) or not row[0] or row[0] in refs:
            raise BibInputError(f"{p}: line {n}: malformed or repeated row")
        refs[row[0]] = EpisodeRef(row[0], None, row[1], "", folder / "episodes" / f"{row[0]}.json", task=row[1])
    return EpisodeSet(sorted(refs.values(), key=lambda r: r.id), []), kit_fingerprint(text)


def _json_filler(n: int) -> bytes:
    return b" " * n  # JSON whitespace


def _mp4_filler(n: int) -> bytes:
    """A top-level ISO BMFF ``free`` box of ``n`` bytes (8 of header): players and demuxers skip it."""
    if n < 8 or n >= 2**32:
        raise ValueError(f"an mp4 free box needs 8 to 2**32 - 1 bytes, not {n}")
    return n.to_bytes(4, "big") + b"free" + bytes(n - 8)


def _webm_filler(n: int) -> bytes:
    """An EBML ``Void`` element (ID 0xEC, an 8-byte size) of ``n`` bytes (9 of header): readers skip it."""
    if n < 9 or n - 9 >= 2**56 - 1:
        raise ValueError(f"a WebM Void element needs at least 9 bytes, not {n}")
    return b"\xec" + (0x01 << 56 | (n - 9)).to_bytes(8, "big") + bytes(n - 9)


PADDING = {".json": (_json_filler, 0), ".mp4": (_mp4_filler, 8), ".webm": (_webm_filler, 9)}
"""File suffix -> (the bytes that pad a file of that kind and change nothing it shows, the fewest such bytes)."""


def check_paddable(videos: list[Path]) -> None:
    """Refuse (BibInputError) a set whose videos are of a kind a kit cannot pad to one size (before any work)."""
    odd = sorted({v.suffix for v in videos} - set(PADDING))
    if odd:
        example = next(v for v in videos if v.suffix == odd[0])
        raise BibInputError(f"{example}: a kit pads every video to one size, and cannot pad {odd[0] or 'suffix-less'} "
                            f"files (only {', '.join(k for k in PADDING if k != '.json')})")


def _pad(folder: Path) -> None:
    """Pad every file of ``folder`` to one size with bytes its format ignores (:data:`PADDING`: JSON whitespace,
    an mp4 ``free`` box, a WebM ``Void`` element): the largest file's size plus the fewest bytes a filler
    takes, so a file's size says nothing, not even how long its paths or its video are."""
    files = sorted(folder.iterdir())
    sizes = {f: f.stat().st_size for f in files}
    size = max(sizes.values()) + max(PADDING[f.suffix][1] for f in files)
    for f in files:
        extra = size - sizes[f]
        if extra:
            with open(f, "ab") as fh:
                fh.write(PADDING[f.suffix][0](extra))


def is_key(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a file whose first line is a ``bib blind`` key's."""
    p = Path(path)
    if not p.is_file():
        return False
    try:
        with open(p, encoding="utf-8") as fh:
            return fh.readline().startswith(KEY_MARK)
    except (OSError, UnicodeDecodeError):
        return False


def _key_lines(p: Path) -> tuple[dict[str, object], list[str]]:
    try:
        lines = read_text(p).splitlines()
    except OSError as exc:
        raise BibInputError(f"{p}: cannot read key ({exc})") from None
    if not lines or not lines[0].startswith(KEY_MARK):
        raise BibInputError(f"{p}: not a `bib blind` key (its first line must start with {KEY_MARK.strip()!r})")
    try:
        meta = json.loads(lines[0][len(KEY_MARK):])
        str(meta["kit"])
    except (json.JSONDecodeError, KeyError, TypeError):
        raise BibInputError(f"{p}: line 1: malformed key header") from None
    if not isinstance(meta, dict):
        raise BibInputError(f"{p}: line 1: malformed key header")
    return meta, lines


def key_note(path: str | os.PathLike[str]) -> str | None:
    """The key's note: :data:`bib.stimuli.origin.PUBLIC_NOTE` and why, for the kit of a set anyone can
    rebuild (``bib blind --allow-public``); None for a secret set's key.

    Raises:
        BibInputError: not a key.
    """
    note = _key_lines(Path(path))[0].get("note")
    return str(note) if note else None


def read_key(path: str | os.PathLike[str]) -> tuple[EpisodeSet, str]:
    """``(the key's episodes as a set, the kit's fingerprint)``: refs under the kit's opaque ids (no files).

    Raises:
        BibInputError: not a key, or a malformed row.
    """
    p = Path(path)
    meta, lines = _key_lines(p)
    fingerprint = str(meta["kit"])
    reader = csv.DictReader(lines[1:])
    if reader.fieldnames != KEY_COLUMNS:
        raise BibInputError(f"{p}: line 2: header must be {','.join(KEY_COLUMNS)}")
    refs = []
    for n, row in enumerate(reader, start=3):
        try:
            refs.append(EpisodeRef(row["episode_id"], row["pair_id"] or None, row["condition"], row["outcome"],
                                   Path(), twin_id=row["twin_id"] or None,
                                   difficulty=float(row["difficulty"]) if row["difficulty"] else None,
                                   variant=row["variant"] or None, task=row["task"],
                                   evidence=float(row["evidence"]) if row["evidence"] else None))
        except (ValueError, TypeError):
            raise BibInputError(f"{p}: line {n}: malformed row") from None
    listed = meta.get("sets") if isinstance(meta.get("sets"), list) else []
    sets = [{"path": str(p), "name": s.get("name"), "seed": s.get("seed"), "limited": s.get("limited")}
            for s in listed if isinstance(s, dict)]  # type: ignore[union-attr]
    return EpisodeSet(sorted(refs, key=lambda r: r.id), sets), fingerprint


def check_results_kit(results: str | os.PathLike[str], found: EpisodeSet, fingerprint: str, key: str | os.PathLike[str],
                      what: str = "the key") -> None:
    """Refuse results that share no id with the key (``what``: "the key", or "the kit" for ``bib check-submission``):
    they belong to another kit (the ids of each kit differ)."""
    p = Path(results)
    try:
        with open(p, newline="", encoding="utf-8") as fh:
            ids = {row[0] for row in list(csv.reader(fh))[1:] if row}
    except (OSError, UnicodeDecodeError):
        return  # the results reader names the problem
    if ids and not ids & found.ids():
        raise BibInputError(f"{p}: none of its {len(ids)} episode ids is in {what} {key} (kit {fingerprint}); "
                            "these are results on another kit")


__all__ = ["FORMATS", "KEY_COLUMNS", "KIT_COLUMNS", "KIT_LIST", "KitSummary", "check_kit_paths", "check_results_kit",
           "check_secret", "is_key", "key_note", "kit_fingerprint", "make_kit", "read_key", "read_kit"]
