"""Stimulus-set specs (TOML, validated with pydantic): a named set, a seed, render settings, tasks and counts.

A spec file looks like::

    name = "bib-eval"
    seed = 0

    [render]            # every field optional; defaults are BIB's (20 px cells, 25 fps)
    cell_px = 20
    fps = 25
    video = false

    [[tasks]]
    id = "preference"
    n = 1000            # pairs for evaluation conditions, episodes for background tasks

    [orders]            # optional: counterbalanced presentation orders (orders.csv)
    n_orders = 4

    [study]             # optional: trial timing of `bib experiment` (bib.stimuli.timing.Criteria)
    measure_from = "outcome"

Any problem (unknown field, impossible size, unknown task id) raises :class:`BibInputError` with
one line naming the file and the field, e.g. ``stimuli/x.toml: field 'tasks[2].n': ...``.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from bib.errors import BibInputError
from bib.guard import load_toml
from bib.render.frames import RenderSettings
from bib.render.video import CODECS
from bib.stimuli.orders import SCHEMES, scheme_rows
from bib.stimuli.timing import Criteria
from bib.tasks.options import LEGACY, AgentModel, TaskOptions

MAX_UNITS = 1_000_000
"""Largest count one task entry may ask for."""

GRID_CELLS = 10
"""Cells per side of a BIB grid (the render canvas must hold ``GRID_CELLS * cell_px`` pixels)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _dataclass_fields(cls: type) -> dict[str, Any]:
    """The pydantic fields of a settings dataclass (:class:`RenderSettings`, :class:`Criteria`): its
    types, defaults, ``LIMITS`` and ``CHOICES``."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        kind: Any = hints[f.name]
        if f.name in cls.CHOICES:
            kind = Literal[cls.CHOICES[f.name]]  # type: ignore[valid-type]
        if f.name in cls.LIMITS:
            lo, hi, closed = cls.LIMITS[f.name]
            # strict: a number must be written as one (``speed = true`` or ``"2"`` is refused, not read as 1 or 2)
            finite = {"allow_inf_nan": False} if kind is float else {}
            out[f.name] = (kind, Field(f.default, **{"ge" if closed else "gt": lo}, le=hi, strict=True, **finite))
        else:
            out[f.name] = (kind, f.default)
    return out


_RenderFields = create_model("_RenderFields", __base__=_Strict, **_dataclass_fields(RenderSettings))
_StudyFields = create_model("_StudyFields", __base__=_Strict, **_dataclass_fields(Criteria))


class RenderSpec(_RenderFields):  # type: ignore[misc, valid-type]
    """Render settings of a set: the fields of :class:`RenderSettings` (declared there once) plus video options."""

    codec: str = "h264"
    video: bool = False
    per_trial: bool = False

    def settings(self) -> RenderSettings:
        """The :class:`RenderSettings` these fields describe."""
        fields = self.model_dump(exclude={"codec", "video", "per_trial"})
        return RenderSettings(**fields)


class AgentSpec(_Strict):
    """The stimulus agent (``[agent]``; see :class:`bib.tasks.options.AgentModel`)."""

    policy: str = "deterministic"
    beta: tuple[float, float] | None = None
    max_excess: float = Field(3.0, gt=0, le=100, strict=True, allow_inf_nan=False)


class TaskEntry(_Strict):
    """One task of a set, how many units of it to generate, and the controlled-set options.

    ``n`` counts pairs (evaluation conditions) or episodes (background tasks). ``twins``,
    ``variants`` and ``difficulty`` are :class:`bib.tasks.options.TaskOptions` fields.
    """

    id: str
    n: int = Field(ge=0, le=MAX_UNITS, strict=True)  # strict: `n = true` is not 1
    twins: bool = False
    variants: list[str] | None = Field(None, min_length=1)
    difficulty: list[float] | None = None


class OrdersSpec(_Strict):
    """Counterbalanced presentation orders for a lab (see :mod:`bib.stimuli.orders`): how many, and
    how the task blocks are ordered across them (``rotation``, ``latin``: a balanced Latin square,
    ``random``: permutations drawn from the spec's seed)."""

    n_orders: int = Field(4, ge=2, le=1000, strict=True)
    scheme: Literal[SCHEMES] = "rotation"  # type: ignore[valid-type]


class StudySpec(_StudyFields):  # type: ignore[misc, valid-type]
    """Trial timing of the looking-time study ``bib experiment`` writes for the set (``[study]``): the
    fields of :class:`bib.stimuli.timing.Criteria` (declared there once)."""

    def criteria(self) -> Criteria:
        """The :class:`Criteria` these fields describe (their cross-field rules checked)."""
        return Criteria(**self.model_dump())


class StimulusSpec(_Strict):
    """A whole stimulus set."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    seed: int = Field(0, ge=0, le=2**128 - 1, strict=True)  # 128 bits: `bib generate --secret-seed`; strict: not `true`
    render: RenderSpec = RenderSpec()
    agent: AgentSpec | None = None
    tasks: list[TaskEntry] = Field(min_length=1)
    orders: OrdersSpec | None = None
    study: StudySpec | None = None

    @property
    def units(self) -> list[tuple[str, int]]:
        """``[(task_id, n), ...]`` as :func:`bib.stimuli.build.build` takes them."""
        return [(t.id, t.n) for t in self.tasks]

    def options(self) -> dict[str, TaskOptions]:
        """``{task_id: TaskOptions}`` of every task (:data:`bib.tasks.options.LEGACY` where nothing is asked).

        The ``[agent]`` applies to the evaluation conditions whose generators have the controlled-set
        options; background tasks keep the noise-free planner.
        """
        from bib.tasks import REGISTRY

        a = self.agent or AgentSpec()
        agent = AgentModel(a.policy, a.beta, a.max_excess)
        return {
            t.id: TaskOptions(agent, t.twins, tuple(t.variants) if t.variants else ("",),
                              tuple(t.difficulty) if t.difficulty is not None else None)
            if REGISTRY[t.id].kind == "evaluation" and REGISTRY[t.id].controls.boltzmann else LEGACY
            for t in self.tasks
        }


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _fail(source: str, where: str, msg: str) -> BibInputError:
    return BibInputError(f"{source}: field '{where}': {msg}")


def _check(spec: StimulusSpec, source: str) -> None:
    """Rules that span fields: known task ids, no duplicates, a canvas that fits, an orders design."""
    from bib.tasks import REGISTRY

    seen: dict[str, int] = {}
    for i, task in enumerate(spec.tasks):
        if task.id not in REGISTRY:
            raise _fail(source, f"tasks[{i}].id", REGISTRY.unknown_message(task.id))
        if task.id in seen:
            raise _fail(source, f"tasks[{i}].id", f"task {task.id!r} is already listed as tasks[{seen[task.id]}]")
        seen[task.id] = i
    _check_controls(spec, source)
    r = spec.render
    if r.codec not in CODECS:
        raise _fail(source, "render.codec", CODECS.unknown_message(r.codec))
    if r.per_trial and not r.video:
        raise _fail(source, "render.per_trial", "needs render.video = true")
    grid_px = GRID_CELLS * r.cell_px
    if r.canvas is not None:
        w, h = r.canvas
        if w < grid_px or h < grid_px:
            raise _fail(source, "render.canvas", f"{w} x {h} cannot hold the {grid_px} x {grid_px} px grid (cell_px {r.cell_px})")
        if r.codec in ("h264", "vp9") and (w % 2 or h % 2):
            raise _fail(source, "render.canvas", f"{r.codec} needs even frame sizes, got {w} x {h}")
    if spec.orders is not None:
        kinds = {REGISTRY[t.id].kind for t in spec.tasks}
        if kinds != {"evaluation"}:
            raise _fail(source, "orders", "presentation orders need evaluation conditions (pairs) only")
        step = 2 * scheme_rows(spec.orders.scheme, len(spec.tasks), spec.orders.n_orders)
        if spec.orders.n_orders % step:
            raise _fail(
                source, "orders.n_orders",
                f"{spec.orders.n_orders} cannot balance first outcome x task order over {len(spec.tasks)} task(s) "
                f"({spec.orders.scheme}); use a multiple of {step}",
            )
    if spec.study is not None:
        if spec.orders is None:
            raise _fail(source, "study", "trial timing needs presentation orders ([orders])")
        if spec.study.min_trial >= spec.study.max_trial:
            raise _fail(source, "study.min_trial", f"{spec.study.min_trial:g} s must be below study.max_trial ({spec.study.max_trial:g} s)")
        if spec.study.hab_max_trials < 2 * spec.study.hab_window:
            raise _fail(source, "study.hab_max_trials",
                        f"{spec.study.hab_max_trials} must be at least twice study.hab_window ({spec.study.hab_window})")


def _check_controls(spec: StimulusSpec, source: str) -> None:
    """The agent's policy and beta range; per task, twins, variants and difficulty bins its condition supports."""
    from bib.tasks import REGISTRY
    from bib.tasks.options import POLICIES

    a = spec.agent
    if a is not None:
        if a.policy not in POLICIES:
            raise _fail(source, "agent.policy", f"unknown policy {a.policy!r}; known: {', '.join(POLICIES)}")
        if a.policy == "boltzmann" and a.beta is None:
            raise _fail(source, "agent.beta", "missing (the boltzmann policy draws each unit's beta from this range)")
        if a.policy != "boltzmann" and a.beta is not None:
            raise _fail(source, "agent.beta", f"only the boltzmann policy has a beta (policy is {a.policy!r})")
        if a.beta is not None:
            lo, hi = a.beta
            if not (lo > 0 and hi > 0) or not all(map(math.isfinite, a.beta)):
                raise _fail(source, "agent.beta", f"[{lo}, {hi}]: both ends must be finite and > 0")
            if lo > hi:
                raise _fail(source, "agent.beta", f"[{lo}, {hi}] is inverted (low > high)")
    for i, t in enumerate(spec.tasks):
        task = REGISTRY[t.id]
        c = task.controls
        asked = t.twins or t.variants is not None or t.difficulty is not None
        if asked and task.kind != "evaluation":
            raise _fail(source, f"tasks[{i}]", f"{t.id} is not an evaluation condition: twins, variants and "
                                               "difficulty need pairs")
        if t.twins and not c.twins:
            have = ", ".join(k for k, v in REGISTRY.items() if v.controls.twins)
            raise _fail(source, f"tasks[{i}].twins", f"{t.id} has no label-flipping twin; conditions with twins: {have}")
        for j, v in enumerate(t.variants or [""]):
            where = f"tasks[{i}].variants[{j}]" if t.variants else f"tasks[{i}].twins"
            if v not in c.variants:
                known = ", ".join(repr(k) for k in c.variants)
                raise _fail(source, where, f"{t.id} has no variant {v!r}; known: {known}")
            if t.twins and v in c.untwinned:
                twinned = ", ".join(repr(k) for k in c.variants if k not in c.untwinned)
                raise _fail(source, where, f"{t.id}'s variant {v!r} has no label-flipping twin; variants with one: "
                                           f"{twinned}")
        if t.difficulty is not None:
            d = t.difficulty
            if not c.graded:
                have = ", ".join(k for k, v in REGISTRY.items() if v.controls.graded)
                raise _fail(source, f"tasks[{i}].difficulty", f"{t.id} is not graded; graded conditions: {have}")
            if len(d) < 2 or not all(map(math.isfinite, d)) or d[0] <= 0 or any(b <= a for a, b in zip(d, d[1:])):
                raise _fail(source, f"tasks[{i}].difficulty", f"{d}: need two or more increasing bin edges > 0 (cells)")
        group = 2 if t.twins else 1
        if t.n % group:
            raise _fail(source, f"tasks[{i}].n", f"{t.n} pairs cannot be split into whole pairs + twins; use an even number")
        if a is not None and a.policy != "deterministic" and task.kind == "evaluation" and not c.boltzmann:
            have = ", ".join(k for k, v in REGISTRY.items() if v.controls.boltzmann)
            raise _fail(source, f"tasks[{i}].id", f"{t.id} has no {a.policy} stimulus agent yet; conditions with one: {have}")


def parse_spec(data: dict[str, Any], source: str = "<spec>") -> StimulusSpec:
    """Validate a spec given as a dict (e.g. parsed TOML); errors name ``source`` and the field."""
    try:
        spec = StimulusSpec.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # an unknown field first: `count = 1` for `n = 1` should name `count`, not "n missing"
        err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            missing = [e["loc"][-1] for e in errors if e["type"] == "missing" and e["loc"][:-1] == err["loc"][:-1]]
            msg = "unknown field" + (f" (missing: {', '.join(map(str, missing))})" if missing else "")
        elif err["type"] == "missing":
            msg = "missing"
        elif not isinstance(err.get("input"), dict | list):
            got = repr(err.get("input"))
            msg = f"{msg} (got {got if len(got) <= 80 else got[:77] + '...'})"  # a 52 MB name is not echoed whole
        raise _fail(source, _where(err["loc"]), msg) from None
    _check(spec, source)
    return spec


def task_spec(task_id: str, n: int) -> StimulusSpec:
    """The spec of ``bib generate --task ID --n N``: one task, default render settings, seed 0."""
    from bib.tasks import get_task

    get_task(task_id)  # the plain "unknown task id" message
    return parse_spec({"name": task_id, "tasks": [{"id": task_id, "n": n}]}, "--task")


def override(spec: StimulusSpec, source: str, *, seed: int | None = None, **render: Any) -> StimulusSpec:
    """``spec`` with a new seed and/or render fields (None leaves a field as it is), validated again."""
    data = spec.model_dump(mode="json")
    data["render"].update({k: v for k, v in render.items() if v is not None})
    if seed is not None:
        data["seed"] = seed
    return parse_spec(data, source)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a valid TOML basic string
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(u) for u in v) + "]"
    raise TypeError(f"cannot write {v!r} as TOML")


