"""One registry mechanism for every extension point: tasks, observers, agents, importers, codecs.

A :class:`Registry` maps names to entries (a task spec, an observer factory, an agent factory, a
file reader, a codec's file extension, ...) in registration order. Every place that lists or looks
up something by name reads one of these, and so do the CLI's ``--help`` choices
(:meth:`Registry.choices`). Adding an entry is one call where the entry is defined::

    from bib.registry import Registry

    SHAPES: Registry[float] = Registry("shape")
    SHAPES.register("circle", 0.5)          # call form

    @SHAPES.register("square")              # decorator form
    def square() -> float: ...

Rules (the same for every extension point):

* names are unique: registering a taken name again raises ``ValueError``
  (``observer 'random' is registered twice``);
* ``registry[name]`` (and :meth:`Registry.lookup`) of an unknown name raises
  :class:`UnknownName`, a one-line :class:`bib.errors.BibInputError` (the CLI exits 2) that lists
  the known names: ``unknown observer 'x'; known: random, closest-object``. It is also a
  ``KeyError``, so ``name in registry`` and ``registry.get(name)`` behave as for a dict;
* ``lazy``: entries registered as ``"package.module:attr"`` strings are imported on their first
  lookup, so listing the names (``--help``) imports nothing heavy;
* ``user``: where an extension point accepts user code (observers, agents), a name of the form
  ``package.module:attr`` that is not registered imports ``attr`` from ``package.module`` (the
  working directory is searched first, as for a script) and passes it to ``user(target, obj)``,
  which returns the entry (or raises :class:`bib.errors.BibInputError`).
"""

from __future__ import annotations

import enum
import importlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar, overload

from bib.errors import BibInputError

T = TypeVar("T")


class UnknownName(BibInputError, KeyError):
    """An unknown name: a one-line BibInputError listing the known names (also a KeyError)."""

    __str__ = BibInputError.__str__  # KeyError would quote the message


class Registry(Mapping[str, T], Generic[T]):
    """Names -> entries of one extension point, in registration order (see the module docstring).

    Args:
        kind: what an entry is, as error messages name it (``observer``, ``task id``, ``codec``).
        lazy: entries registered as ``"package.module:attr"`` strings are imported on first lookup.
        user: ``user(target, obj) -> entry`` for ``package.module:attr`` names, or None when the
            extension point takes only registered names.
    """

    def __init__(self, kind: str, *, lazy: bool = False, user: Callable[[str, Any], T] | None = None) -> None:
        self.kind = kind
        self.lazy = lazy
        self.user = user
        self._entries: dict[str, T] = {}

    # ------------------------------------------------------------ registering

    @overload
    def register(self, name: str) -> Callable[[T], T]: ...

    @overload
    def register(self, name: str, entry: T) -> T: ...

    def register(self, name: str, entry: Any = ...) -> Any:
        """Register ``entry`` under ``name`` and return it; without ``entry``, a decorator that does.

        Raises:
            ValueError: ``name`` is already registered.
        """
        if entry is ...:
            def decorate(obj: T) -> T:
                return self.register(name, obj)

            return decorate
        if not isinstance(name, str) or not name:
            raise ValueError(f"{self.kind}: a name must be a non-empty string, got {name!r}")
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> T:
        """Remove ``name`` and return its entry (for tests that register a temporary entry)."""
        return self._entries.pop(name)

    # ------------------------------------------------------------ looking up

    def __getitem__(self, name: str) -> T:
        """The entry of ``name``: registered, or ``package.module:attr`` user code.

        Raises:
            UnknownName: ``name`` is none of these (one line listing the known names).
            BibInputError: a ``package.module:attr`` that cannot be imported or used.
        """
        if name in self._entries:
            entry = self._entries[name]
            if self.lazy and isinstance(entry, str):
                entry = self._entries[name] = import_target(entry, self.kind)
            return entry
        if self.user is not None and isinstance(name, str) and ":" in name:
            return self.user(name, import_target(name, self.kind))
        raise UnknownName(self.unknown_message(name))

    lookup = __getitem__

    def unknown_message(self, name: object) -> str:
        """``unknown <kind> <name>; known: a, b, c`` (plus ``or package.module:attr`` for user code)."""
        known = ", ".join(self._entries) or "none"
        extra = " (or package.module:attr)" if self.user is not None else ""
        shown = repr(name)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."  # a name read from a file may be megabytes
        return f"unknown {self.kind} {shown}; known: {known}{extra}"

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> tuple[str, ...]:
        """The registered names in registration order."""
        return tuple(self._entries)

    def choices(self, enum_name: str, names: Iterable[str] | None = None) -> type[enum.Enum]:
        """A ``str`` Enum of ``names`` (default: all of :meth:`names`) for a CLI option's choices.

        Members are named after the names with ``-`` and ``.`` replaced by ``_``; their values
        are the names.
        """
        names = self.names() if names is None else tuple(names)
        members = {n.replace("-", "_").replace(".", "_"): n for n in names}
        return enum.Enum(enum_name, members, type=str)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._entries)})"


def import_target(target: str, kind: str = "extension") -> Any:
    """The object ``attr`` of ``package.module:attr`` (dotted attributes allowed).

    The working directory is put on ``sys.path`` first, so ``my_model.py`` beside the command is
    found. Raises :class:`bib.errors.BibInputError` (one line) when the module or attribute is missing.
    """
    module, _, attr = target.partition(":")
    if not module or not attr:
        raise BibInputError(f"{kind} {target!r}: expected a registered name or package.module:attr")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        obj = importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - any failure to import user code is bad input
        raise BibInputError(f"{kind} {target!r}: cannot import {module!r} ({type(exc).__name__}: {exc})") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise BibInputError(f"{kind} {target!r}: module {module!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj
