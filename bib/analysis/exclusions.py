"""The exclusion pipeline: declared steps applied in order, every excluded or capped row reported."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from bib.analysis.schema import OUTCOMES, ROW
from bib.analysis.spec import Exclusions
from bib.errors import BibInputError

#: Columns of the exclusion report (one row per excluded or capped source row).
REPORT_COLUMNS: list[str] = [ROW, "participant_id", "task", "trial_num", "phase", "outcome", "looking_time_s", "step", "reason"]

#: Exclusion codes an experimenter gives a trial or a whole session (bib experiment's ``trial_exclusion``
#: and ``session_exclusion`` columns), code -> the reason as papers report it. MB1 (Frank et al. 2020)
#: lists session-level errors (equipment, experimenter, parent or outside interference) and trial-level
#: errors ("the most common source of trial-level errors was infant fussiness"); docs/experiment.md.
EXCLUSION_CODES: dict[str, str] = {
    "fussiness": "fussiness",
    "inattention": "inattention",
    "parent_interference": "parent interference",
    "outside_interference": "outside interference",
    "experimenter_error": "experimenter error",
    "equipment": "equipment failure",
    "ineligible": "not eligible (age, gestation, language, ...)",
    "other": "other (see the notes)",
}
#: The session's good/no-good flag (``session_ok``): empty means not marked, read as good.
SESSION_OK: tuple[str, ...] = ("good", "no-good")
#: The columns the ``codes`` step reads (absent columns: nothing coded).
CODE_COLUMNS: tuple[str, ...] = ("session_ok", "session_exclusion", "trial_exclusion")


@dataclass(frozen=True)
class ExclusionResult:
    """Rows kept (capped looks already capped) and the report of excluded and capped rows."""

    kept: pd.DataFrame
    excluded: pd.DataFrame
    capped: pd.DataFrame

    def n_excluded_participants(self, task: str) -> int:
        """Participants with rows in ``task`` none of whose test trials of that task were kept."""
        had = set(self.excluded.loc[self.excluded["task"] == task, "participant_id"])
        kept = set(self.kept.loc[(self.kept["task"] == task) & (self.kept["phase"] == "test"), "participant_id"])
        return len(had - kept)

    def participants_by_reason(self) -> list[dict[str, object]]:
        """Participants whose whole session the ``codes`` step excluded, counted by reason (as papers
        report exclusions: "3 infants for fussiness, 1 for parent interference")."""
        whole = self.excluded[(self.excluded["step"] == "codes") & self.excluded["reason"].str.startswith("session")]
        counts = whole.groupby("reason", sort=False)["participant_id"].nunique()
        return [{"reason": reason.removeprefix("session: ").removeprefix("session "), "participants": int(n)}
                for reason, n in counts.items()]

    def summary(self) -> list[dict[str, object]]:
        """Excluded and capped rows counted by step and reason, in the order the steps ran."""
        out = []
        for frame in (self.excluded, self.capped):
            if frame.empty:
                continue
            counts = frame.groupby(["step", "reason"], sort=False).size()
            out += [{"step": step, "reason": reason, "rows": int(n)} for (step, reason), n in counts.items()]
        return out


def _report(rows: pd.DataFrame, step: str, reason: pd.Series | str) -> pd.DataFrame:
    out = rows.assign(step=step, reason=reason)
    return out[REPORT_COLUMNS]


def apply_exclusions(table: pd.DataFrame, rules: Exclusions, outcomes: tuple[str, str] = OUTCOMES,
                     source: str = "") -> ExclusionResult:
    """Run the declared exclusion steps on a validated looking-time table.

    Args:
        table: a table from :mod:`bib.analysis.importers`.
        rules: the spec's ``[exclusions]``; ``rules.steps`` gives the steps and their order.
        source: the data's name, for error messages.

    Returns:
        The kept rows and one report row per excluded row (``step``, ``reason``) and per capped row.

    Raises:
        BibInputError: an exclusion code or session flag outside the vocabulary (``codes`` step).
    """
    kept = table.copy()
    excluded: list[pd.DataFrame] = []
    capped = pd.DataFrame(columns=REPORT_COLUMNS)
    for step in rules.steps:
        lt = kept["looking_time_s"]
        if step == "codes":
            reason = _coded(kept, source)
            mask = reason != ""
            excluded.append(_report(kept[mask], step, reason[mask]))
        elif step == "missing":
            mask = lt.isna()
            excluded.append(_report(kept[mask], step, "missing looking time"))
        elif step == "trial_error":
            mask = kept["trial_error"] != ""
            excluded.append(_report(kept[mask], step, "trial error: " + kept.loc[mask, "trial_error"]))
        elif step == "min_look":
            mask = lt < rules.min_look_s
            excluded.append(_report(kept[mask], step, f"look shorter than {rules.min_look_s:g} s"))
        elif step == "max_look":
            if rules.max_look_s is None:
                continue
            mask = lt > rules.max_look_s
            if rules.max_look_action == "exclude":
                excluded.append(_report(kept[mask], step, f"look longer than {rules.max_look_s:g} s"))
            else:
                capped = _report(kept[mask], step, f"capped at {rules.max_look_s:g} s")
                kept.loc[mask, "looking_time_s"] = rules.max_look_s
                mask = pd.Series(False, index=kept.index)
        else:  # both_outcomes
            lacking = _lacking_outcomes(kept, outcomes)
            keys = pd.Series(list(zip(kept["participant_id"], kept["task"], strict=True)), index=kept.index)
            mask = keys.map(lambda k: k in lacking).astype(bool)
            reason = keys[mask].map(lambda k: f"participant lacks a usable {lacking[k]} test trial")
            excluded.append(_report(kept[mask], step, reason))
        kept = kept[~mask]
    nonempty = [e for e in excluded if len(e)]
    report = pd.concat(nonempty, ignore_index=True) if nonempty else pd.DataFrame(columns=REPORT_COLUMNS)
    return ExclusionResult(kept.reset_index(drop=True), report, capped.reset_index(drop=True))


def _coded(table: pd.DataFrame, source: str) -> pd.Series:
    """Each row's exclusion reason from the experimenter's codes ("" when none), the session's first:
    ``session marked no-good``, ``session: <reason>``, ``trial: <reason>``.

    Raises:
        BibInputError: a value outside :data:`EXCLUSION_CODES` / :data:`SESSION_OK`, naming the row.
    """
    cells = {c: (table[c].fillna("").astype(str).str.strip() if c in table.columns else pd.Series("", index=table.index))
             for c in CODE_COLUMNS}
    for col, known in (("session_ok", SESSION_OK), ("session_exclusion", tuple(EXCLUSION_CODES)),
                       ("trial_exclusion", tuple(EXCLUSION_CODES))):
        bad = (cells[col] != "") & ~cells[col].isin(known)
        if bad.any():
            first = bad.idxmax()
            row = str(table.loc[first, ROW])
            where = row if ":" in row else f"{source}: line {row}"
            raise BibInputError(f"{where}: column {col}: unknown value {cells[col][first]!r}; "
                                f"known: {', '.join(known)} (docs/experiment.md, Participant records)")
    labels = EXCLUSION_CODES
    reason = pd.Series("", index=table.index, dtype=object)
    trial = cells["trial_exclusion"] != ""
    reason[trial] = "trial: " + cells["trial_exclusion"][trial].map(labels)
    session = cells["session_exclusion"] != ""
    reason[session] = "session: " + cells["session_exclusion"][session].map(labels)
    reason[cells["session_ok"] == "no-good"] = "session marked no-good"
    return reason


def _lacking_outcomes(kept: pd.DataFrame, outcomes: tuple[str, str] = OUTCOMES) -> dict[tuple[str, str], str]:
    """(participant, task) -> the test outcome(s) it lacks, for every incomplete pair."""
    have: dict[tuple[str, str], set[str]] = {}
    for pid, task, phase, outcome in kept[["participant_id", "task", "phase", "outcome"]].itertuples(index=False):
        seen = have.setdefault((pid, task), set())
        if phase == "test":
            seen.add(outcome)
    out = {}
    for key, seen in have.items():
        missing = [o for o in outcomes if o not in seen]
        if missing:
            out[key] = " and ".join(missing)
    return out