def spec_to_toml(spec: StimulusSpec, note: str = "") -> str:
    """The spec as TOML text that :func:`load_spec` reads back to an equal spec."""
    data = spec.model_dump(mode="json")
    lines = [f"# {note}"] if note else []

    def table(d: dict[str, Any]) -> None:
        lines.extend(f"{k} = {_toml_value(v)}" for k, v in d.items() if v is not None)

    table({k: data[k] for k in ("name", "description", "seed")})
    lines += ["", "[render]"]
    table(data["render"])
    if data["agent"] is not None:
        lines += ["", "[agent]"]
        table(data["agent"])
    for task in data["tasks"]:
        lines += ["", "[[tasks]]"]
        table({k: v for k, v in task.items() if not (k == "twins" and v is False)})
    for key in ("orders", "study"):
        if data[key] is not None:
            lines += ["", f"[{key}]"]
            table(data[key])
    return "\n".join(lines) + "\n"


BUILTIN_DIR = "stimuli"
"""Folder of :mod:`bib.resources` holding the built-in specs (``stimuli/`` in a checkout links to it)."""


def builtin_specs() -> dict[str, Path]:
    """Name -> path of the specs shipped with the package (``bib-eval``, ``bib-ctrl``, ...)."""
    from bib.resources import resource_dir

    return {f.stem: f for f in sorted(resource_dir(BUILTIN_DIR).glob("*.toml"))}


def spec_path(path: str | os.PathLike[str]) -> Path:
    """``path`` itself when it exists, else the built-in spec it names (``bib-eval`` or ``bib-eval.toml``).

    Raises:
        BibInputError: neither a file nor a built-in name (the message lists the built-in names).
    """
    p = Path(path)
    if p.exists() or p.parent != Path("."):
        return p
    found = builtin_specs().get(p.name.removesuffix(".toml"))
    if found is None:
        raise BibInputError(f"{p}: no such spec file, and not a built-in spec ({', '.join(builtin_specs())})")
    return found


def load_spec(path: str | os.PathLike[str]) -> StimulusSpec:
    """Read and validate a spec TOML file, or the built-in spec a bare name names (:func:`spec_path`)."""
    p = spec_path(path)
    return parse_spec(load_toml(p, "spec file"), str(p))
