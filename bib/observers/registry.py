"""Observer registry: names -> factories, ``make_observer(name, checkpoint=None, **config)``.

:data:`OBSERVERS` is the observers' :class:`bib.registry.Registry`. Built-in observers register
there when :mod:`bib.observers` is imported, with ``"module:attr"`` factories that are imported only
when the observer is made, so listing them or making ``random`` never imports torch (the learned
observers' modules do).

A name of the form ``package.module:Attr`` is a user's own observer: the module is imported (the
working directory is searched first, so ``my_model.py`` beside the command works), and ``Attr`` is
a class or factory called with the observer options (``--option KEY=VALUE``). A checkpoint that is a
folder ``bib train`` wrote for the class is restored by :func:`bib.observers.trainable.restore`
(``load_state_dict`` or the class's ``load(folder)``); any other checkpoint is passed as
``checkpoint=PATH``. What it returns must have ``surprise(episode)``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bib.errors import BibInputError
from bib.observers.base import Observer
from bib.registry import Registry, import_target

if TYPE_CHECKING:
    from bib.observers.learned import LearnedObserver

Factory = Callable[..., Observer]
"""``factory(checkpoint: Path | None, **config) -> Observer``."""

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
        learned: trained by ``bib train``; the factory is ``"module:Class.create"`` of a
            :class:`bib.observers.learned.LearnedObserver` that its module registers with
            :func:`bib.observers.learned.register_learned`.
    """

    name: str
    factory: Factory | str
    needs_checkpoint: bool = False
    description: str = ""
    checkpoint_hint: str = ""
    learned: bool = False

    def resolve(self) -> Factory:
        """The factory callable (imports ``module:attr`` factories)."""
        return self.factory if callable(self.factory) else import_target(self.factory, "observer")


def _user_spec(target: str, make: Any) -> ObserverSpec:
    """The spec of a user's ``package.module:Attr`` observer (see the module docstring)."""
    attr = target.partition(":")[2]
    if not callable(make):
        raise BibInputError(f"observer {target!r}: {attr!r} is not a class or a function")
    params = inspect.signature(make).parameters
    takes_checkpoint = "checkpoint" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    def factory(checkpoint: Path | None, **config: Any) -> Observer:
        from bib.observers.trainable import is_model_folder, restore

        if is_model_folder(checkpoint):  # what `bib train` saved: restored by load_state_dict or the class's load
            built = restore(target, make, Path(checkpoint), config)  # type: ignore[arg-type]
        elif checkpoint is not None and not takes_checkpoint:
            raise BibInputError(f"observer {target!r}: {attr} takes no checkpoint argument "
                                "(and the checkpoint is not a folder `bib train` wrote)")
        else:
            built = make(**config) if checkpoint is None else make(checkpoint=checkpoint, **config)
        if not callable(getattr(built, "surprise", None)):
            raise BibInputError(f"observer {target!r}: {attr} gave a {type(built).__name__} without a surprise(episode) method")
        if not isinstance(getattr(built, "name", None), str):
            built.name = target
        return built

    factory.__signature__ = inspect.signature(make)  # type: ignore[attr-defined]  (options are checked against it)
    return ObserverSpec(target, factory, description="user observer")


OBSERVERS: Registry[ObserverSpec] = Registry("observer", user=_user_spec)
"""Observer name -> :class:`ObserverSpec` (a :class:`bib.registry.Registry`; ``package.module:Class``
names are user observers)."""


def register_observer(
    name: str,
    factory: Factory | str,
    *,
    needs_checkpoint: bool = False,
    description: str = "",
    checkpoint_hint: str = "",
    learned: bool = False,
) -> ObserverSpec:
    """Register an observer factory under ``name`` (a thin alias of ``OBSERVERS.register``).

    Args:
        name: unique registry name.
        factory: ``factory(checkpoint: Path | None, **config) -> Observer`` or ``"module:attr"``.
        needs_checkpoint: the observer cannot run without ``checkpoint``.
        description: a one-line summary.
        checkpoint_hint: how to make the checkpoint (shown when it is missing).
        learned: a learned observer trained by ``bib train`` (see :class:`ObserverSpec`).

    Raises:
        ValueError: when ``name`` is already registered.
    """
    return OBSERVERS.register(name, ObserverSpec(name, factory, needs_checkpoint, description, checkpoint_hint,
                                                learned))


