"""A static site under construction: pages from Jinja templates and assets, written into the
temporary sibling of ``--out`` that :class:`bib.io.OutputFolder` renames into place at the end.

The temporary folder ``.<name>.tmp-<pid>`` has the same parent as ``--out``, so relative links
computed against the final folder hold in the temporary one too. On any failure it is removed and
an earlier site at ``--out`` is untouched.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import jinja2

from bib.guard import inside
from bib.io import OutputFolder, atomic_write_text, read_provenance


def _package_files(package: str, sub: str) -> resources.abc.Traversable:
    return resources.files(package).joinpath(sub)


def output_folder(out: Path, kind: str, force: bool) -> OutputFolder:
    """The checked ``--out`` of a ``kind`` site (any earlier ``kind`` site there is replaced; other
    output is refused without ``force``)."""
    return OutputFolder(out, {"command": kind}, force=force)


def is_site(out: Path, kind: str) -> bool:
    """Whether ``out`` holds a ``kind`` site written by bib."""
    doc = read_provenance(out) if out.is_dir() else None
    return bool(doc) and doc.get("job") == {"command": kind}


@dataclass
class Site:
    """Pages and assets written into a temporary folder that becomes ``out`` (see :func:`building`).

    Attributes:
        out: the final folder.
        tmp: the temporary folder being filled.
        command: the command line shown on every page.
        package: the package whose ``templates/`` and ``static/`` folders the site uses.
    """

    out: Path
    tmp: Path
    command: str
    package: str
    env: jinja2.Environment = field(init=False)

    def __post_init__(self) -> None:
        self.out = Path(self.out)
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
        """The temporary location of the site file ``rel`` (its folder created), checked to stay inside the site."""
        p = inside(self.tmp, self.tmp / rel, "site file")
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

@contextlib.contextmanager
def building(folder: OutputFolder, command: str, package: str) -> Iterator[Site]:
    """A :class:`Site` in the folder's temporary sibling, moved over ``--out`` (with
    ``provenance.json``) when the block succeeds and removed when it fails."""
    with folder as tmp:
        yield Site(folder.path, Path(tmp), command, package)
