"""The result of ``bib profile``: :class:`Profile` (one agent, every instrument) and :class:`ProfileTable` (several agents).

Both are :class:`bib.results.Result` objects (``to_json()``, ``to_markdown()``, ``plot()``, ``save()``);
``profile.json`` is ``Profile.to_json()`` (schema ``bib.profile/1``, documented in ``docs/profile.md``). Every
summary over seeds is ``{"mean", "se", "n"}`` with ``se = sd / sqrt(n)`` over the per-seed means
(``se`` is null with one seed, where no spread can be measured; ``mean`` is null when nothing was measured).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from bib.results import Result

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SCHEMA = "bib.profile/1"
TABLE_SCHEMA = "bib.profiles/1"


def mean_se(values: Sequence[float | None]) -> dict[str, Any]:
    """``{"mean", "se", "n"}`` of the finite values (``se = sd / sqrt(n)``; None for one value: one seed measures no
    spread, and 0.0 would claim a certain mean)."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return {"mean": None, "se": None, "n": 0}
    se = statistics.stdev(vals) / math.sqrt(len(vals)) if len(vals) > 1 else None
    return {"mean": statistics.fmean(vals), "se": se, "n": len(vals)}


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return statistics.fmean(vals) if vals else None


def fmt_summary(summary: dict[str, Any] | None, digits: int = 3, signed: bool = False) -> str:
    """``mean ± se`` of a summary (the mean alone when se is 0 or null, ``-`` when nothing was measured)."""
    if not summary or summary.get("mean") is None:
        return "-"
    m, se = summary["mean"], summary.get("se")
    text = f"{m:+.{digits}f}" if signed else f"{m:.{digits}f}"
    return text if not se else f"{text} ± {se:.{digits}f}"


def fmt_value(value: float | None, digits: int = 3, signed: bool = False) -> str:
    """A number as profile tables show it (``-`` for None)."""
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