def observer_names(learned: bool | None = None) -> list[str]:
    """Names of the registered observers in registration order (only the learned ones, or only the others,
    when ``learned`` is given)."""
    return [n for n, s in OBSERVERS.items() if learned is None or s.learned == learned]


def trainable(name: str) -> str:
    """``name`` when ``bib train`` can train it (a learned observer or a ``package.module:Class``); else a one-line
    BibInputError naming what it trains."""
    if ":" in name or (name in OBSERVERS and OBSERVERS[name].learned):
        return name
    learned = ", ".join(observer_names(learned=True))
    what = "is not a learned observer" if name in OBSERVERS else "is not a registered observer"
    raise BibInputError(f"observer {name!r} {what}; bib train trains {learned} or your own package.module:Class")


def get_observer_spec(name: str) -> ObserverSpec:
    """``OBSERVERS[name]``: the spec registered as ``name``, or a user's ``package.module:Class``;
    BibInputError listing the known names otherwise."""
    return OBSERVERS[name]


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
        hint = spec.checkpoint_hint or f"train one with `bib train {name} BACKGROUND --out DIR`"
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
    for key, value in config.items():
        if key in params:
            check_option_type(name, key, value, params[key].annotation)
    return factory(ckpt, **config)


#: The scalar annotations an option value is checked against, by the name they are written with.
_SCALARS: dict[str, tuple[type, ...]] = {"int": (int,), "float": (float, int), "str": (str,), "bool": (bool,),
                                         "None": (type(None),)}


def _accepted(annotation: Any) -> tuple[type, ...] | None:
    """The types a scalar annotation (``int``, ``float | None``, ``Optional[str]``, or its string form under
    ``from __future__ import annotations``) accepts; None for any other annotation (not checked)."""
    import types
    import typing

    if isinstance(annotation, str):
        parts = [p.strip() for p in annotation.removeprefix("Optional[").removesuffix("]").split("|")]
        if annotation.startswith("Optional["):
            parts.append("None")
        if not all(p in _SCALARS for p in parts):
            return None
        return tuple(t for p in parts for t in _SCALARS[p])
    if annotation is None or annotation is type(None):
        return (type(None),)
    if annotation in (int, float, str, bool):
        return _SCALARS[annotation.__name__]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        accepted = [_accepted(a) for a in typing.get_args(annotation)]
        return None if any(a is None for a in accepted) else tuple(t for a in accepted for t in a)  # type: ignore[union-attr]
    return None


def check_option_type(name: str, key: str, value: Any, annotation: Any) -> None:
    """Refuse an option whose value does not fit its parameter's scalar annotation (``epochs: int`` given
    ``"one"``); a ``bool`` is not an ``int`` here, an ``int`` is a ``float``. Other annotations are not checked.

    Raises:
        BibInputError: naming the observer, the option, the value and the annotation.
    """
    if annotation is inspect.Parameter.empty:
        return
    accepted = _accepted(annotation)
    if accepted is None:
        return
    if isinstance(value, bool) and bool not in accepted:
        ok = False
    else:
        ok = isinstance(value, accepted)
    if not ok:
        shown = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
        raise BibInputError(f"observer {name!r}: option {key}={value!r} ({type(value).__name__}) does not fit "
                            f"its annotation {key}: {shown}")


LEARNED: Registry[type[LearnedObserver]] = Registry("learned observer")
"""Observer name -> learned observer class, filled by :func:`register_learned` in the modules that define them
(their entries in :data:`OBSERVERS`, ``learned=True``, say which module that is)."""


def register_learned(cls: type[LearnedObserver]) -> type[LearnedObserver]:
    """Register ``cls`` in :data:`LEARNED` under ``cls.name`` (its observer entry, with ``learned=True`` and
    the factory ``"module:Class.create"``, is registered in :mod:`bib.observers`)."""
    return LEARNED.register(cls.name, cls)


def learned_class(name: str) -> type[LearnedObserver]:
    """``LEARNED[name]``: the learned observer class registered as ``name`` (importing its module as needed)."""
    if not OBSERVERS[name].learned:
        raise BibInputError(f"observer {name!r} is not a learned observer; learned: {', '.join(observer_names(learned=True))}")
    OBSERVERS[name].resolve()  # imports the module that registers the class
    return LEARNED[name]
