"""seals' CliffWorld as a TabularMDP, its greedy / epsilon-greedy policies, and the paper's two MEG experiments."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from bib.errors import BibInputError
from bib.meg.known import known_utility_meg
from bib.meg.soft import occupancy
from bib.meg.unknown import mlp_utility_meg, tabular_utility_meg
from bib.resources import resource
from bib.results import Result, save_figure
from bib.world.tabular import TabularMDP

if TYPE_CHECKING:
    from matplotlib.figure import Figure

EPSILONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
GOAL_LENGTHS = (1, 2, 3, 4)
#: Readings of the paper's goal region of length k, which "run[s] for either 1, 2, 3 or 4 squares along the top
#: row and back column" (Section 6): the k rightmost top-row cells (``top-row``, the default and what ``bib meg
#: cliffworld`` measures), the top-right cell and the k - 1 cells below it (``back-column``), or both
#: (``top-row-and-back-column``: k cells along each, 2k - 1 in all). baselines/meg/paper_scan.py scans all three.
GOAL_REGIONS = ("top-row", "back-column", "top-row-and-back-column")

DEFAULT_SETTINGS: dict[str, Any] = {"width": 7, "height": 4, "horizon": 40, "wind": 0.3}
"""``bib meg cliffworld`` without ``--paper``: seals' default CliffWorld (7 x 4) with wind 0.3 and horizon 40."""
PAPER_SETTINGS: dict[str, Any] = {"width": 10, "height": 4, "horizon": 40, "wind": 0.3}
"""``bib meg cliffworld --paper``: the CliffWorld the MEG paper's text states (Section 6: "a 4x10 gridworld", wind
0.3, rewards +10 / -10 / -1, start top left, goal top right), read as seals' ``width=10, height=4``. The paper
states no horizon and no discount; 40 is the horizon of imitation's MCE IRL tutorial on CliffWorld, the algorithm
the paper says it adapted (see docs/meg.md, "The paper's tables", for every setting tried)."""
PAPER_VALUES = resource("published/meg_cliffworld.csv")
"""The paper's Appendix D.1 tables (known MEG; unknown MEG mean and std) per experiment and parameter."""
#: Agreement the paper comparison asks for: known within 5% or 0.01 nats; unknown within 3 of the paper's std.
KNOWN_REL_TOL, KNOWN_ABS_TOL, UNKNOWN_SDS = 0.05, 0.01, 3.0


def cliffworld(
    width: int = DEFAULT_SETTINGS["width"],
    height: int = DEFAULT_SETTINGS["height"],
    horizon: int = DEFAULT_SETTINGS["horizon"],
    wind: float = DEFAULT_SETTINGS["wind"],
    goal_length: int = 1,
    rew_default: float = -1.0,
    rew_goal: float = 10.0,
    rew_cliff: float = -10.0,
    goal_region: str = "top-row",
) -> TabularMDP:
    """CliffWorld with seals' conventions (``seals.diagnostics.cliff_world.CliffWorldEnv``).

    State ``row * width + col`` (row 0 on top); start (0, 0); 4 diagonal actions
    ``0 = up-left, 1 = up-right, 2 = down-left, 3 = down-right``; with probability ``wind`` the agent
    lands one extra row up; coordinates are clamped; no terminal states; state-only reward
    ``-1`` below the top row and at the start, ``rew_goal`` on the ``goal_length`` rightmost top-row
    cells (seals: ``goal_length = 1``), ``rew_cliff`` on the other top-row cells. ``goal_region`` (one of
    :data:`GOAL_REGIONS`) reads the goal region of length ``goal_length`` along the top row (the default), down the
    back column from the top-right cell, or both.
    """
    if width < 3 or height < 2:
        raise BibInputError(f"cliffworld: need width >= 3 and height >= 2, got {width} x {height}")
    if not 0.0 <= wind <= 1.0:
        raise BibInputError(f"cliffworld: wind must be in [0, 1], got {wind}")
    if goal_region not in GOAL_REGIONS:
        raise BibInputError(f"cliffworld: unknown goal region {goal_region!r}; known: {', '.join(GOAL_REGIONS)}")
    longest = {"top-row": width - 1, "back-column": height, "top-row-and-back-column": min(width - 1, height)}
    if not 1 <= goal_length <= longest[goal_region]:
        where = "" if goal_region == "top-row" else f" for the goal region {goal_region}"
        raise BibInputError(f"cliffworld: goal length must be in 1..{longest[goal_region]}, got {goal_length}{where}")
    S = width * height
    T = np.zeros((S, 4, S))
    for row in range(height):
        for col in range(width):
            s = row * width + col
            for drow in (-1, 1):
                for dcol in (-1, 1):
                    a = (drow + 1) + (dcol + 1) // 2
                    c = min(max(col + dcol, 0), width - 1)
                    r1 = min(max(row + drow, 0), height - 1)
                    r2 = min(max(row + drow - 1, 0), height - 1)
                    T[s, a, r1 * width + c] += 1.0 - wind
                    T[s, a, r2 * width + c] += wind
    reward = np.full(S, rew_default)
    reward[1:width] = rew_cliff
    if goal_region != "back-column":
        reward[width - goal_length : width] = rew_goal
    if goal_region != "top-row":
        reward[[row * width + width - 1 for row in range(goal_length)]] = rew_goal
    return TabularMDP(T, reward, horizon)


def greedy_policy(mdp: TabularMDP, utility: np.ndarray | None = None) -> np.ndarray:
    """The finite-horizon optimal policy ``[H, S, A]``: argmax of the hard ``Q_t``, ties to the lowest action."""
    S, A, H = mdp.shape
    u = mdp.require_utility(utility)
    pi = np.zeros((H, S, A))
    v = np.zeros(S)
    for t in range(H - 1, -1, -1):
        q = u[None, :] + mdp.backup(v)
        pi[t, np.arange(S), np.argmax(q, axis=0)] = 1.0
        v = q.max(axis=0)
    return pi


def epsilon_greedy(mdp: TabularMDP, epsilon: float, utility: np.ndarray | None = None) -> np.ndarray:
    """``(1 - epsilon) * greedy + epsilon / |A|``."""
    if not 0.0 <= epsilon <= 1.0:
        raise BibInputError(f"epsilon: must be in [0, 1], got {epsilon}")
    return (1.0 - epsilon) * greedy_policy(mdp, utility) + epsilon / mdp.n_actions


def xy_features(width: int, height: int) -> np.ndarray:
    """seals' ``use_xy_obs`` features ``(col / (width-1), row / (height-1))`` per state ``[S, 2]``."""
    rows, cols = np.divmod(np.arange(width * height), width)
    return np.stack([cols / (width - 1), rows / (height - 1)], axis=1)


@dataclass
class CliffRow:
    """One measured policy: which experiment, its parameter, and the MEG values."""

    experiment: str
    parameter: float
    known: float
    beta: float
    unknown_tabular: float
    mlp_mean: float | None = None
    mlp_std: float | None = None
    mlp_runs: list[float] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-friendly dict (infinite beta as a string)."""
        d = dict(self.__dict__)
        if math.isinf(d["beta"]):
            d["beta"] = "inf" if d["beta"] > 0 else "-inf"
        return d


def measure(
    mdp: TabularMDP, policy: np.ndarray, experiment: str, parameter: float, *, mlp_restarts: int = 0, seed: int = 0,
    features: np.ndarray | None = None,
) -> CliffRow:
    """Known-utility MEG (the MDP's reward), tabular unknown-utility MEG and optionally MLP MEG."""
    known = known_utility_meg(mdp, policy)
    tab = tabular_utility_meg(mdp, policy)
    row = CliffRow(experiment, parameter, known.meg, known.beta, tab.meg)
    if mlp_restarts > 0:
        mlp = mlp_utility_meg(mdp, policy, features, restarts=mlp_restarts, seed=seed)
        row.mlp_mean, row.mlp_std, row.mlp_runs = mlp.mean, mlp.std, list(mlp.runs)
    return row


def run_experiments(
    width: int = DEFAULT_SETTINGS["width"], height: int = DEFAULT_SETTINGS["height"],
    horizon: int = DEFAULT_SETTINGS["horizon"], wind: float = DEFAULT_SETTINGS["wind"], *,
    epsilons: tuple[float, ...] = EPSILONS, goal_lengths: tuple[int, ...] = GOAL_LENGTHS,
    mlp_restarts: int = 0, seed: int = 0,
) -> list[CliffRow]:
    """The paper's experiments: epsilon-greedy sweep (goal length 1) and optimal policies for goal lengths k."""
    feats = xy_features(width, height)
    rows = []
    base = cliffworld(width, height, horizon, wind)
    for eps in epsilons:
        rows.append(measure(base, epsilon_greedy(base, eps), "epsilon-greedy", eps, mlp_restarts=mlp_restarts, seed=seed, features=feats))
    for k in goal_lengths:
        mdp = cliffworld(width, height, horizon, wind, goal_length=k)
        rows.append(measure(mdp, greedy_policy(mdp), "goal-length", k, mlp_restarts=mlp_restarts, seed=seed, features=feats))
    return rows


def paper_values(path: str | Path = PAPER_VALUES) -> dict[tuple[str, float], dict[str, float]]:
    """The paper's tables: ``(experiment, parameter) -> {"known", "unknown_mean", "unknown_sd"}``."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(line for line in fh if not line.startswith("#")))
    return {(r["experiment"], float(r["parameter"])): {k: float(r[k]) for k in ("known", "unknown_mean", "unknown_sd")}
            for r in rows}


def compare_with_paper(rows: list[CliffRow]) -> list[dict[str, Any]]:
    """Each measured row beside the paper's value, with a verdict per column.

    Known-utility MEG agrees when within 5% or 0.01 nats of the paper's; unknown-utility MEG (ours: the MLP mean
    when measured, else the tabular optimum, which bounds every MLP search from above) when within 3 of the
    paper's standard deviations.
    """
    paper = paper_values()
    out = []
    for r in rows:
        ref = paper.get((r.experiment, float(r.parameter)))
        if ref is None:
            continue
        unknown, kind = (r.mlp_mean, "mlp") if r.mlp_mean is not None else (r.unknown_tabular, "tabular")
        known_ok = abs(r.known - ref["known"]) <= max(KNOWN_REL_TOL * abs(ref["known"]), KNOWN_ABS_TOL)
        unknown_ok = abs(unknown - ref["unknown_mean"]) <= UNKNOWN_SDS * ref["unknown_sd"]
        out.append({"experiment": r.experiment, "parameter": r.parameter, "known": r.known,
                    "paper_known": ref["known"], "known_reproduced": bool(known_ok), "unknown": unknown,
                    "unknown_kind": kind, "paper_unknown_mean": ref["unknown_mean"],
                    "paper_unknown_sd": ref["unknown_sd"], "unknown_reproduced": bool(unknown_ok)})
    return out


def format_paper_comparison(comparison: list[dict[str, Any]]) -> str:
    """Markdown table of :func:`compare_with_paper`: ours, the paper's, and whether each agrees."""
    head = "| experiment | parameter | known (ours) | known (paper) | agrees | unknown (ours) | unknown (paper, mean ± std) | agrees |"
    out = [head, "|---" * (head.count("|") - 1) + "|"]
    for c in comparison:
        out.append(f"| {c['experiment']} | {c['parameter']:g} | {_fmt(c['known'])} | {c['paper_known']:g} | "
                   f"{'yes' if c['known_reproduced'] else 'no'} | {_fmt(c['unknown'])} ({c['unknown_kind']}) | "
                   f"{c['paper_unknown_mean']:g} ± {c['paper_unknown_sd']:g} | {'yes' if c['unknown_reproduced'] else 'no'} |")
    return "\n".join(out) + "\n"


def occupancy_maps(width: int, height: int, horizon: int, wind: float,
                   goal_lengths: tuple[int, ...] = (1, 4)) -> dict[int, np.ndarray]:
    """Expected visits ``sum_{t=0..H} P(s_t = s)`` per cell ``[height, width]`` of the optimal policy for each
    goal length k (the paper's Figure 5 draws k = 1 and k = 4); each map sums to ``H + 1``."""
    maps = {}
    for k in goal_lengths:
        mdp = cliffworld(width, height, horizon, wind, goal_length=k)
        maps[k] = occupancy(mdp, greedy_policy(mdp)).sum(axis=0).reshape(height, width)
    return maps


def occupancy_figure(maps: dict[int, np.ndarray], title: str = "") -> Figure:
    """The paper's Figure 5: occupancy of the optimal policy per goal length, goal cells outlined, cliff hatched."""
    from matplotlib.figure import Figure  # lazy: matplotlib is only needed to draw
    from matplotlib.patches import Rectangle

    fig = Figure(figsize=(5 * len(maps), 2.8))
    axes = np.atleast_1d(fig.subplots(1, len(maps)))
    for ax, (k, m) in zip(axes, maps.items()):
        height, width = m.shape
        im = ax.imshow(m, cmap="viridis")
        for col in range(1, width):
            goal = col >= width - k
            ax.add_patch(Rectangle((col - 0.5, -0.5), 1, 1, fill=False, lw=2 if goal else 0.5,
                                   edgecolor="gold" if goal else "white", hatch=None if goal else "//"))
        for (row, col), v in np.ndenumerate(m):
            if v >= 0.05:
                ax.text(col, row, f"{v:.1f}", ha="center", va="center", fontsize=7,
                        color="black" if v > 0.6 * m.max() else "white")
        ax.set_title(f"optimal policy, goal region k = {k} (expected visits)", fontsize=9)
        ax.set_xticks(range(width))
        ax.set_yticks(range(height))
        fig.colorbar(im, ax=ax, shrink=0.8)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def _fmt(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}f}"


