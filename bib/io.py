"""Atomic file writes (temp file in the same folder, then rename), file hashing, output folders and
their locks, and safe output: CSV cells a spreadsheet would run (:func:`csv_cell`, :func:`csv_writer`,
:func:`csv_dict_writer`, :func:`frame_csv`) and text for a terminal (:func:`printable`)."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO

from bib.errors import BibInputError


def ensure_dir(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` (and parents) if needed; raise BibInputError when it cannot be written."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BibInputError(f"{p}: cannot create output directory ({exc.strerror})") from None
    if not os.access(p, os.W_OK):
        raise BibInputError(f"{p}: output directory is not writable")
    return p


NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
"""The errnos of a write refused because the disk (or the user's quota) is full."""


def no_space(exc: BaseException, path: str | os.PathLike[str] | None) -> BibInputError | None:
    """The one-line error for a write to ``path`` that failed because the disk is full; None for any
    other error (docs/cli.md: a full disk names the path, and a rerun resumes)."""
    if not isinstance(exc, OSError) or exc.errno not in NO_SPACE:
        return None
    where = os.fspath(path) if path is not None else exc.filename
    return BibInputError(f"{f'{where}: ' if where else ''}cannot write: {os.strerror(exc.errno).lower()}; "
                         "free some space and rerun the same command")


def append_bytes(fh: IO[bytes], data: bytes, path: str | os.PathLike[str]) -> None:
    """Append ``data`` to the unbuffered binary file ``fh`` whole or not at all: a write that fails
    (a full disk) is cut back to where it began, so the file never ends in half a record."""
    start = fh.tell()
    try:
        view = memoryview(data)
        while view:
            view = view[fh.write(view) or 0:]
    except OSError as exc:
        with contextlib.suppress(OSError):
            fh.truncate(start)
            fh.seek(start)
        raise no_space(exc, path) or exc from None


def folder_bytes(folder: str | os.PathLike[str]) -> int:
    """The bytes of the regular files under ``folder`` (0 when it does not exist); links are not followed."""
    total, todo = 0, [os.fspath(folder)]
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:
            continue
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                todo.append(e.path)
            elif e.is_file(follow_symlinks=False):
                total += e.stat(follow_symlinks=False).st_size
    return total


def _size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError  # pragma: no cover


def check_space(folder: str | os.PathLike[str], need: int, what: str) -> None:
    """Refuse, before anything is written, when the file system that will hold ``folder`` has fewer
    than ``need`` bytes free (the caller's estimate of its output; ``what`` says what it is for).

    Raises:
        BibInputError: ``FOLDER: WHAT needs about N MB; PLACE has M MB free; ...``.
    """
    import shutil

    place = Path(os.path.abspath(folder))
    while not place.exists() and place != place.parent:
        place = place.parent
    free = shutil.disk_usage(place).free
    if need > free:
        raise BibInputError(f"{folder}: {what} needs about {_size(need)}; {place} has {_size(free)} free; "
                            "free some space or choose another --out")


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", durable: bool = True, **kwargs) -> Iterator[IO]:
    """Open a temporary file beside ``path``; on success rename it over ``path``.

    If the body raises, the temporary file is removed and ``path`` is left untouched,
    so a reader never sees a half-written file. ``durable=False`` skips the ``fsync`` before
    the rename: the file is still never seen half-written by another process, but a power cut
    may lose it; bulk writers whose files are verified by hash on resume use it.
    """
    target = Path(path)
    directory = target.parent
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise BibInputError(f"{target}: cannot write ({exc.strerror})") from None
    try:
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file the usual mode
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        full = no_space(exc, target)
        if full is not None:
            raise full from None
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, durable: bool = True) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_open` for ``durable``)."""
    with atomic_open(path, "wb", durable=durable) as fh:
        fh.write(data)


def atomic_write_text(path: str | os.PathLike[str], text: str, durable: bool = True) -> None:
    """Write ``text`` (UTF-8, ``\\n`` newlines) to ``path`` atomically (see :func:`atomic_open`)."""
    with atomic_open(path, "w", durable=durable, encoding="utf-8", newline="\n") as fh:
        fh.write(text)


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --- Output folders: check before work, build in a temporary sibling, rename at the end ---------------

PROVENANCE = "provenance.json"
"""Written beside every output folder's main result: argv, version, git commit, Python, platform, times."""

_ARGV: list[str] | None = None


def set_command_line(argv: list[str]) -> None:
    """Record the command line for provenance (the CLI calls this with ``["bib", *args]``)."""
    global _ARGV
    _ARGV = list(argv)


def _git_commit() -> dict[str, object] | None:
    """The commit of the checkout ``bib`` runs from (and whether tracked files differ), or None."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        return None
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip() != ""
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": dirty}


def _now() -> str:
    import datetime

    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def provenance(job: dict[str, object] | None = None, started: str | None = None) -> dict[str, object]:
    """The provenance record of this run (see :data:`PROVENANCE`)."""
    import platform
    import sys

    from bib import __version__

    git = _git_commit()
    return {
        "argv": list(_ARGV) if _ARGV is not None else list(sys.argv),
        "job": job or {},
        "bib_version": __version__,
        "git_commit": git["commit"] if git else None,
        "git_dirty": git["dirty"] if git else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "started": started or _now(),
        "finished": _now(),
    }


def write_provenance(folder: str | os.PathLike[str], job: dict[str, object] | None = None,
                     started: str | None = None) -> Path:
    """Write ``folder/provenance.json`` atomically and return its path."""
    import json

    path = Path(folder) / PROVENANCE
    atomic_write_text(path, json.dumps(provenance(job, started), indent=2) + "\n")
    return path


def read_provenance(folder: str | os.PathLike[str]) -> dict[str, object] | None:
    """``folder/provenance.json`` as a dict, or None when absent or unreadable."""
    from bib.guard import read_json

    try:
        doc = read_json(Path(folder) / PROVENANCE, 16 << 20)  # never a FIFO, /dev/zero or a deep document
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _writable_ancestor(path: Path) -> None:
    """Raise BibInputError unless the nearest existing ancestor of ``path`` is a writable folder."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise BibInputError(f"{path}: cannot create the output folder ({parent} is a file)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise BibInputError(f"{path}: cannot create the output folder ({parent} is not writable)")


NAME_MAX = 255
"""Longest file name (bytes) of the usual file systems; ``--out``'s siblings need room for a suffix."""
_SIBLING = len(b"..tmp-") + 7  # ".<name>.tmp-<pid>", a pid of up to 7 digits (Linux's pid_max is 4194304)


def _check_name_room(path: Path, option: str) -> None:
    """Refuse, before any work, an output folder name too long for its temporary sibling
    (``.<name>.tmp-<pid>``) and its lock (``.<name>.lock``): a 246-byte name was a traceback (issue 39)."""
    name = Path(os.path.abspath(path)).name
    size = len(os.fsencode(name))
    if size + _SIBLING > NAME_MAX:
        raise BibInputError(f"{os.fspath(path)[:120]}{'...' if len(os.fspath(path)) > 120 else ''}: the folder name is "
                            f"{size} bytes long; {option} names of at most {NAME_MAX - _SIBLING} bytes leave room for "
                            f"bib's temporary sibling .NAME.tmp-PID")


def _describe(doc: dict[str, object]) -> str:
    argv = doc.get("argv")
    if isinstance(argv, list) and argv:
        import shlex

        return "`" + " ".join(shlex.quote(str(a)) for a in argv) + "`"
    return "another job"


class OutputFolder:
    """An output folder checked before the work and written atomically (issue 17, docs/cli.md).

    Constructing it checks everything that can be checked before the work: ``out`` is not a file,
    it (or the folder that will hold it) is writable, and an existing non-empty ``out`` holds the
    output of the same job (its ``provenance.json`` records the same ``job``) unless ``force``.
    Nothing is written by the constructor.

    Used as a context manager it yields the folder to write into:

    * by default a temporary sibling ``.<name>.tmp-<pid>``, renamed over ``out`` when the body
      succeeds (with ``provenance.json`` inside) and removed when it fails, so a failed or
      interrupted run leaves ``out`` as it was;
    * with ``resume=True``, ``out`` itself (long jobs that keep finished units and redo only the
      rest); ``provenance.json`` is written when the body succeeds.

    One folder, one writer: entering takes the folder's lock (:class:`FolderLock`, an OS lock that
    dies with its process), so a second job into the same ``out`` is refused with one line while the
    first runs (the constructor already refuses when the lock is held); after taking it, what ``out``
    holds is checked again, so a job that finished in between is not silently replaced.

    Args:
        out: the ``--out`` folder.
        job: what identifies the output (e.g. ``{"command": "score", "observer": ..., "set": ...}``);
            rerunning the same job replaces (or resumes) it, another job's folder is refused.
        force: replace whatever ``out`` holds.
        resume: write in place (see above).
        option: the option's name for messages.
        checked: the caller has checked what an existing ``out`` holds (e.g. `bib generate`, which
            accepts a folder holding the same set, or another set with ``--append``).
    """

    def __init__(self, out: str | os.PathLike[str], job: dict[str, object], *, force: bool = False,
                 resume: bool = False, option: str = "--out", checked: bool = False) -> None:
        if os.fspath(out) == "":
            raise BibInputError(f"{option} is empty; name a folder (e.g. {option} out)")
        self.path = Path(out)
        self.option = option
        self.checked = checked
        _check_name_room(self.path, option)
        self.lock = FolderLock(self.path, option)
        self.lock.check()  # refused now when another job holds the folder, before any work
        self.job = {k: _plain(v) for k, v in job.items()}
        self.force = force
        self.resume = resume
        self.tmp: Path | None = None
        self.started = _now()
        self.existing = read_provenance(self.path) if self.path.is_dir() else None
        p = self.path
        if p.exists() and not p.is_dir():
            raise BibInputError(f"{p}: exists and is a file; {option} names a folder")
        if p.is_dir() and resume:
            from bib.guard import no_links

            no_links(p, option)  # a rerun writes and deletes in place: never through a planted link
        if p.is_dir():
            if not os.access(p, os.W_OK | os.X_OK):
                raise BibInputError(f"{p}: output folder is not writable")
            if not resume and not os.access(p.parent if str(p.parent) else Path("."), os.W_OK | os.X_OK):
                raise BibInputError(f"{p}: cannot replace the output folder ({p.parent} is not writable)")
            if not force and not checked and any(p.iterdir()):
                self.check_same_job(self.existing)
        else:
            _writable_ancestor(p)

    def check_same_job(self, doc: dict[str, object] | None) -> None:
        """Raise BibInputError unless ``doc`` (an existing provenance record) is of this job."""
        if doc is None:
            raise BibInputError(f"{self.path}: folder holds files not written by bib; "
                                "use --force to replace it, or choose another --out")
        if doc.get("job") != self.job:
            raise BibInputError(f"{self.path}: folder holds the output of {_describe(doc)}; "
                                "use --force to replace it, or choose another --out")

    def __enter__(self) -> Path:
        self.lock.acquire()
        try:
            return self._enter()
        except BaseException:
            self.lock.release()
            raise

    def _enter(self) -> Path:
        p = self.path
        if not self.force and not self.checked and p.is_dir() and any(p.iterdir()):
            self.check_same_job(read_provenance(p))  # again under the lock: a job may have finished meanwhile
        if self.resume:
            if p.is_dir():
                from bib.guard import no_links

                no_links(p, self.option)  # again under the lock: a link planted since the check
            if self.force and p.is_dir():
                import shutil

                shutil.rmtree(p)
            return ensure_dir(p)
        parent = ensure_dir(p.parent if str(p.parent) else Path("."))
        _remove_stale(parent, p.name)
        self.tmp = parent / f".{p.name}.tmp-{os.getpid()}"
        if self.tmp.is_symlink() or self.tmp.is_file():
            self.tmp.unlink()  # a planted link is removed, never followed
        elif self.tmp.exists():
            import shutil

            shutil.rmtree(self.tmp)
        self.tmp.mkdir()
        return self.tmp

    def __exit__(self, exc_type, exc, tb) -> None:  # noqa: ANN001
        tmp = self.tmp
        try:
            self._exit(exc_type)
        finally:
            self.lock.release()
        if isinstance(exc, BibInputError) and tmp is not None and str(tmp) in str(exc):
            # e.g. a full disk while writing OUT/.x.tmp-PID/f.json: name the file by where it was going (OUT/f.json)
            raise BibInputError(str(exc).replace(str(tmp), str(self.path))) from None

    def _exit(self, exc_type) -> None:  # noqa: ANN001
        import shutil

        if exc_type is not None:
            if self.tmp is not None:
                shutil.rmtree(self.tmp, ignore_errors=True)
            return
        if self.resume:
            write_provenance(self.path, self.job, self.started)
            return
        assert self.tmp is not None
        write_provenance(self.tmp, self.job, self.started)
        if self.path.exists():
            old = self.path.parent / f".{self.path.name}.old-{os.getpid()}"
            os.replace(self.path, old)
            os.replace(self.tmp, self.path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(self.tmp, self.path)


_HELD: set[Path] = set()
"""Lock files this process holds (a reader of a folder this process writes does not refuse it)."""


class FolderLock:
    """The lock of one output folder: ``fcntl.flock`` on ``.<name>.lock`` beside it (docs/cli.md).

    The lock file sits beside the folder, not in it, because :class:`OutputFolder` replaces the
    folder by a rename at the end and creates it only then; it names the job that holds it (for
    the refusal) and is removed when the lock is released. The lock is the kernel's: it is released
    when its process ends, however it ends, so the file a killed job leaves never blocks a rerun.
    When the folder exists and the folder above it is not writable, the folder itself is locked.
    """

    def __init__(self, path: Path, option: str = "--out") -> None:
        if os.path.islink(path):  # a job would write through it, or replace the link; one writer per real folder
            raise BibInputError(f"{os.fspath(path)}: {option} is a symbolic link (to {os.readlink(path)[:200]}); "
                                f"name the folder itself as {option}")
        self.shown = path
        self.option = option
        full = Path(os.path.realpath(path))  # keyed on the fully resolved folder: any spelling, any link
        self.file = full.parent / f".{full.name}.lock"
        self.folder = full
        self.fd: int | None = None
        self.owner = 0

    def __enter__(self) -> Path:
        """Take the lock for a job that writes into the folder in place without an OutputFolder
        (e.g. `bib agency probe` beside a run); yields the folder as given."""
        self.acquire()
        return self.shown

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _refuse(self, who: str) -> BibInputError:
        return BibInputError(f"{self.shown}: another bib job is writing into this folder ({who}); "
                             f"wait until it ends, or choose another {self.option}")

    def _held_by(self) -> str:
        try:
            fd = self._open(os.O_RDONLY)
            try:
                text = os.read(fd, 300).decode("utf-8", errors="replace").strip()
            finally:
                os.close(fd)
        except (OSError, BibInputError):
            text = ""
        return text or "a job whose lock file names no command"

    def _open(self, flags: int) -> int:
        """The lock file opened without following a link or blocking (a FIFO would), refused unless it is
        a regular file with one link: a lock planted as a symbolic or hard link to another file would
        make bib truncate and write that file (issue 39)."""
        try:
            fd = os.open(self.file, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise BibInputError(f"{self.file}: the lock of {self.option} is a symbolic link; bib does not "
                                    "follow it (remove the link)") from None
            raise
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(fd)
            why = "has another hard link" if stat.S_ISREG(st.st_mode) else "is not a regular file"
            raise BibInputError(f"{self.file}: the lock of {self.option} {why}; bib does not write through it "
                                "(remove it)")
        return fd

    def check(self, *, reader: bool = False) -> None:
        """Refuse (BibInputError) when another job holds the lock; take nothing, write nothing. A
        ``reader`` (:func:`bib.stimuli.complete.check_complete`) is not refused by this process's own
        lock (a job reading back the set it writes); a second writer always is."""
        import fcntl

        if self.fd is not None or (reader and self.file in _HELD):
            return
        for target, flags in ((self.file, os.O_RDONLY), (self.folder, os.O_RDONLY | os.O_DIRECTORY)):
            try:
                fd = self._open(flags) if target == self.file else os.open(target, flags | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise self._refuse(self._held_by() if target == self.file else "its lock is the folder itself") from None
            finally:
                os.close(fd)  # closing also releases a probe that succeeded

    def acquire(self) -> None:
        """Take the lock (without waiting) or raise BibInputError naming the job that holds it."""
        import fcntl

        if self.fd is not None:
            return
        if not os.access(self.file.parent, os.W_OK | os.X_OK) and self.folder.is_dir():
            fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise self._refuse("its lock is the folder itself") from None
            self.fd, self.owner = fd, os.getpid()
            return
        ensure_dir(self.file.parent)
        while True:
            try:
                fd = self._open(os.O_RDWR | os.O_CREAT)
            except OSError as exc:
                raise BibInputError(f"{self.file}: cannot create the lock of {self.option} ({exc.strerror})") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise self._refuse(self._held_by()) from None
            try:  # the holder before us may have removed the file after we opened it: lock the one there now
                same = os.stat(self.file).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        import shlex
        import sys

        argv = _ARGV if _ARGV is not None else ["python", *sys.argv]
        os.ftruncate(fd, 0)
        os.write(fd, f"`{' '.join(shlex.quote(str(a)) for a in argv)}`, pid {os.getpid()}\n".encode())
        self.fd, self.owner = fd, os.getpid()
        _HELD.add(self.file)

    def release(self) -> None:
        """Remove the lock file and release the lock (only in the process that took it)."""
        if self.fd is None or self.owner != os.getpid():
            return
        fd, self.fd = self.fd, None
        _HELD.discard(self.file)
        try:
            with contextlib.suppress(OSError):
                mine = os.fstat(fd)
                if not stat.S_ISDIR(mine.st_mode) and os.stat(self.file).st_ino == mine.st_ino:
                    os.unlink(self.file)  # while still holding it: a later opener finds another inode
        finally:
            os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale(parent: Path, name: str) -> None:
    """Remove ``.<name>.tmp-<pid>`` / ``.<name>.old-<pid>`` siblings left by a killed run (its pid is gone)."""
    import shutil

    for p in parent.glob(f".{name}.[to][ml][pd]-*"):
        pid = p.name.rsplit("-", 1)[1]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            shutil.rmtree(p, ignore_errors=True)


def _plain(value: object) -> object:
    """JSON-comparable form of a job value (paths as absolute strings, tuples as lists)."""
    if isinstance(value, os.PathLike):
        return os.fspath(Path(value).resolve())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


WEIGHTS_MAX = 1 << 30
"""Largest checkpoint bib loads: on disk, and inflated (every record of its zip together): 1 GiB."""


def _check_records(p: Path) -> None:
    """Refuse, before torch allocates anything, a checkpoint that is not a regular file, is larger than
    :data:`WEIGHTS_MAX` on disk, or whose zip records declare more than that inflated (torch allocates
    each record's declared size: a small file with a 3 GiB record was 3.3 GB of memory, issue 39)."""
    import zipfile

    from bib.guard import check_size, read_bytes

    st = os.stat(p)
    if not stat.S_ISREG(st.st_mode):
        read_bytes(p, 0)  # the one-line refusal of a FIFO, device or socket, without waiting on it
    check_size(p, st.st_size, WEIGHTS_MAX, "checkpoint")
    if not zipfile.is_zipfile(p):
        return  # not a torch zip: torch.load refuses it (or reads a legacy file, bounded by its size)
    try:
        with zipfile.ZipFile(p) as zf:
            total = 0
            for info in zf.infolist():
                total += info.file_size
                if total > WEIGHTS_MAX:
                    raise BibInputError(f"{p}: the checkpoint's records inflate to more than "
                                        f"{WEIGHTS_MAX >> 20} MiB (at {info.filename[:80]!r}); bib loads "
                                        f"checkpoints up to {WEIGHTS_MAX >> 20} MiB")
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        if isinstance(exc, BibInputError):
            raise
        raise BibInputError(f"{p}: not a readable checkpoint ({str(exc)[:160]})") from None


def load_weights(path: str | os.PathLike[str]) -> object:
    """``torch.load(path, map_location="cpu", weights_only=True)`` with a one-line refusal.

    A file that holds pickled objects is refused with a message that names the object and does not
    relay torch's advice to reload with ``weights_only=False`` (bib never unpickles code).

    Raises:
        BibInputError: the file is missing, unreadable, or not weights only.
    """
    import re

    import torch

    p = Path(path)
    if not p.exists():
        raise BibInputError(f"{p}: checkpoint not found")
    _check_records(p)
    try:
        return torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises several types; all mean "refused"
        text = str(exc)
        # torch names the object as "Unsupported global: GLOBAL x.y" or, for a blocked module (os, posix,
        # subprocess, builtins ... under torch 2.13), as "unsupported GLOBAL x.y whose module x is blocked"
        found = re.search(r"[Uu]nsupported (?:global: )?GLOBAL ([\w.]+)", text)
        if found:
            raise BibInputError(f"{p}: refused: the checkpoint holds pickled objects ({found.group(1)}), "
                                "and bib loads weights only") from None
        opcode = re.search(r"Unsupported operand (\d+)", text)
        if opcode and _starts_with(p, b"\x80"):  # a plain pickle (pickle.dump's PROTO opcode), not a torch weights file
            raise BibInputError(f"{p}: refused: a pickle that is not a torch weights file (pickle opcode "
                                f"{opcode.group(1)}), and bib loads weights only") from None
        if "Weights only load failed" in text:  # torch's advice that follows is not for bib users
            raise BibInputError(f"{p}: not a readable checkpoint (not a torch weights file)") from None
        first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
        raise BibInputError(f"{p}: not a readable checkpoint ({first[:160]})") from None


def _starts_with(path: Path, prefix: bytes) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(prefix)) == prefix
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# Safe output (issue 39): what a spreadsheet or a terminal opening bib's output would run


#: First characters that make a spreadsheet read a cell as a formula (OWASP "CSV injection").
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value: object) -> object:
    """``value`` as bib writes it into a CSV cell: text starting with ``= + - @``, a tab or a carriage
    return gets a leading ``'`` (OWASP), so a spreadsheet shows it instead of running it; numbers, and
    text that is a plain number (``-0.5``, ``+3``, ``-1e-05``), are left as they are. Idempotent."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_value(text: str) -> str:
    """The value a cell written by :func:`csv_cell` holds (the leading ``'`` dropped again), for the
    tables bib reads back and rewrites (``evaluate --table``, ``leaderboard --save``)."""
    if text.startswith("'") and text[1:].startswith(FORMULA_START) and not _NUMBER.fullmatch(text[1:]):
        return text[1:]
    return text


class _SafeWriter:
    """``csv.writer`` whose every cell passes :func:`csv_cell`."""

    def __init__(self, fh: IO[str], **kwargs: object) -> None:
        import csv

        self._writer = csv.writer(fh, **kwargs)  # type: ignore[arg-type]

    def writerow(self, row: Iterable[object]) -> object:
        return self._writer.writerow([csv_cell(v) for v in row])

    def writerows(self, rows: Iterable[Iterable[object]]) -> None:
        for row in rows:
            self.writerow(row)


def csv_writer(fh: IO[str], **kwargs: object) -> _SafeWriter:
    """A ``csv.writer`` for every CSV bib writes: cells pass :func:`csv_cell`."""
    return _SafeWriter(fh, **kwargs)


def csv_dict_writer(fh: IO[str], fieldnames: Sequence[str], **kwargs: object) -> object:
    """A ``csv.DictWriter`` for every CSV bib writes: cells pass :func:`csv_cell`."""
    import csv

    class SafeDictWriter(csv.DictWriter):
        def writerow(self, rowdict):  # noqa: ANN001, ANN202
            return super().writerow({k: csv_cell(v) for k, v in rowdict.items()})

    return SafeDictWriter(fh, fieldnames=fieldnames, **kwargs)  # type: ignore[arg-type]


def frame_csv(frame: object, **kwargs: object) -> str:
    """``frame.to_csv(**kwargs)`` (a pandas DataFrame) with every text cell (and the index) passed
    through :func:`csv_cell`; numbers untouched."""
    safe = frame.copy()  # type: ignore[attr-defined]
    for col in safe.columns:
        if safe[col].dtype.kind not in "biufcmM":  # text (object or pandas' string dtype)
            safe[col] = safe[col].map(csv_cell)
    if safe.index.dtype.kind not in "biufcmM":
        safe.index = safe.index.map(csv_cell)
    return safe.to_csv(**kwargs)


#: Characters removed from text printed to a terminal: C0 controls but tab and newline (ESC starts the
#: sequences that clear the screen, set the title, or write the clipboard: OSC 52), DEL, C1 controls,
#: and the bidirectional overrides that reorder what is shown.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` without the characters a terminal would act on (:data:`_CONTROL`); newlines and tabs kept."""
    return _CONTROL.sub("", text)


class PrintableStream:
    """A text stream that writes :func:`printable` text to ``stream`` (bib's stdout and stderr while a
    command runs); ``unfiltered`` is the stream itself, for bib's own progress bars (rich draws them
    with escape sequences)."""

    def __init__(self, stream: IO[str]) -> None:
        self.unfiltered = stream

    def write(self, text: str) -> int:
        self.unfiltered.write(printable(text))
        return len(text)

    def __getattr__(self, name: str) -> object:  # flush, isatty, encoding, fileno, buffer ...
        return getattr(self.unfiltered, name)
