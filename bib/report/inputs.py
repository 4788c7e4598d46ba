"""What ``bib report`` is given: each input's kind, detected from the files it holds, read with the
library's own reader for that format.

Kinds (first match wins):

* ``stimuli``: a folder holding ``manifest.csv`` (a generated set), or that ``manifest.csv`` itself;
* ``evaluation``: a ``bib evaluate --json`` object (``*.json`` with ``conditions``), a folder holding
  ``evaluation.json``, or an "ours" table (``baselines/results.csv``: observer, condition, accuracy);
* ``audit``: a ``bib audit`` output (``audit.json``, schema ``bib.audit/1``) or its folder;
* ``analysis``: a ``bib analyze --json`` report (``*.json`` with ``tasks`` and ``exclusions``) or a
  folder holding ``report.json``;
* ``profile``: a ``bib profile`` output: one agent's ``profile.json`` (schema ``bib.profile/1``) or several
  agents' ``profiles.json`` (``bib.profiles/1``, with each agent's folder beside it), or their folder.

Anything else is refused with one line naming the path.
"""

from __future__ import annotations

import contextlib
import csv
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bib.errors import BibInputError
from bib.guard import folder_files, inside, load_json, read_text, text_lines

KINDS = ("stimuli", "evaluation", "audit", "analysis", "profile")
#: Fixed file names inside an output folder, per kind.
FOLDER_FILES = {"audit": "audit.json", "evaluation": "evaluation.json", "analysis": "report.json"}
AUDIT_SCHEMA = "bib.audit/1"
#: ``bib profile`` outputs: schema -> file name (one agent, several agents).
PROFILE_FILES = {"bib.profile/1": "profile.json", "bib.profiles/1": "profiles.json"}


@dataclass
class StimulusSet:
    """A generated set: its folder, manifest rows, orders rows, and spec (None for ``--task`` sets)."""

    root: Path
    rows: list[dict[str, str]]
    orders: list[dict[str, str]]
    spec: Any = None


@dataclass
class Evaluation:
    """One evaluation input as rows of an "ours" table (:data:`bib.evaluation.TABLE_COLUMNS`)."""

    path: Path
    rows: list[dict[str, str]]
    doc: dict[str, Any] | None = None


@dataclass
class AuditReport:
    """A ``bib audit`` result and its heatmap (``audit.svg`` beside it, when there)."""

    path: Path
    doc: dict[str, Any]
    figure: Path | None = None


@dataclass
class AnalysisReport:
    """A ``bib analyze`` report and the folder it came from (whose plots the page shows)."""

    path: Path
    doc: dict[str, Any]
    plots: list[Path] = field(default_factory=list)


@dataclass
class ProfileReport:
    """A ``bib profile`` output: one agent's profile or a table of agents, and its figure (the SVG beside it).

    Attributes:
        path: ``profile.json`` or ``profiles.json``.
        doc: its JSON document.
        figure: ``profile.svg`` / ``profiles.svg`` beside it, when there.
        agents: for a table, each agent's own profile found in the folders beside it (table order).
    """

    path: Path
    doc: dict[str, Any]
    figure: Path | None = None
    agents: list[ProfileReport] = field(default_factory=list)

    @property
    def is_table(self) -> bool:
        return self.doc.get("schema") == "bib.profiles/1"


@dataclass
class Input:
    """One command-line input: its kind, path, a short label and the data read from it."""

    kind: str
    path: Path
    label: str
    data: StimulusSet | Evaluation | AuditReport | AnalysisReport | ProfileReport


def _json_keys(path: Path) -> tuple[set[str], object]:
    doc = load_json(read_text(path), path)  # a regular file, size-capped, depth-checked: never a FIFO or /dev/zero
    return (set(doc), doc.get("schema")) if isinstance(doc, dict) else (set(), None)


def _csv_header(path: Path) -> list[str]:
    lines = (line for line in text_lines(path) if not line.startswith("#"))
    return next(csv.reader(lines), [])