def format_tables(rows: list[CliffRow]) -> str:
    """Markdown tables of the two experiments (MEG in nats; beta of the known-utility fit)."""
    mlp = any(r.mlp_mean is not None for r in rows)
    out = []
    for experiment, label in (("epsilon-greedy", "epsilon"), ("goal-length", "goal length k")):
        sub = [r for r in rows if r.experiment == experiment]
        if not sub:
            continue
        head = f"| {label} | known-utility MEG | beta* | unknown-utility MEG (tabular U) |" + (" unknown-utility MEG (MLP, mean ± std) |" if mlp else "")
        out += [head, "|---" * (head.count("|") - 1) + "|"]
        for r in sub:
            param = f"{r.parameter:g}"
            cells = [param, _fmt(r.known), _fmt(r.beta, 3), _fmt(r.unknown_tabular)]
            if mlp:
                cells.append("-" if r.mlp_mean is None else f"{r.mlp_mean:.2f} ± {r.mlp_std:.2f}")
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def experiments_figure(rows: list[CliffRow], title: str = "") -> Figure:
    """The paper's Figure 3(b, c): MEG against epsilon and against the goal length k."""
    from matplotlib.figure import Figure  # lazy: matplotlib is only needed to draw

    fig = Figure(figsize=(10, 4))
    axes = fig.subplots(1, 2)
    for ax, experiment, label in ((axes[0], "epsilon-greedy", "epsilon"), (axes[1], "goal-length", "goal length k")):
        sub = [r for r in rows if r.experiment == experiment]
        x = [r.parameter for r in sub]
        ax.plot(x, [r.known for r in sub], "o-", label="known utility")
        ax.plot(x, [r.unknown_tabular for r in sub], "s--", label="unknown utility (tabular)")
        if any(r.mlp_mean is not None for r in sub):
            ax.errorbar(x, [r.mlp_mean for r in sub], yerr=[r.mlp_std for r in sub], fmt="^:", capsize=3, label="unknown utility (MLP)")
        ax.set_xlabel(label)
        ax.set_ylabel("MEG (nats)")
        ax.grid(alpha=0.3)
        ax.legend()
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


@dataclass
class CliffWorldMEG(Result):
    """MEG of CliffWorld policies (what ``bib meg cliffworld`` prints and writes).

    Attributes:
        rows: one :class:`CliffRow` per measured policy.
        settings: ``width``, ``height``, ``horizon``, ``wind`` of the CliffWorld.
        command: the command line that made it (shown in the Markdown and the figure).
        paper: the rows beside the paper's Appendix D tables (:func:`compare_with_paper`), or None.
    """

    name: ClassVar[str] = "cliffworld"
    rows: list[CliffRow]
    settings: dict[str, Any]
    command: str = ""
    paper: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"command", "settings", "rows"}`` (infinite beta as a string), and ``"paper"`` when compared."""
        doc = {"command": self.command, "settings": dict(self.settings), "rows": [r.to_dict() for r in self.rows]}
        if self.paper is not None:
            doc["paper"] = self.paper
        return doc

    def to_markdown(self) -> str:
        """The command, the CliffWorld, the tables of :func:`format_tables` and the paper comparison."""
        s = self.settings
        head = f"Made by: `{self.command}`\n\n" if self.command else ""
        text = (f"{head}CliffWorld {s['width']} x {s['height']}, H = {s['horizon']}, wind {s['wind']}; MEG in nats."
                f"\n\n{format_tables(self.rows)}")
        if self.paper is not None:
            agree = sum(c["known_reproduced"] for c in self.paper), sum(c["unknown_reproduced"] for c in self.paper)
            text += (f"\nBeside the paper's Appendix D.1 (known: within 5% or 0.01; unknown: within 3 std): known "
                     f"{agree[0]} of {len(self.paper)} agree, unknown {agree[1]} of {len(self.paper)}; docs/meg.md "
                     f"says why the rest cannot.\n\n{format_paper_comparison(self.paper)}")
        return text

    def plot(self) -> Figure | None:
        """Figure 3(b, c) when both experiments were run, else nothing."""
        if not self.both_experiments:
            return None
        return experiments_figure(self.rows, title=self.command)

    def save(self, folder: str | Path, stem: str | None = None) -> list[Path]:
        """:meth:`Result.save`, plus ``occupancy.png`` / ``.svg`` (Figure 5: the optimal policies' occupancy for
        k = 1 and k = 4) when both experiments were run."""
        paths = super().save(folder, stem)
        if self.both_experiments:
            s = self.settings
            fig = occupancy_figure(occupancy_maps(s["width"], s["height"], s["horizon"], s["wind"]), title=self.command)
            paths += save_figure(fig, folder, "occupancy")
        return paths

    @property
    def both_experiments(self) -> bool:
        """True when both experiments were run: then :meth:`plot` draws Figure 3 and :meth:`save` Figure 5."""
        return {r.experiment for r in self.rows} == {"epsilon-greedy", "goal-length"}
