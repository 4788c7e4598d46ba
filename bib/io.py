"""Atomic file writes (temp file in the same folder, then rename) and file hashing."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
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
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
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