def _beside(path: Path) -> Path | None:
    """A figure beside an input (``audit.svg``, ``profile.svg``) when there: a regular file resolving
    inside the input's folder (a link out of it is refused, not copied into the site)."""
    if not path.is_file():
        return None
    return inside(path.parent, path, f"{path.parent}: a file beside the input")


def detect(path: Path) -> tuple[str, Path]:
    """``(kind, path of the file or folder to read)`` for one input; BibInputError when unknown."""
    from bib.stimuli.manifest import MANIFEST, is_manifest_header

    if not path.exists():
        raise BibInputError(f"{path}: no such file or folder")
    if path.is_dir():
        if (path / MANIFEST).is_file():
            return "stimuli", path
        for kind, name in FOLDER_FILES.items():
            if (path / name).is_file():
                return kind, path / name
        for name in PROFILE_FILES.values():
            if (path / name).is_file():
                return "profile", path / name
    elif path.suffix == ".json":
        keys, schema = _json_keys(path)
        if schema == AUDIT_SCHEMA:
            return "audit", path
        if schema in PROFILE_FILES:
            return "profile", path
        if "conditions" in keys:
            return "evaluation", path
        if {"tasks", "exclusions"} <= keys:
            return "analysis", path
    elif path.suffix == ".csv":
        header = _csv_header(path)
        if is_manifest_header(header):
            return "stimuli", path.parent
        if {"observer", "condition", "accuracy"} <= set(header):
            return "evaluation", path
    raise BibInputError(
        f"{path}: not a report input (expected a stimulus set folder with manifest.csv, "
        "`bib evaluate` output or an observer table, `bib audit` output, a `bib analyze --json` report, "
        "or a `bib profile` output)"
    )


def _check_videos(root: Path, rows: list[dict[str, str]], orders: list[dict[str, str]]) -> None:
    for row in [*rows, *orders]:
        video = row.get("video_path", "")
        if video and not (root / video).is_file():
            raise BibInputError(f"{root / video}: video listed in {root.name}/"
                                f"{'orders.csv' if 'position' in row else 'manifest.csv'} is missing")


def read_stimulus_set(root: Path) -> StimulusSet:
    """Manifest, orders and spec of a set; every listed video must exist."""
    from bib.stimuli.manifest import read_manifest
    from bib.stimuli.orders import read_orders
    from bib.stimuli.spec import load_spec

    rows = read_manifest(root)
    if not rows:
        raise BibInputError(f"{root / 'manifest.csv'}: the manifest lists no episodes")
    orders = read_orders(root)
    _check_videos(root, rows, orders)
    for row in rows:
        if not (root / row["episode_path"]).is_file():
            raise BibInputError(f"{root / row['episode_path']}: episode listed in {root.name}/manifest.csv is missing")
    spec = load_spec(root / "spec.toml") if (root / "spec.toml").is_file() else None
    return StimulusSet(root, rows, orders, spec)


def _observer_name(path: Path, doc: dict[str, Any]) -> str:
    name = doc.get("observer") or doc.get("name")
    if isinstance(name, str) and name:
        return name
    return path.parent.name if path.name == FOLDER_FILES["evaluation"] else path.stem


def read_evaluation_input(path: Path) -> Evaluation:
    """An evaluation JSON (one observer, named by its ``observer`` field or file) or an "ours" table."""
    from bib.evaluation import read_evaluation, read_table, table_rows

    if path.suffix == ".csv":
        return Evaluation(path, read_table(path))
    doc = read_evaluation(path)
    sets = "; ".join(f"{s.get('name')} seed {s.get('seed')}" for s in doc.get("sets", []) if isinstance(s, dict))
    rows = [{k: str(v) for k, v in r.items()} for r in table_rows(_observer_name(path, doc), doc, sets, "")]
    return Evaluation(path, rows, doc)


def read_audit_input(path: Path) -> AuditReport:
    """An audit and the heatmap beside it."""
    from bib.observers.audit import read_audit

    figure = path.parent / "audit.svg"
    return AuditReport(path, read_audit(path), _beside(figure))


