"""Observer registry: names -> factories, ``make_observer(name, checkpoint=None, **config)``.

Built-in observers register here when :mod:`bib.observers` is imported. Plugin modules listed in
:data:`PLUGIN_MODULES` (the learned observers, which need torch) are imported only when a name is
not found among those already registered, so ``random`` or ``inverse-planner`` never import torch.
A plugin module registers its observers at import time with :func:`register_observer`.

A name of the form ``package.module:Attr`` is a user's own observer: the module is imported (the
working directory is searched first, so ``my_model.py`` beside the command works), and ``Attr`` is
a class or factory called with the observer options (``--option KEY=VALUE``), plus
``checkpoint=PATH`` when a checkpoint is given. What it returns must have ``surprise(episode)``.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bib.errors import BibInputError
from bib.observers.base import Observer

Factory = Callable[..., Observer]
"""``factory(checkpoint: Path | None, **config) -> Observer``."""

PLUGIN_MODULES: tuple[str, ...] = ("bib.observers.bc", "bib.observers.video_rnn")
"""Modules imported on demand that register more observers (part of the package, not user code)."""


@dataclass(frozen=True)
class ObserverSpec:
    """A registered observer.

    Attributes:
        name: registry name (``random``, ``inverse-planner``, ``bc-rnn``, ...).
        factory: ``factory(checkpoint, **config) -> Observer``, or ``"module:attr"`` imported on use.
        needs_checkpoint: True for learned observers that must be trained first (``bib train``).
        description: one line shown by listings.
        checkpoint_hint: how to make the checkpoint, for the "needs --checkpoint" message
            (default: train one with ``bib train``).
    """

    name: str
    factory: Factory | str
    needs_checkpoint: bool = False
    description: str = ""
    checkpoint_hint: str = ""

    def resolve(self) -> Factory:
        """The factory callable (imports ``module:attr`` factories)."""
        if callable(self.factory):
            return self.factory
        module, _, attr = self.factory.partition(":")
        return getattr(importlib.import_module(module), attr)


_REGISTRY: dict[str, ObserverSpec] = {}
_plugins_loaded = False


def register_observer(
    name: str,
    factory: Factory | str,
    *,
    needs_checkpoint: bool = False,
    description: str = "",
    checkpoint_hint: str = "",
) -> ObserverSpec:
    """Register an observer factory under ``name``.

    Args:
        name: unique registry name.
        factory: ``factory(checkpoint: Path | None, **config) -> Observer`` or ``"module:attr"``.
        needs_checkpoint: the observer cannot run without ``checkpoint``.
        description: a one-line summary.
        checkpoint_hint: how to make the checkpoint (shown when it is missing).

    Raises:
        ValueError: when ``name`` is already registered with a different factory.
    """
    spec = ObserverSpec(name, factory, needs_checkpoint, description, checkpoint_hint)
    old = _REGISTRY.get(name)
    if old is not None and old != spec:
        raise ValueError(f"observer {name!r} is registered twice")
    _REGISTRY[name] = spec
    return spec


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for module in PLUGIN_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:  # the plugin exists but a dependency is missing: say so
                raise


def observer_names(load_plugins: bool = True) -> list[str]:
    """Sorted names of the registered observers (importing plugin modules unless told not to)."""
    if load_plugins:
        _load_plugins()
    return sorted(_REGISTRY)


def _user_factory(target: str) -> Factory:
    """The factory of a ``package.module:Attr`` observer (see the module docstring)."""
    module, _, attr = target.partition(":")
    if not module or not attr:
        raise BibInputError(f"observer {target!r}: expected a registered name or package.module:Class")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        obj = importlib.import_module(module)
    except ImportError as exc:
        raise BibInputError(f"observer {target!r}: cannot import {module!r} ({exc})") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise BibInputError(f"observer {target!r}: module {module!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise BibInputError(f"observer {target!r}: {attr!r} is not a class or a function")
    make = obj
    params = inspect.signature(make).parameters
    takes_checkpoint = "checkpoint" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    def factory(checkpoint: Path | None, **config: Any) -> Observer:
        if checkpoint is not None and not takes_checkpoint:
            raise BibInputError(f"observer {target!r}: {attr} takes no checkpoint argument")
        built = make(**config) if checkpoint is None else make(checkpoint=checkpoint, **config)
        if not callable(getattr(built, "surprise", None)):
            raise BibInputError(f"observer {target!r}: {attr} gave a {type(built).__name__} without a surprise(episode) method")
        if not isinstance(getattr(built, "name", None), str):
            built.name = target
        return built

    factory.__signature__ = inspect.signature(make)  # type: ignore[attr-defined]  (options are checked against it)
    return factory


def get_observer_spec(name: str) -> ObserverSpec:
    """The spec registered as ``name``, or a user's ``package.module:Class``; BibInputError listing the
    known names otherwise."""
    if ":" in name and name not in _REGISTRY:
        return ObserverSpec(name, _user_factory(name), description="user observer")
    if name not in _REGISTRY:
        _load_plugins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise BibInputError(f"unknown observer {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def make_observer(name: str, checkpoint: str | Path | None = None, **config: Any) -> Observer:
    """Build the observer ``name``.

    Args:
        name: a registered name.
        checkpoint: trained weights, required by learned observers.
        **config: observer options (e.g. ``seed`` for ``random``, ``betas`` for ``inverse-planner``).

    Raises:
        BibInputError: unknown name, a missing required checkpoint, or a checkpoint path that
            does not exist.
    """
    spec = get_observer_spec(name)
    ckpt = None if checkpoint is None else Path(checkpoint)
    if spec.needs_checkpoint and ckpt is None:
        hint = spec.checkpoint_hint or f"train one with `bib train --observer {name}`"
        raise BibInputError(f"observer {name!r} needs --checkpoint ({hint})")
    if ckpt is not None and not ckpt.exists():
        raise BibInputError(f"{ckpt}: checkpoint not found")
    factory = spec.resolve()
    params = inspect.signature(factory).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        allowed = [k for k in params if k != "checkpoint"]
        unknown = sorted(set(config) - set(allowed))
        if unknown:
            raise BibInputError(
                f"observer {name!r}: unknown option(s) {', '.join(unknown)}; it takes {', '.join(allowed) or 'none'}"
            )
    return factory(ckpt, **config)
