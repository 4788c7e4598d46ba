"""A static site under construction: a temporary folder beside the output, pages from Jinja
templates, assets, and an atomic swap into place at the end.

The site is built in ``.<name>.tmp-<pid>`` beside ``--out`` (same parent, so relative links
computed against the final folder hold in the temporary one too), then renamed over the output.
On any failure the temporary folder is removed and an earlier site at ``--out`` is untouched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import jinja2

from bib.errors import BibInputError
from bib.io import atomic_write_text

#: A file every site (report or study) holds, naming the command that made it; ``--out`` folders
#: holding it can be replaced without ``--force``.
MARKER = ".bib-site"


def _package_files(package: str, sub: str) -> resources.abc.Traversable:
    return resources.files(package).joinpath(sub)


def check_out(out: Path, kind: str, force: bool) -> None:
    """Refuse an ``--out`` that is a file, or a non-empty folder that is not a ``kind`` site (without ``force``)."""
    if out.exists() and not out.is_dir():
        raise BibInputError(f"{out}: --out must be a folder, and this is a file")
    if out.is_dir() and any(out.iterdir()) and not force:
        marker = out / MARKER
        made_by = marker.read_text(encoding="utf-8").split("\n", 1)[0] if marker.is_file() else ""
        if made_by != kind:
            raise BibInputError(
                f"{out}: folder exists and holds something other than a {kind} site; choose another --out or pass --force"
            )
    parent = out.resolve().parent
    if not parent.exists():
        try:
            parent.mkdir(parents=True)
        except OSError as exc:
            raise BibInputError(f"{parent}: cannot create output directory ({exc.strerror})") from None
    if not os.access(parent, os.W_OK):
        raise BibInputError(f"{parent}: output directory is not writable")


@dataclass
class Site:
    """Pages and assets written into a temporary folder that becomes ``out`` on :meth:`finish`.

    Attributes:
        out: the final folder.
        tmp: the temporary folder being filled.
        kind: ``report`` or ``experiment`` (written to :data:`MARKER`).
        command: the command line shown on every page.
        package: the package whose ``templates/`` and ``static/`` folders the site uses.
    """

    out: Path
    kind: str
    command: str
    package: str
    tmp: Path = field(init=False)
    env: jinja2.Environment = field(init=False)

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        final = self.out.resolve()
        self.tmp = final.parent / f".{final.name}.tmp-{os.getpid()}"
        if self.tmp.exists():
            shutil.rmtree(self.tmp)
        self.tmp.mkdir(parents=True)
        loader = jinja2.FunctionLoader(self._template_source)
        self.env = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined,
                                      keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)

    def _template_source(self, name: str) -> str:
        return _package_files(self.package, "templates").joinpath(name).read_text(encoding="utf-8")

    def href(self, target: str | os.PathLike[str], page: str = "index.html") -> str:
        """A relative link from ``page`` (a path inside the site) to ``target`` (absolute, or inside the site)."""
        page_dir = (self.out.resolve() / page).parent
        t = Path(target)
        absolute = t if t.is_absolute() else self.out.resolve() / t
        return Path(os.path.relpath(absolute, page_dir)).as_posix()

    def path(self, rel: str) -> Path:
        """The temporary location of the site file ``rel`` (its folder created)."""
        p = self.tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def page(self, rel: str, template: str, **context: object) -> None:
        """Render ``template`` into the site file ``rel``; every page gets ``root`` (its link to the
        site root), ``command`` and ``href`` (links relative to this page)."""
        root = self.href(".", rel)
        html = self.env.get_template(template).render(
            root=("" if root == "." else root + "/"), command=self.command,
            href=lambda target: self.href(target, rel), **context,
        )
        atomic_write_text(self.path(rel), html, durable=False)

    def copy_static(self, names: list[str], sub: str = "") -> None:
        """Copy the package's ``static/<name>`` files into the site (under ``sub``)."""
        for name in names:
            data = _package_files(self.package, "static").joinpath(name).read_bytes()
            self.path(f"{sub}{name}").write_bytes(data)

    def finish(self) -> Path:
        """Write the marker and move the temporary folder to ``out`` (replacing an earlier site)."""
        atomic_write_text(self.tmp / MARKER, f"{self.kind}\n{self.command}\n", durable=False)
        final = self.out.resolve()
        old = final.parent / f".{final.name}.old-{os.getpid()}"
        if final.exists():
            os.replace(final, old)
        os.replace(self.tmp, final)
        if old.exists():
            shutil.rmtree(old, ignore_errors=True)
        return final

    def discard(self) -> None:
        """Remove the temporary folder (after a failure)."""
        shutil.rmtree(self.tmp, ignore_errors=True)


@contextlib.contextmanager
def building(out: Path, kind: str, command: str, package: str) -> Iterator[Site]:
    """A :class:`Site` that is moved into place when the block succeeds and removed when it fails."""
    site = Site(out, kind, command, package)
    try:
        yield site
    except BaseException:
        site.discard()
        raise
    site.finish()
