"""Analysis specs (TOML under ``analysis/``): tasks, scale, covariates, exclusions and import mappings."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bib.analysis.schema import COLUMNS, CONDITION_IDS, OUTCOMES, PHASES
from bib.errors import BibInputError

STEPS: tuple[str, ...] = ("missing", "trial_error", "min_look", "max_look", "both_outcomes")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Exclusions(_Strict):
    """The exclusion pipeline: which steps run, in which order, with which parameters.

    ``missing`` drops trials without a looking time; ``trial_error`` drops trials coded with an error
    (fussiness, parent interference, ...); ``min_look`` drops looks shorter than ``min_look_s``;
    ``max_look`` caps looks at ``max_look_s`` (or drops them, ``max_look_action = "exclude"``);
    ``both_outcomes`` drops a participant's rows of a task unless an expected and an unexpected test
    trial of that task survive the earlier steps.
    """

    steps: list[Literal["missing", "trial_error", "min_look", "max_look", "both_outcomes"]] = Field(
        default_factory=lambda: list(STEPS)
    )
    min_look_s: float = Field(default=2.0, ge=0)
    max_look_s: float | None = Field(default=None, gt=0)
    max_look_action: Literal["cap", "exclude"] = "cap"


class Mapping(_Strict):
    """How a non-canonical CSV maps onto the canonical columns.

    ``columns`` maps canonical column -> column in the file; ``values`` maps, per canonical column,
    a value in the file -> canonical value (e.g. ``outcome = {congruent = "expected"}``);
    ``constants`` fills canonical columns the file lacks; ``unit`` is the looking-time unit.
    """

    columns: dict[str, str] = Field(default_factory=dict)
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

    task: Literal[CONDITION_IDS]  # type: ignore[valid-type]
    phase: Literal[PHASES] = "test"  # type: ignore[valid-type]
    outcome: Literal[OUTCOMES + ("",)] = ""  # type: ignore[valid-type]


class PyHab(_Strict):
    """PyHab import settings: which columns carry id and looking time, and the trial-type mapping."""

    participant: str = "sID"
    looking: str = "sumOnA"
    order: str = "cond"
    lab: str = ""
    trial_types: dict[str, TrialType] = Field(default_factory=dict)
    ignore: list[str] = Field(default_factory=list)


class AnalysisSpec(_Strict):
    """A whole analysis spec; every field has a default, so an empty file is a valid spec."""

    name: str = "analysis"
    description: str = ""
    format: Literal["csv", "pyhab"] = "csv"
    tasks: list[Literal[CONDITION_IDS]] = Field(default_factory=list)  # type: ignore[valid-type]
    scale: Literal["log", "raw"] = "log"
    covariates: list[Literal["order", "age"]] = Field(default_factory=list)
    alpha: float = Field(default=0.05, gt=0, lt=1)
    exclusions: Exclusions = Field(default_factory=Exclusions)
    mapping: Mapping = Field(default_factory=Mapping)
    pyhab: PyHab = Field(default_factory=PyHab)


def load_spec(path: str | Path | None) -> AnalysisSpec:
    """Read and validate an analysis spec; ``None`` gives the defaults.

    Raises:
        BibInputError: unreadable TOML, or a field with a wrong name, type or value (named).
    """
    if path is None:
        return AnalysisSpec()
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BibInputError(f"{p}: cannot read spec ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise BibInputError(f"{p}: invalid TOML ({exc})") from None
    try:
        return AnalysisSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise BibInputError(f"{p}: field {where}: {err['msg']}") from None
