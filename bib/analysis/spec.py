"""Analysis specs (TOML under ``analysis/``): tasks, scale, covariates, row filter, exclusions, import
mappings and the mixed model (an lme4-style formula, reference levels, centring, pruning order)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bib.analysis.schema import COLUMNS, OUTCOMES, PHASES
from bib.errors import BibInputError
from bib.guard import load_toml

STEPS: tuple[str, ...] = ("codes", "missing", "trial_error", "min_look", "max_look", "both_outcomes")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Exclusions(_Strict):
    """The exclusion pipeline: which steps run, in which order, with which parameters.

    ``codes`` drops the trials and sessions the experimenter coded for exclusion (a session marked
    no-good, a ``session_exclusion`` or ``trial_exclusion`` code of
    :data:`bib.analysis.exclusions.EXCLUSION_CODES`; bib experiment's trials CSV has these columns); ``missing`` drops trials without a looking time; ``trial_error`` drops trials coded with an error
    (fussiness, parent interference, ...); ``min_look`` drops looks shorter than ``min_look_s``;
    ``max_look`` caps looks at ``max_look_s`` (or drops them, ``max_look_action = "exclude"``);
    ``both_outcomes`` drops a participant's rows of a task unless an expected and an unexpected test
    trial of that task survive the earlier steps.
    """

    steps: list[Literal["codes", "missing", "trial_error", "min_look", "max_look", "both_outcomes"]] = Field(
        default_factory=lambda: list(STEPS)
    )
    min_look_s: float = Field(default=2.0, ge=0, strict=True, allow_inf_nan=False)
    max_look_s: float | None = Field(default=None, gt=0, strict=True, allow_inf_nan=False)
    max_look_action: Literal["cap", "exclude"] = "cap"


class Mapping(_Strict):
    """How a non-canonical CSV maps onto the canonical columns.

    ``columns`` maps canonical column -> column in the file (a list of columns is joined with ``:``,
    e.g. ``item = ["stimulus_num", "trial_type"]``); ``values`` maps, per canonical column,
    a value in the file -> canonical value (e.g. ``outcome = {congruent = "expected"}``);
    ``constants`` fills canonical columns the file lacks; ``unit`` is the looking-time unit.
    """

    columns: dict[str, str | list[str]] = Field(default_factory=dict)
    values: dict[str, dict[str, str]] = Field(default_factory=dict)
    constants: dict[str, str] = Field(default_factory=dict)
    unit: Literal["s", "ms"] = "s"

    @field_validator("columns", "values", "constants")
    @classmethod
    def _canonical_keys(cls, v: dict) -> dict:
        unknown = sorted(set(v) - set(COLUMNS))
        if unknown:
            raise ValueError(f"not canonical columns: {', '.join(unknown)}")
        return v


class TrialType(_Strict):
    """What one PyHab ``trialType`` means: its task, phase and (for test trials) outcome."""

    task: str = Field(min_length=1)
    phase: Literal[PHASES] = "test"  # type: ignore[valid-type]
    outcome: str = ""


class PyHab(_Strict):
    """PyHab import settings: which columns carry id and looking time, and the trial-type mapping."""

    participant: str = "sID"
    looking: str = "sumOnA"
    order: str = "cond"
    lab: str = ""
    trial_types: dict[str, TrialType] = Field(default_factory=dict)
    ignore: list[str] = Field(default_factory=list)


class RowFilter(_Strict):
    """Rows of the file to analyse, chosen before the mapping and the exclusions (and reported).

    ``keep``: column -> values; a row is kept when every listed column holds one of its values.
    ``drop``: column -> values; a row is dropped when any listed column holds one of its values.
    Columns are those of the file as read (before the mapping); values compare as text.
    """

    keep: dict[str, list[str]] = Field(default_factory=dict)
    drop: dict[str, list[str]] = Field(default_factory=dict)

    @property
    def active(self) -> bool:
        return bool(self.keep or self.drop)


class Model(_Strict):
    """The mixed model fitted per task (and pooled over tasks).

    ``formula``: an lme4-style formula on the model rows (see :mod:`bib.analysis.formula`); its
    variables are any column of the data plus ``log_lt`` (log seconds), ``participant``
    (= participant_id) and ``age_mo`` (months, from age_days unless the file has the column). Empty:
    the VOE default ``log_lt ~ outcome + (1 | participant)`` plus ``(1 | item)`` when a task shows
    more than one item per outcome. ``reference``: reference level per factor (default: the first
    in sorted order; ``outcome``: the spec's first outcome). ``center``: numeric columns centred on
    the imported rows of the analysed tasks (after the filter, before the exclusions).
    ``prune``: random terms (as written, e.g. ``"(1 | lab)"``, or a grouping factor name) dropped
    in this order when a fit does not converge or is singular (MB1's "fit, check, prune"); default:
    the formula's random terms from last to first, never the last one left.
    ``pooled_formula``: the model over all tasks (default: the task formula's random part with
    ``outcome * task`` as the fixed part).
    """

    formula: str = ""
    reml: bool = True
    reference: dict[str, str] = Field(default_factory=dict)
    center: list[str] = Field(default_factory=list)
    prune: list[str] | None = None
    pooled_formula: str = ""


class AnalysisSpec(_Strict):
    """A whole analysis spec; every field has a default, so an empty file is a valid spec."""

    name: str = "analysis"
    description: str = ""
    format: str = "csv"
    tasks: list[str] = Field(default_factory=list)
    outcomes: tuple[str, str] = OUTCOMES  # type: ignore[assignment]
    scale: Literal["log", "raw"] = "log"
    covariates: list[Literal["order", "age"]] = Field(default_factory=list)
    alpha: float = Field(default=0.05, gt=0, lt=1, strict=True)
    filter: RowFilter = Field(default_factory=RowFilter)
    exclusions: Exclusions = Field(default_factory=Exclusions)
    model: Model = Field(default_factory=Model)
    mapping: Mapping = Field(default_factory=Mapping)
    pyhab: PyHab = Field(default_factory=PyHab)

    @field_validator("format")
    @classmethod
    def _known_format(cls, v: str) -> str:
        from bib.analysis.formats import IMPORTERS

        if v not in IMPORTERS:
            raise ValueError(IMPORTERS.unknown_message(v))
        return v


def load_spec(path: str | Path | None) -> AnalysisSpec:
    """Read and validate an analysis spec; ``None`` gives the defaults.

    Raises:
        BibInputError: unreadable TOML, or a field with a wrong name, type or value (named).
    """
    if path is None:
        return AnalysisSpec()
    p = Path(path)
    data = load_toml(p, "spec file")
    try:
        spec = AnalysisSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise BibInputError(f"{p}: field {where}: {err['msg'].removeprefix('Value error, ')}") from None
    check_model(spec, str(p))
    return spec


def check_model(spec: AnalysisSpec, source: str) -> None:
    """Parse the spec's formulas and check the pruning order names their random terms.

    Raises:
        BibInputError: naming the field (``model.formula``, ``model.prune``, ...).
    """
    from bib.analysis.formula import parse_formula

    if spec.outcomes[0] == spec.outcomes[1]:
        raise BibInputError(f"{source}: field outcomes: the two outcomes must differ")
    for field_name, text in (("pooled_formula", spec.model.pooled_formula), ("formula", spec.model.formula)):
        if text and parse_formula(text, f"{source}: field model.{field_name}").has_dot:
            raise BibInputError(f"{source}: field model.{field_name}: '.' is not read in an analysis spec (the "
                                "imported table has bookkeeping columns: participant_id, trial, ...); name the predictors")
    if not spec.model.formula:
        if spec.model.prune:
            raise BibInputError(f"{source}: field model.prune: needs model.formula")
        return
    f = parse_formula(spec.model.formula, f"{source}: field model.formula")
    if not f.random:
        raise BibInputError(f"{source}: field model.formula: a mixed model needs a random term such as (1 | participant)")
    for entry in spec.model.prune or []:
        if find_term(f.random, entry) is None:
            raise BibInputError(f"{source}: field model.prune: {entry!r} is not a random term of model.formula "
                                f"({', '.join(r.text for r in f.random)})")


def find_term(random: tuple, entry: str) -> int | None:
    """Index of the random term ``entry`` names (its text, or its grouping factor), or None."""
    norm = "".join(entry.split())
    for i, r in enumerate(random):
        if "".join(r.text.split()) == norm or r.group_name == entry.strip() or "".join(r.text.split()) == f"({norm})":
            return i
    return None