@dataclass
class Profile(Result):
    """One agent measured by every instrument on the same BIB layouts (see ``docs/profile.md``).

    Attributes:
        agent: ``{"name", "description"}``.
        settings: :meth:`bib.profile.instruments.Settings.to_json`.
        actor: the agent acting in the BIB tasks: steps, share of trials ending on the task's goal
            and share on an optimal path, overall and per condition.
        meg: known-utility MEG towards each trial's goal and unknown-utility MEG over its objects (nats).
        self_reflection: the extended gridworld battery's measure, ``plain`` and ``reality_check``.
        agency: the agency suite's metrics on navigation and key grids.
        surprise: per observer, the max-surprise readout of the agent's own test trials beside the
            stimulus expected and unexpected outcomes of the same units.
        command: the command line that made it.
    """

    name: ClassVar[str] = "profile"
    agent: dict[str, Any]
    settings: dict[str, Any]
    actor: dict[str, Any]
    meg: dict[str, Any]
    self_reflection: dict[str, Any]
    agency: dict[str, Any]
    surprise: dict[str, Any]
    command: str = ""

    def to_json(self) -> dict[str, Any]:
        """The ``profile.json`` document."""
        return {"schema": SCHEMA, "agent": self.agent, "command": self.command, "settings": self.settings,
                "actor": self.actor, "meg": self.meg, "self_reflection": self.self_reflection,
                "agency": self.agency, "surprise": self.surprise}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Profile:
        """Read a ``profile.json`` document back (BibInputError on another schema)."""
        from bib.errors import BibInputError

        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            raise BibInputError(f"profile: expected schema {SCHEMA!r}, got {doc.get('schema') if isinstance(doc, dict) else doc!r}")
        return cls(doc["agent"], doc["settings"], doc["actor"], doc["meg"], doc["self_reflection"], doc["agency"],
                   doc["surprise"], doc.get("command", ""))

    def headline(self) -> dict[str, Any]:
        """The one-row summary used by tables: name and the main number of each instrument."""
        sr = self.self_reflection
        ip = self.surprise.get("inverse-planner", {})
        return {
            "agent": self.agent["name"],
            "reached_goal": self.actor["reached_goal"],
            "optimal": self.actor["optimal"],
            "meg_known": self.meg["known"],
            "meg_unknown": self.meg["unknown"],
            "self_reflection": sr["plain"]["score"],
            "self_reflection_rc": sr["reality_check"]["score"],
            "classic": (sr.get("classic") or {}).get("plain", {}).get("score"),
            "classic_rc": (sr.get("classic") or {}).get("reality_check", {}).get("score"),
            "agency_accuracy": self.agency["accuracy"],
            "agency_success": self.agency["success"],
            "agency_meg": self.agency["meg"],
            "surprise": ip.get("agent"),
            "surprise_expected": ip.get("expected"),
            "surprise_unexpected": ip.get("unexpected"),
        }

    def to_markdown(self) -> str:
        """``profile.md``: every instrument's numbers, with the command."""
        a, s = self.agent, self.settings
        lines = [f"# Profile of `{a['name']}`", "", a.get("description", ""), ""]
        if self.command:
            lines += [f"Made by: `{self.command}`", ""]
        lines += [
            f"Seeds {', '.join(map(str, s['seeds']))}; {s['units']} unit(s) per condition per seed "
            f"({len(s['conditions'])} conditions, {s['max_moves']} moves per trial at most). "
            "Every value is the mean over seeds ± its standard error (sd / sqrt(seeds)).",
            "",
            "## BIB tasks as the actor, and MEG of those paths",
            "",
            "| condition | steps | bumps (per move) | ends on the task's goal | optimal path | MEG known (nats) | MEG unknown (nats) |",
            "|---|---|---|---|---|---|---|",
        ]
        for cond in s["conditions"]:
            c = self.actor["per_condition"].get(cond, {})
            m = self.meg["per_condition"].get(cond, {})
            lines.append(f"| {cond} | {fmt_value(c.get('steps'), 1)} | {fmt_value(c.get('bump_share'), 2)} | "
                         f"{fmt_value(c.get('reached_goal'), 2)} | "
                         f"{fmt_value(c.get('optimal'), 2)} | {fmt_value(m.get('known'), 2)} | {fmt_value(m.get('unknown'), 2)} |")
        lines.append(f"| **all** | {fmt_summary(self.actor['steps'], 1)} | {fmt_summary(self.actor.get('bumps'), 2)} | "
                     f"{fmt_summary(self.actor['reached_goal'], 2)} | "
                     f"{fmt_summary(self.actor['optimal'], 2)} | {fmt_summary(self.meg['known'], 2)} | {fmt_summary(self.meg['unknown'], 2)} |")
        sr = self.self_reflection
        lines += [
            "",
            "## Self-reflection (extended gridworld battery)",
            "",
            f"Mean reward per step over the {len(s['battery'])} environments (each rule and its opposite): "
            f"**{fmt_summary(sr['plain']['score'], 4, True)}**; its reality check RC(agent): "
            f"**{fmt_summary(sr['reality_check']['score'], 4, True)}** (paper's SE convention sd/n: "
            f"{fmt_value(sr['plain']['stderr_paper'], 4)} and {fmt_value(sr['reality_check']['stderr_paper'], 4)}).",
            "",
            "| environment | agent | RC(agent) |",
            "|---|---|---|",
        ]
        for name in s["battery"]:
            lines.append(f"| {name} | {fmt_value(sr['plain']['environments'].get(name), 3, True)} | "
                         f"{fmt_value(sr['reality_check']['environments'].get(name), 3, True)} |")
        classic = sr.get("classic")
        lines.append("")
        if classic:
            lines.append(f"Classic integer battery (V1's 50 environments, {s.get('classic_steps', 1000)} steps, the "
                         f"agent's integer face): **{fmt_summary(classic['plain']['score'], 4, True)}**, RC(agent) "
                         f"**{fmt_summary(classic['reality_check']['score'], 4, True)}**.")
        else:
            lines.append("Classic integer battery: no adapter (an agent without history answers from the layout "
                         "alone, and the integer environments have none).")
        ag = self.agency
        lines += [
            "",
            "## Agency suite",
            "",
            f"{ag['grids']} grids ({s['agency']['navigation_grids']} navigation and {s['agency']['key_grids']} per key task "
            f"per seed, {s['agency']['rollouts']} rollouts each).",
            "",
            "| accuracy | success | SPL | entropy (bits) | JSD (bits) | MEG (nats) | bumps | invalid |",
            "|---|---|---|---|---|---|---|---|",
            "| " + " | ".join(fmt_summary(ag[k], 3) for k in ("accuracy", "success", "spl", "entropy", "jsd", "meg",
                                                        "bumps", "invalid")) + " |",
            "",
            "## Surprise of VOE observers at the agent's own test trials",
            "",
            "Max-surprise readout of the test trial; beside it the same observer on the stimulus expected and "
            "unexpected outcomes of the same units, and the share of units where the agent is less surprising "
            "than the unexpected outcome.",
            "",
            "| observer | agent | expected | unexpected | agent < unexpected |",
            "|---|---|---|---|---|",
        ]
        for name, sp in self.surprise.items():
            lines.append(f"| {name} | {fmt_summary(sp['agent'], 2)} | {fmt_summary(sp['expected'], 2)} | {fmt_summary(sp['unexpected'], 2)} | "
                         f"{fmt_value(sp['below_unexpected'], 2)} |")
        return "\n".join(lines) + "\n"

    def plot(self) -> Figure:
        """The profile's figure: one panel per instrument."""
        from matplotlib.figure import Figure

        s = self.settings
        fig = Figure(figsize=(12, 8.5))
        axes = fig.subplots(2, 2)
        conds = s["conditions"]
        ax = axes[0, 0]
        known = [self.meg["per_condition"].get(c, {}).get("known") or 0.0 for c in conds]
        unknown = [self.meg["per_condition"].get(c, {}).get("unknown") or 0.0 for c in conds]
        y = range(len(conds))
        ax.barh([i - 0.2 for i in y], known, height=0.4, label="known (task goal)")
        ax.barh([i + 0.2 for i in y], unknown, height=0.4, label="unknown (objects)")
        ax.set_yticks(list(y), conds, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("MEG per trial (nats)")
        ax.set_title("MEG of its paths in the BIB tasks")
        ax.legend(fontsize=8)
        ax = axes[0, 1]
        names = [n for n in s["battery"] if not n.startswith("opposite(")]
        plain = [self.self_reflection["plain"]["environments"].get(n) or 0.0 for n in names]
        rc = [self.self_reflection["reality_check"]["environments"].get(n) or 0.0 for n in names]
        y = range(len(names))
        ax.barh([i - 0.2 for i in y], plain, height=0.4, label="agent")
        ax.barh([i + 0.2 for i in y], rc, height=0.4, label="RC(agent)")
        ax.set_yticks(list(y), names, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("mean reward per step of each rule (its opposite: see profile.md)")
        ax.axvline(0, color="black", lw=0.5)
        ax.set_xlim(-1.05, 1.05)
        sr = self.self_reflection
        ax.set_title(f"self-reflection {fmt_summary(sr['plain']['score'], 3, True)} (RC {fmt_summary(sr['reality_check']['score'], 3, True)})",
                     fontsize=10)
        ax.legend(fontsize=8)
        ax = axes[1, 0]
        keys = ("accuracy", "success", "spl", "jsd")
        vals = [self.agency[k]["mean"] or 0.0 for k in keys]
        errs = [self.agency[k]["se"] or 0.0 for k in keys]
        ax.bar(keys, vals, yerr=errs, color="tab:green")
        ax.set_ylim(0, 1)
        ax.set_title(f"agency suite (MEG {fmt_summary(self.agency['meg'], 2)} nats)")
        ax = axes[1, 1]
        obs = list(self.surprise)
        x = range(len(obs))
        for k, (key, label) in enumerate((("expected", "expected"), ("agent", "agent"), ("unexpected", "unexpected"))):
            ax.bar([i + (k - 1) * 0.27 for i in x], [self.surprise[o][key]["mean"] or 0.0 for o in obs], width=0.27,
                   label=label)
        ax.set_xticks(list(x), obs)
        ax.set_ylabel("max surprise of the test trial")
        ax.set_title("observers' surprise at its own test trials")
        ax.legend(fontsize=8)
        fig.suptitle(f"profile of {self.agent['name']} (seeds {', '.join(map(str, s['seeds']))})")
        fig.tight_layout()
        return fig


HEADLINE_COLUMNS = (
    ("reached_goal", "ends on goal", 2, False),
    ("optimal", "optimal", 2, False),
    ("meg_known", "MEG known", 2, False),
    ("meg_unknown", "MEG unknown", 2, False),
    ("self_reflection", "self-reflection", 4, True),
    ("self_reflection_rc", "RC self-reflection", 4, True),
    ("classic", "classic battery", 3, True),
    ("classic_rc", "classic RC", 3, True),
    ("agency_accuracy", "agency accuracy", 3, False),
    ("agency_success", "agency success", 3, False),
    ("agency_meg", "agency MEG", 2, False),
    ("surprise", "IP surprise (agent)", 2, False),
    ("surprise_unexpected", "IP surprise (unexpected)", 2, False),
)
"""Columns of the comparison table: headline key, header, digits, signed."""


@dataclass
class ProfileTable(Result):
    """Several agents' profiles side by side (``profiles.json`` / ``profiles.md``)."""

    name: ClassVar[str] = "profiles"
    profiles: list[Profile] = field(default_factory=list)
    command: str = ""

    def to_json(self) -> dict[str, Any]:
        """``profiles.json``: the headline numbers of every agent."""
        return {"schema": TABLE_SCHEMA, "command": self.command,
                "settings": self.profiles[0].settings if self.profiles else {},
                "agents": [p.headline() for p in self.profiles]}

    def to_markdown(self) -> str:
        """``profiles.md``: one row per agent (mean ± SE over seeds)."""
        head = "| agent | " + " | ".join(h for _, h, _, _ in HEADLINE_COLUMNS) + " |"
        lines = []
        if self.command:
            lines += [f"Made by: `{self.command}`", ""]
        lines += [head, "|---" * (len(HEADLINE_COLUMNS) + 1) + "|"]
        for p in self.profiles:
            h = p.headline()
            lines.append(f"| {h['agent']} | " + " | ".join(fmt_summary(h[k], d, sg) for k, _, d, sg in HEADLINE_COLUMNS) + " |")
        return "\n".join(lines) + "\n"

    def plot(self) -> Figure:
        """MEG against self-reflection, one point per agent (error bars: SE)."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(7, 5))
        ax = fig.subplots()
        for p in self.profiles:
            h = p.headline()
            x, y = h["self_reflection"], h["meg_known"]
            if x["mean"] is None or y["mean"] is None:
                continue
            ax.errorbar(x["mean"], y["mean"], xerr=x["se"] or 0, yerr=y["se"] or 0, fmt="o")
            ax.annotate(h["agent"], (x["mean"], y["mean"]), fontsize=8, xytext=(4, 4), textcoords="offset points")
        ax.set_xlabel("self-reflection (mean reward per step)")
        ax.set_ylabel("MEG towards the task's goal (nats per trial)")
        ax.axvline(0, color="grey", lw=0.5)
        fig.tight_layout()
        return fig