def read_analysis_input(path: Path) -> AnalysisReport:
    """An analysis report and the SVG plots beside it (``paired-*.svg``, ``forest.svg``)."""
    from bib.analysis.analyze import read_report

    doc = read_report(path)
    folder = path.parent
    plots = folder_files(folder, "*.svg") + folder_files(folder, "plots/*.svg")
    return AnalysisReport(path, doc, plots)


def _read_profile_doc(path: Path) -> dict[str, Any]:
    from bib.profile.result import Profile

    doc = load_json(read_text(path), path)
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if schema not in PROFILE_FILES:
        raise BibInputError(f"{path}: not a `bib profile` output (schema {schema!r})")
    try:
        if schema == "bib.profile/1":
            Profile.from_json(doc).headline()
        elif not isinstance(doc.get("agents"), list) or not all(isinstance(a, dict) and "agent" in a for a in doc["agents"]):
            raise KeyError("agents")
    except (KeyError, TypeError, AttributeError) as exc:
        raise BibInputError(f"{path}: incomplete {schema} document (missing {exc})") from None
    return doc


def read_profile_input(path: Path) -> ProfileReport:
    """A profile (``profile.json``) or a table of profiles (``profiles.json``, with the agents' own
    ``<agent>/profile.json`` read from the folders beside it, when there) and the figure beside it."""
    doc = _read_profile_doc(path)
    figure = path.with_suffix(".svg")
    report = ProfileReport(path, doc, _beside(figure))
    if report.is_table:
        found: dict[str, ProfileReport] = {}
        for sub in (p for p in folder_files(path.parent, "*/profile.json") if p.is_file()):
            one = read_profile_input(sub)
            if not one.is_table:
                found.setdefault(one.doc["agent"]["name"], one)
        report.agents = [found[a["agent"]] for a in doc["agents"] if a["agent"] in found]
    return report


@contextlib.contextmanager
def malformed(what: str) -> Iterator[None]:
    """Turn the error a malformed input raises deep in reading or rendering (a field of the wrong type,
    a missing key, a template's undefined value) into one line naming ``what`` (the input file):
    ``FILE: malformed input (TypeError: ...)``, exit 2, never a traceback (issue 39)."""
    from jinja2.exceptions import UndefinedError

    try:
        yield
    except BibInputError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError, IndexError, UndefinedError) as exc:
        detail = (str(exc).strip().splitlines() or [""])[0][:120]
        raise BibInputError(f"{what}: malformed input ({type(exc).__name__}: {detail})") from None


def read_inputs(paths: list[Path]) -> list[Input]:
    """Detect and read every input (all are checked before the site is built)."""
    out: list[Input] = []
    seen: set[tuple[str, Path]] = set()
    for given in paths:
        kind, path = detect(given)
        key = (kind, path.resolve())
        if key in seen:
            raise BibInputError(f"{given}: given twice")
        seen.add(key)
        with malformed(str(path)):
            out.append(_read_input(kind, path))
    return out


def _read_input(kind: str, path: Path) -> Input:
    """One input of a known ``kind``, read and checked."""
    if kind == "stimuli":
        data: StimulusSet | Evaluation | AuditReport | AnalysisReport | ProfileReport = read_stimulus_set(path)
        label = data.spec.name if data.spec is not None else path.resolve().name
    elif kind == "evaluation":
        data = read_evaluation_input(path)
        label = path.resolve().parent.name if path.name == FOLDER_FILES["evaluation"] else path.stem
    elif kind == "audit":
        data = read_audit_input(path)
        label = path.resolve().parent.name if path.name == FOLDER_FILES["audit"] else path.stem
    elif kind == "analysis":
        data = read_analysis_input(path)
        # named after the study (the analysis spec's name), not the folder (out/analysis gave analysis-analysis.html)
        from bib.analysis.spec import AnalysisSpec

        study = data.doc.get("spec")
        unnamed = AnalysisSpec.model_fields["name"].default
        label = study if isinstance(study, str) and study and study != unnamed else (
            path.resolve().parent.name if path.name == FOLDER_FILES["analysis"] else path.stem)
    else:
        data = read_profile_input(path)
        label = path.resolve().parent.name if path.name in PROFILE_FILES.values() else path.stem
    return Input(kind, path, label, data)
