"""Reading what users give bib without being led astray (issue 28; the rules: docs/cli.md, "Containment").

One place for the checks every command applies to its inputs and output paths:

* :func:`check_name`: an id used in a file name is a safe file name (letters, digits, ``.``, ``_``,
  ``-``; not starting with ``.`` or ``-``), so ``<id>.json`` / ``<id>.mp4`` cannot climb out;
* :func:`inside`: a path resolves (symbolic links followed) inside a root, ``--out`` or a set;
* :func:`folder_files`: the files of a folder a command reads (sessions, plots), each inside it;
* :func:`no_links`: a folder written or cleaned in place holds no symbolic link;
* :func:`distinct_names`: names that become file names do not collide once normalised;
* :func:`set_path`: a path a set names (manifest rows) is relative and resolves inside the set;
* :func:`read_bytes` / :func:`read_text`: only regular files are read (a FIFO or device is refused
  without blocking), up to a size cap, text as UTF-8 (a byte-order mark accepted) with the first bad
  byte named;
* :func:`text_lines`: the same for streamed text (CSV readers take its lines);
* :func:`load_json` / :func:`read_json`: JSON with its depth (:data:`DEPTH_MAX`) and malformations
  turned into one line; :func:`load_toml` likewise for TOML;
* :func:`gunzip`: gzip inflated in chunks up to a size cap (a bomb is refused, not inflated);
* :func:`check_header`: a CSV header without duplicated column names.

Every refusal is a :class:`bib.errors.BibInputError` whose one line names the file (and field or row).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from bib.errors import BibInputError

MiB = 1 << 20
TEXT_MAX = 256 * MiB
"""Largest text file read whole (tables, specs); episode files have their own, smaller cap."""
TOML_MAX = 4 * MiB
"""Largest TOML file (specs, configs, analysis specs: written by hand, the largest shipped is 8 KB); a bigger one is
refused before it is read, not parsed for minutes."""
INFLATED_MAX = 64 * MiB
"""Largest inflated size of a gzip-compressed input (a BIB JSON file is a few MB)."""
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")


def check_name(value: str, where: str) -> str:
    """``value`` if it is a safe file name (see the module docstring), else BibInputError naming ``where``."""
    if not _NAME.fullmatch(value):
        shown = value if len(value) <= 60 else value[:57] + "..."
        raise BibInputError(f"{where}: {shown!r} is not a safe file name (letters, digits, '.', '_' and '-', "
                            "at most 200, not starting with '.' or '-')")
    return value


def inside(root: str | os.PathLike[str], path: str | os.PathLike[str], what: str = "") -> Path:
    """``path`` if it resolves (symbolic links followed) inside ``root``; else BibInputError naming the
    path (after ``what``, e.g. the manifest row that names it)."""
    base = os.path.realpath(root)
    real = os.path.realpath(path)
    if real != base and not real.startswith(base.rstrip(os.sep) + os.sep):
        raise BibInputError(f"{what + ': ' if what else ''}{os.fspath(path)} resolves to {real}, "
                            f"outside {os.fspath(root)}")
    return Path(path)


def folder_files(folder: str | os.PathLike[str], pattern: str) -> list[Path]:
    """The entries of ``folder`` matching ``pattern`` (sorted), each resolving inside ``folder``: an
    entry that links out of it (a session file, a plot beside a report) is refused, naming it, rather
    than read or copied (issue 39)."""
    found = sorted(Path(folder).glob(pattern))
    for f in found:
        inside(folder, f, f"{os.fspath(folder)}: a file of the folder")
    return found


def distinct_names(names: Iterable[str], key: Callable[[str], str], what: str, where: str) -> None:
    """Refuse (one line) two different ``names`` that ``key`` (a file-name normalisation: case, slug,
    suffix) maps to one file: they would be merged into one page or plot, silently (issue 39)."""
    seen: dict[str, str] = {}
    for name in names:
        k = key(name)
        first = seen.setdefault(k, name)
        if first != name:
            raise BibInputError(f"{where}: {what} {first[:60]!r} and {name[:60]!r} would share one file "
                                f"({k[:60]!r}); rename one of them")


def set_path(root: str | os.PathLike[str], rel: str, what: str) -> Path:
    """``root / rel`` for a path a set names: relative, and resolving inside ``root`` (links followed)."""
    if not rel or os.path.isabs(rel) or rel.startswith("~") or "\\" in rel or "\x00" in rel:
        raise BibInputError(f"{what}: {rel!r} is not a path relative to the set")
    return inside(root, Path(root) / rel, what)


def output_path(out: str | os.PathLike[str], *names: str) -> Path:
    """``out / names...`` where each part is a safe file name (:func:`check_name`) and the result
    resolves inside ``out``: every path an output folder gets from its inputs is built here."""
    p = Path(out)
    for name in names:
        p = p / check_name(name, f"{os.fspath(out)}: output name")
    return inside(out, p, f"{os.fspath(out)}: output")


def no_links(root: str | os.PathLike[str], option: str = "--out") -> None:
    """Refuse (one line naming it) the first symbolic link inside the folder ``root``: a job that
    writes or deletes in place (a `bib generate` rerun, `bib agency report`) would write into, or
    delete from, the folder the link points to (issue 39). ``root`` itself is checked by the caller."""
    for dirpath, dirnames, filenames in os.walk(root):  # links to folders are listed, never entered
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                raise BibInputError(f"{p}: is a symbolic link inside {option} {os.fspath(root)}; bib does not "
                                    "write or delete through links (remove it, or choose another folder)")


def _open_regular(path: Path) -> tuple[int, os.stat_result]:
    """An fd of ``path`` opened without blocking (a FIFO would), refused unless a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise BibInputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BibInputError(f"{path}: is a folder, not a file") from None
    except OSError as exc:
        raise BibInputError(f"{path}: cannot read ({exc.strerror})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file (a pipe, device or socket)"
        raise BibInputError(f"{path}: is {kind}; bib reads regular files only")
    os.set_blocking(fd, True)
    return fd, st


def check_regular(path: str | os.PathLike[str]) -> None:
    """Refuse, in one line, a path that is not a readable regular file (missing, a folder, a pipe, device or socket;
    a link is followed), without reading it or waiting on it."""
    fd, _ = _open_regular(Path(path))
    os.close(fd)


def check_size(path: str | os.PathLike[str], size: int, limit: int, what: str = "file") -> None:
    """BibInputError unless ``size`` bytes are at most ``limit``."""
    if size > limit:
        raise BibInputError(f"{os.fspath(path)}: {what} of {size / MiB:.1f} MiB is larger than the "
                            f"{limit / MiB:.0f} MiB bib reads")


def read_bytes(path: str | os.PathLike[str], limit: int = TEXT_MAX) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (else one-line BibInputError)."""
    p = Path(path)
    fd, st = _open_regular(p)
    with os.fdopen(fd, "rb") as fh:
        check_size(p, st.st_size, limit)
        data = fh.read(limit + 1)
    check_size(p, len(data), limit)
    return data


def decode(data: bytes, path: str | os.PathLike[str]) -> str:
    """``data`` as UTF-8 text (a leading byte-order mark dropped); BibInputError names the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise BibInputError(f"{os.fspath(path)}: not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line}, "
                            f"offset {exc.start}); save it as UTF-8") from None


GZIP_MAGIC = b"\x1f\x8b"
"""The first two bytes of a gzip file (no UTF-8 text starts with them: 0x8b cannot lead a character)."""


def read_text(path: str | os.PathLike[str], limit: int = TEXT_MAX) -> str:
    """A regular file's UTF-8 text (see :func:`read_bytes` and :func:`decode`); a gzip-compressed file
    (e.g. ``data.csv.gz``) is inflated first, in chunks, refused past ``limit`` inflated bytes (:func:`gunzip`)."""
    data = read_bytes(path, limit)
    if data[:2] == GZIP_MAGIC:
        data = bytes(gunzip(data, path, limit))
    return decode(data, path)


def text_lines(path: str | os.PathLike[str]) -> Iterator[str]:
    """The lines of a regular UTF-8 text file (byte-order mark dropped, newlines kept as in the file),
    read one at a time: memory does not grow with the file. A bad byte raises BibInputError naming
    its line. Pass the lines to ``csv.reader`` / ``csv.DictReader``."""
    p = Path(path)
    fd, _ = _open_regular(p)
    with os.fdopen(fd, "rb") as fh:
        for n, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise BibInputError(f"{p}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at line {n}); "
                                    "save it as UTF-8") from None
            yield line.replace("\r\n", "\n") if line.endswith("\r\n") else line


def check_header(header: Iterable[str] | None, path: str | os.PathLike[str]) -> list[str]:
    """The CSV header as a list; BibInputError when a column name is repeated (which one would count?)."""
    names = list(header or [])
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise BibInputError(f"{os.fspath(path)}: column {name!r} appears twice in the header")
        seen.add(name)
    return names


DEPTH_MAX = 64
"""Deepest nesting of lists and tables read from JSON or TOML (no bib file nests more than 10)."""


def check_depth(doc: object, source: str | os.PathLike[str], kind: str, limit: int = DEPTH_MAX) -> object:
    """``doc`` if its lists and dicts nest at most ``limit`` deep (walked without recursion), else
    BibInputError ``SOURCE: KIND nested too deeply (more than LIMIT levels)``: code that walks a
    document recursively (pydantic, bib's readers) never meets Python's recursion limit."""
    level = [doc] if isinstance(doc, dict | list) else []
    depth = 0
    while level:  # one level at a time: list comprehensions, fast on many small lists (frames, paths)
        depth += 1
        if depth > limit:
            raise BibInputError(f"{os.fspath(source)}: {kind} nested too deeply (more than {limit} levels)")
        level = [c for node in level for c in (node.values() if type(node) is dict else node)
                 if type(c) is dict or type(c) is list]
    return doc


def load_json(text: str | bytes, source: str | os.PathLike[str]) -> object:
    """``json.loads(text)`` with a one-line BibInputError naming ``source`` for malformed or too deeply
    nested JSON (more than :data:`DEPTH_MAX` levels, or the parser's recursion limit)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BibInputError(f"{os.fspath(source)}: malformed JSON at line {exc.lineno} column {exc.colno}: "
                            f"{exc.msg}") from None
    except RecursionError:
        raise BibInputError(f"{os.fspath(source)}: JSON nested too deeply (more than {DEPTH_MAX} levels)") from None
    return check_depth(doc, source, "JSON")


_TOML_NESTING = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*|[\[\]{}]')


def _toml_depth(text: str, source: str | os.PathLike[str]) -> None:
    """Refuse TOML whose arrays and inline tables nest more than :data:`DEPTH_MAX` deep, before the parser
    (tomllib recurses once per level: 500 levels reach Python's recursion limit)."""
    depth = 0
    for m in _TOML_NESTING.finditer(text):
        ch = m.group()
        if ch in "[{":
            depth += 1
            if depth > DEPTH_MAX:
                raise BibInputError(f"{os.fspath(source)}: TOML nested too deeply (more than {DEPTH_MAX} levels)")
        elif ch in "]}":
            depth -= 1


def read_json(path: str | os.PathLike[str], limit: int = TEXT_MAX) -> object:
    """A regular file's JSON (:func:`read_text`, :func:`load_json`): size-capped, never a FIFO or device,
    depth-checked; every refusal one line naming the file."""
    return load_json(read_text(path, limit), path)


def gunzip(data: bytes, source: str | os.PathLike[str], limit: int = INFLATED_MAX) -> bytearray:
    """Inflate gzip ``data`` (all members) in chunks, refusing it once it would exceed ``limit`` bytes:
    a small file that inflates to gigabytes is refused with at most ``limit`` in memory."""
    import zlib

    out = bytearray()
    rest = data
    while rest:
        d = zlib.decompressobj(wbits=31)
        chunk = rest
        while True:
            try:
                piece = d.decompress(chunk, 4 * MiB)
            except zlib.error as exc:
                raise BibInputError(f"{os.fspath(source)}: not a readable gzip file ({exc})") from None
            out += piece
            if len(out) > limit:
                raise BibInputError(f"{os.fspath(source)}: inflates to more than {limit / MiB:.0f} MiB; "
                                    "bib reads compressed files up to that size")
            chunk = d.unconsumed_tail
            if d.eof:
                break
            if not chunk and not piece:
                raise BibInputError(f"{os.fspath(source)}: not a readable gzip file (cut short)")
        rest = d.unused_data
    return out


def load_toml(path: str | os.PathLike[str], what: str = "file") -> dict[str, object]:
    """A TOML file (UTF-8, :func:`read_text`) as a dict; one line for a missing file (``no such <what>``)
    or malformed TOML."""
    import tomllib

    p = Path(path)
    if not os.path.lexists(p):
        raise BibInputError(f"{p}: no such {what}")
    text = read_text(p, TOML_MAX)
    _toml_depth(text, p)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BibInputError(f"{p}: malformed TOML ({exc})") from None
    except RecursionError:
        raise BibInputError(f"{p}: TOML nested too deeply (more than {DEPTH_MAX} levels)") from None
