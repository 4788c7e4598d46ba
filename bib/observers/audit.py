"""``bib audit SET``: run the shortcut battery on a VOE set and flag every condition a shortcut can pass.

Every shortcut of :data:`bib.observers.shortcuts.SHORTCUTS` scores every pair (max readout, a tie
counts 0.5). ``single-feature`` is fit per condition on one half of the pairs and scored on the
other half only (:func:`split_pairs`). A cell of the table is

- ``ok`` when the accuracy is within 50 +- 10 points (:data:`BAND`);
- ``FAIL`` when it is outside: above 60% the shortcut passes the condition, below 40% the same
  cue read the other way round does;
- ``exempt`` when it is outside but the cue it reads is one the condition is allowed to be decided
  by (its ``shortcut_exempt`` in the task registry, :func:`exemptions`): the efficiency of the test path in efficiency path/time and in
  instrumental-blocking (they test the efficiency principle itself), the familiarization's barrier
  in efficiency-irrational and the agent's identity in multi-agent (their own manipulations).
  Perceptual cues (path length, counts, what is where) and novelty are never exempt there.

The audit writes ``audit.json`` (:data:`SCHEMA`, documented in docs/observers.md), ``audit.md``
and ``single-feature.json`` (the fit, usable as ``bib score single-feature --checkpoint``).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from bib.episode import Episode
from bib.errors import BibInputError
from bib.evaluation import (
    N_BOOTSTRAP,
    ConditionResult,
    EpisodeRef,
    EpisodeSet,
    difficulty_json,
    evaluate,
    evaluate_difficulty,
    find_episodes,
    order_conditions,
    pair_up,
    readout,
)
from bib.guard import read_json
from bib.observers.base import BaseObserver, surprise_of_views
from bib.observers.heuristics import ClosestObjectObserver
from bib.observers.leaks import (
    LEAK_CUE,
    LEAKS,
    LEARNED,
    LEARNED_CUE,
    features_of_test,
    fit_learned,
    judge_leak,
    leak_readers,
    learned_surprise,
)
from bib.observers.rebuild import Rebuilt, content_key
from bib.observers.rebuild import rebuild as rebuild_set
from bib.observers.shortcuts import (
    CUES,
    FEATURES,
    SHORTCUTS,
    PathFamiliarityObserver,
    PathLengthObserver,
    Stump,
    TestOnlyObserver,
    episode_features,
    familiarity_of,
    fit_stump,
    step_novelty,
    write_stumps,
)
from bib.results import Result
from bib.stimuli.blind import load_blind

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SCHEMA = "bib.audit/1"
COLUMNS: tuple[str, ...] = (*SHORTCUTS, LEARNED, *LEAKS)
"""The audit's columns: the shortcut battery, the learned test-only shortcut, the leak battery."""
BAND = (0.40, 0.60)
"""A shortcut's accuracy must stay within this band (50 +- 10 points) on every condition it is not exempt on."""


def exemptions(condition: str, variants: Collection[str] | None = None) -> dict[str, str]:
    """``{cue: reason}`` the condition may be decided by: its registered ``shortcut_exempt`` (none if unregistered).

    ``variants``: the variants of the condition's pairs in the set being audited (``""`` for BIB's design; a
    compound variant such as ``barrier-aside+twin`` counts by its parts). Where every pair is of a variant the
    registry says takes the exempt cues away (``exempt_lapses``), there is no exemption.
    """
    from bib.tasks import REGISTRY

    spec = REGISTRY.get(condition)
    if spec is None:
        return {}
    if variants and spec.exempt_lapses and all(
            set((v or "").split("+")) & set(spec.exempt_lapses) for v in variants):
        return {}
    return dict(spec.shortcut_exempt)


SPLIT_RULE = (
    "a pair and its twin (twin_id) form a group named by the smaller of their pair ids, a pair without a twin is "
    "its own group; within each condition the groups are stratified by their design roles (the sorted variants of "
    "their pairs: catch, twin, via-key, ...), each stratum's groups are shuffled by a generator seeded from the "
    "audit seed, the condition and the stratum, and the first half fits single-feature and the learned shortcut "
    "(an odd stratum's middle group goes to a side drawn from the same generator); the rest is scored"
)

_BATTERY = ("closest-object", "test-only", "novelty", "familiarity", "path-familiarity", "path-length")
"""The shortcuts scored on every pair (single-feature is scored from the features)."""

_OBSERVERS: dict[str, BaseObserver] = {}


def battery_surprise(episode: Episode) -> dict[str, np.ndarray]:
    """Per-step surprise of every :data:`_BATTERY` shortcut (novelty is computed once for novelty and familiarity)."""
    if not _OBSERVERS:
        _OBSERVERS.update({"closest-object": ClosestObjectObserver(), "test-only": TestOnlyObserver(),
                           "path-familiarity": PathFamiliarityObserver(), "path-length": PathLengthObserver()})
    novelty = step_novelty(episode)
    out = {name: obs.surprise(episode) for name, obs in _OBSERVERS.items()}
    out.update({"novelty": novelty, "familiarity": familiarity_of(novelty)})
    return {name: out[name] for name in _BATTERY}


def _audit_chunk(chunk: list[tuple[str, str]]) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]]:
    """Worker: ``[(episode id, max-readout surprise of each battery shortcut, features, each leak reader's
    surprise, test-trial features, content key)]`` for a chunk (the key: :func:`bib.observers.rebuild.content_key`).

    Everything is read through the blind view, as ``bib score`` hands episodes to a model
    (:func:`bib.stimuli.blind.load_blind`); the leak readers get the chunk as a model does
    (:func:`bib.observers.base.surprise_of_views`: shuffled).
    """
    ids = [eid for eid, _ in chunk]
    views = [load_blind(path, eid) for eid, path in chunk]
    leaks = np.stack([[readout(s, "max") for s in surprise_of_views(reader, views, ids)] for reader in leak_readers()], axis=1)
    out = []
    for k, (eid, view) in enumerate(zip(ids, views)):
        scores = np.array([readout(s, "max") for s in battery_surprise(view).values()])
        out.append((eid, scores, episode_features(view), leaks[k], features_of_test(view), content_key(view)))
    return out


def _stratum_rng(seed: int, condition: str, stratum: tuple[str, ...]) -> np.random.Generator:
    """The generator that splits one stratum: seeded from the audit seed, the condition and the stratum's roles."""
    digest = hashlib.sha256("|".join(["bib.audit.split", str(seed), condition, *stratum]).encode("utf-8")).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


def split_pairs(refs: Sequence[EpisodeRef], seed: int = 0
                ) -> tuple[dict[str, list[tuple[str, str]]], dict[str, list[tuple[str, str]]]]:
    """The fit/scored split of ``single-feature`` and ``learned-test-only``: ``(fit pairs, scored pairs)``, each
    ``{condition: [(expected id, unexpected id)]}`` (:data:`SPLIT_RULE`).

    A pair and its label-flipping twin (``twin_id`` names the other pair of the two) form one
    group named by the smaller of their two pair ids, so they stay on the same side; a pair
    without a twin is its own group. Groups are stratified by their design roles (the sorted
    ``variant`` of their pairs, e.g. ``("catch", "catch+twin")``), so each side gets half of every
    role: a fit on one role mix and a score on another would measure the mix, not the cue (a
    stump that flips sign with the catch role scores the scored half's non-catch share). Within a
    stratum the groups (sorted by name) are permuted by :func:`_stratum_rng` and the first half
    fits. The split depends on the ids, roles and ``seed`` only: the same for every run, order and
    worker count, and no scored pair is ever seen by the fit.
    """
    by_id = {r.id: r for r in refs}
    groups: dict[str, dict[tuple[str, ...], dict[str, list[tuple[str, str]]]]] = {}
    for cond, pairs in pair_up(refs).items():
        members: dict[str, list[tuple[str, str]]] = {}
        for e, u in pairs:
            pair_id = by_id[e].pair_id or e
            twin = by_id[e].twin_id or by_id[u].twin_id
            members.setdefault(min(pair_id, twin) if twin else pair_id, []).append((e, u))
        for name, group in members.items():
            stratum = tuple(sorted(by_id[e].variant or "" for e, _ in group))
            groups.setdefault(cond, {}).setdefault(stratum, {})[name] = group
    fit: dict[str, list[tuple[str, str]]] = {}
    scored: dict[str, list[tuple[str, str]]] = {}
    for cond, strata in groups.items():
        for stratum, members in sorted(strata.items()):
            rng = _stratum_rng(seed, cond, stratum)
            names = sorted(members)
            order = rng.permutation(len(names))
            n_fit = len(names) // 2 + (int(rng.integers(2)) if len(names) % 2 else 0)
            for k, i in enumerate(order):
                (fit if k < n_fit else scored).setdefault(cond, []).extend(members[names[i]])
    return fit, scored


@dataclass(frozen=True)
class Cell:
    """One shortcut on one condition."""

    result: ConditionResult
    cue: str
    status: str
    reason: str | None = None
    feature: str | None = None


def judge(condition: str, cue: str, accuracy: float,
          variants: Collection[str] | None = None) -> tuple[str, str | None]:
    """``("ok" | "FAIL" | "exempt", reason)`` of a shortcut reading ``cue`` with ``accuracy`` on ``condition``
    (whose pairs in the set are of ``variants``: :func:`exemptions`)."""
    lo, hi = BAND
    if lo - 1e-12 <= accuracy <= hi + 1e-12:
        return "ok", None
    reason = exemptions(condition, variants).get(cue)
    if reason is not None:
        return "exempt", reason
    side = f"above {100 * hi:g}%" if accuracy > hi else f"below {100 * lo:g}% (the reversed cue passes)"
    return "FAIL", f"{cue} cue {side}"


@dataclass
class Audit(Result):
    """An audit's results: ``audit.json`` (:func:`audit_json`), ``audit.md`` (:func:`audit_markdown`) and a heatmap."""

    name: ClassVar[str] = "audit"
    source: str
    sets: list[dict[str, object]]
    cells: dict[str, dict[str, Cell]]
    stumps: dict[str, Stump]
    difficulty: dict[str, dict[str, object]]
    n_pairs: dict[str, int]
    rebuilt: list[Rebuilt] = field(default_factory=list)
    """Each matching shipped spec regenerated against the set (:mod:`bib.observers.rebuild`)."""

    @property
    def failures(self) -> list[tuple[str, str, Cell]]:
        """``(condition, shortcut, cell)`` of every FAIL."""
        return [(c, s, cell) for c, row in self.cells.items() for s, cell in row.items() if cell.status == "FAIL"]

    @property
    def rebuild_failures(self) -> list[Rebuilt]:
        """The shipped specs whose regenerated copy holds any episode of the set."""
        return [r for r in self.rebuilt if r.found]

    @property
    def passed(self) -> bool:
        """True when no cell FAILs and no shipped spec rebuilds an episode of the set."""
        return not self.failures and not self.rebuild_failures

    def to_json(self) -> dict[str, object]:
        """The ``audit.json`` object (:func:`audit_json`)."""
        return audit_json(self)

    def to_markdown(self) -> str:
        """The ``audit.md`` text (:func:`audit_markdown`)."""
        return audit_markdown(self)

    def plot(self) -> Figure:
        """A heatmap: accuracy % per condition (rows) and shortcut (columns); FAIL cells framed in red."""
        from matplotlib import colormaps
        from matplotlib.figure import Figure  # lazy: matplotlib is only needed to draw
        from matplotlib.patches import Rectangle

        cmap = colormaps["RdBu_r"]
        conds = list(self.cells)
        acc = np.full((len(conds), len(COLUMNS)), np.nan)
        fig = Figure(figsize=(1.1 * len(COLUMNS) + 2.6, 0.42 * len(conds) + 1.4))
        ax = fig.add_subplot()
        for i, c in enumerate(conds):
            for j, s in enumerate(COLUMNS):
                cell = self.cells[c].get(s)
                if cell is None:
                    continue
                acc[i, j] = 100 * cell.result.accuracy
                mark = {"FAIL": " FAIL", "exempt": " ex."}.get(cell.status, "")
                ax.text(j, i, f"{acc[i, j]:.0f}{mark}", ha="center", va="center", fontsize=7,
                        color=label_colour(cmap(acc[i, j] / 100)))
                if cell.status == "FAIL":
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=1.5))
        ax.imshow(acc, cmap="RdBu_r", vmin=0, vmax=100, aspect="auto")
        ax.set_xticks(range(len(COLUMNS)), COLUMNS, rotation=30, ha="right", fontsize=8)
        ax.set_yticks(range(len(conds)), conds, fontsize=8)
        ax.set_title("shortcut accuracy % (50 = chance; FAIL outside 40-60 unless exempt)", fontsize=9)
        fig.tight_layout()
        return fig


def relative_luminance(rgb: Sequence[float]) -> float:
    """WCAG 2 relative luminance of an sRGB colour with channels in 0..1 (alpha ignored)."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def label_colour(background: Sequence[float]) -> str:
    """``"white"`` or ``"black"``, whichever contrasts more with ``background`` (WCAG contrast ratio).

    White wins when (1.05) / (L + 0.05) > (L + 0.05) / 0.05, i.e. below L = sqrt(1.05 * 0.05) - 0.05.
    """
    return "white" if relative_luminance(background) < math.sqrt(1.05 * 0.05) - 0.05 else "black"


def check_set(source: str | os.PathLike[str]) -> EpisodeSet:
    """Read the set and make sure it has pairs (before any work).

    Raises:
        BibInputError: no episodes, malformed manifests, or no expected/unexpected pairs.
    """
    found = find_episodes(source)
    if not pair_up(found.refs):
        raise BibInputError(f"{source}: no expected/unexpected pairs to audit (a background set?)")
    return found


def features_and_scores(
    refs: Sequence[EpisodeRef], workers: int = 1, scheduler: str | None = None, progress: bool = True, chunk: int = 32
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray], dict[str, str]]:
    """``({id: battery scores}, {id: features}, {id: leak readers' scores}, {id: test-trial features},
    {id: content key})`` of the paired episodes, in parallel.

    With ``workers > 1`` this process scores chunks too, beside ``workers - 1`` pool processes
    (:func:`bib.parallel.map_ordered` with ``local=True``, as ``bib score`` does), and alone until one of them
    has started; the results are the same, in the same order, for any worker count.
    """
    from bib.parallel import map_ordered
    from bib.progress import track

    paired = [r for r in refs if r.outcome in ("expected", "unexpected")]
    items = [[(r.id, str(r.path)) for r in paired[i : i + chunk]] for i in range(0, len(paired), chunk)]
    results: Iterator[list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]]] = map_ordered(
        _audit_chunk, iter(items), workers=workers, scheduler=scheduler, local=True
    )
    flat = (row for rows in results for row in rows)
    if progress:
        flat = track(flat, total=len(paired), description="auditing")
    scores: dict[str, np.ndarray] = {}
    feats: dict[str, np.ndarray] = {}
    leaks: dict[str, np.ndarray] = {}
    tests: dict[str, np.ndarray] = {}
    keys: dict[str, str] = {}
    for eid, s, f, leak, t, key in flat:
        scores[eid], feats[eid], leaks[eid], tests[eid], keys[eid] = s, f, leak, t, key
    return scores, feats, leaks, tests, keys


def fit_single_feature(fit: Mapping[str, Sequence[tuple[str, str]]], features: Mapping[str, np.ndarray]) -> dict[str, Stump]:
    """One :class:`Stump` per condition from the fit pairs' features (``features`` needs only the fit episodes)."""
    stumps: dict[str, Stump] = {}
    for cond, pairs in fit.items():
        if pairs:
            e = np.stack([features[a] for a, _ in pairs])
            u = np.stack([features[b] for _, b in pairs])
            stumps[cond] = fit_stump(e, u)
    return stumps


def run_audit(
    found: EpisodeSet,
    source: str,
    *,
    workers: int = 1,
    scheduler: str | None = None,
    seed: int = 0,
    n_boot: int = N_BOOTSTRAP,
    progress: bool = True,
    rebuild: bool = True,
) -> Audit:
    """Score every pair of ``found`` with the battery, fit and score single-feature, judge every cell; with
    ``rebuild``, regenerate the matching shipped specs and look the set up in them
    (:func:`bib.observers.rebuild.rebuild`)."""
    scores, feats, leaks, tests, keys = features_and_scores(found.refs, workers=workers, scheduler=scheduler,
                                                            progress=progress)
    paired = [r for r in found.refs if r.id in scores]
    variants: dict[str, set[str]] = {}
    for r in paired:
        if r.outcome in ("expected", "unexpected"):
            variants.setdefault(r.condition, set()).add(r.variant or "")
    cells: dict[str, dict[str, Cell]] = {}
    difficulty: dict[str, dict[str, object]] = {}
    for j, name in enumerate(_BATTERY):
        surprise = {eid: float(s[j]) for eid, s in scores.items()}
        for cond, res in evaluate(paired, surprise, seed=seed, n_boot=n_boot).items():
            status, reason = judge(cond, CUES[name], res.accuracy, variants.get(cond))
            cells.setdefault(cond, {})[name] = Cell(res, CUES[name], status, reason)
        by_bin = evaluate_difficulty(paired, surprise, seed=seed, n_boot=n_boot)
        if by_bin:
            difficulty[name] = difficulty_json(by_bin)
    fit, scored = split_pairs(paired, seed)
    stumps = fit_single_feature(fit, {eid: feats[eid] for pairs in fit.values() for pair in pairs for eid in pair})
    scored_ids = {eid for pairs in scored.values() for pair in pairs for eid in pair}
    scored_refs = [r for r in paired if r.id in scored_ids]
    names = list(FEATURES)
    surprise = {}
    for r in scored_refs:
        stump = stumps.get(r.condition)
        surprise[r.id] = 0.0 if stump is None else stump.sign * float(feats[r.id][names.index(stump.feature)]) - stump.threshold
    for cond, res in evaluate(scored_refs, surprise, seed=seed, n_boot=n_boot).items():
        stump = stumps.get(cond)
        cue = FEATURES[stump.feature].cue if stump else "perceptual"
        status, reason = judge(cond, cue, res.accuracy, variants.get(cond))
        cells.setdefault(cond, {})["single-feature"] = Cell(res, cue, status, reason, stump.feature if stump else None)
    by_bin = evaluate_difficulty(scored_refs, surprise, seed=seed, n_boot=n_boot) if scored_refs else {}
    if by_bin:
        difficulty["single-feature"] = difficulty_json(by_bin)
    models = fit_learned(fit, {eid: tests[eid] for pairs in fit.values() for pair in pairs for eid in pair})
    learned = learned_surprise(models, [(r.id, r.condition) for r in scored_refs], tests)
    for cond, res in evaluate(scored_refs, learned, seed=seed, n_boot=n_boot).items():
        cells.setdefault(cond, {})[LEARNED] = Cell(res, LEARNED_CUE, *judge(cond, LEARNED_CUE, res.accuracy, variants.get(cond)))
    n_leak_cells = len(LEAKS) * len(pair_up(paired))
    for j, name in enumerate(LEAKS):
        surprise = {eid: float(s[j]) for eid, s in leaks.items()}
        for cond, res in evaluate(paired, surprise, seed=seed, n_boot=n_boot).items():
            cells.setdefault(cond, {})[name] = Cell(res, LEAK_CUE, *judge_leak(res, BAND, n_leak_cells))
    order = order_conditions(cells)
    n_pairs = {c: len(p) for c, p in pair_up(paired).items()}
    rebuilt = rebuild_set(found, keys, workers=workers, scheduler=scheduler, progress=progress) if rebuild else []
    return Audit(source, list(found.sets), {c: cells[c] for c in order}, stumps, difficulty, n_pairs, rebuilt)


# ---------------------------------------------------------------- output


def _num(x: float) -> float | None:
    return None if not math.isfinite(x) else round(float(x), 6)


def audit_json(audit: Audit) -> dict[str, object]:
    """The ``audit.json`` object (schema :data:`SCHEMA`; keys documented in docs/observers.md)."""
    return {
        "schema": SCHEMA,
        "source": audit.source,
        "sets": audit.sets,
        "readout": "max",
        "tie_rule": "a tie counts 0.5",
        "band": list(BAND),
        "shortcuts": list(SHORTCUTS),
        "learned": LEARNED,
        "leaks": list(LEAKS),
        "split": SPLIT_RULE,
        "passed": audit.passed,
        "conditions": {
            cond: {
                "n_pairs": audit.n_pairs.get(cond, 0),
                "shortcuts": {
                    name: {
                        "accuracy": _num(cell.result.accuracy),
                        "ci_low": _num(cell.result.ci_low),
                        "ci_high": _num(cell.result.ci_high),
                        "n_pairs": cell.result.n_pairs,
                        "n_ties": cell.result.n_ties,
                        "cue": cell.cue,
                        "status": cell.status,
                        "reason": cell.reason,
                        **({"feature": cell.feature} if name == "single-feature" else {}),
                    }
                    for name, cell in row.items()
                },
            }
            for cond, row in audit.cells.items()
        },
        "failures": [{"condition": c, "shortcut": s, "accuracy": _num(cell.result.accuracy), "reason": cell.reason}
                     for c, s, cell in audit.failures],
        "rebuild": [r.to_json() for r in audit.rebuilt],
        "single_feature_fit": {c: s.to_json() for c, s in audit.stumps.items()},
        "difficulty": audit.difficulty,
    }


def _cell_text(cell: Cell | None, markdown: bool) -> str:
    if cell is None:
        return "-"
    r = cell.result
    text = f"{100 * r.accuracy:.1f} ({100 * r.ci_low:.1f}-{100 * r.ci_high:.1f})"
    if cell.status == "FAIL":
        text += " **FAIL**" if markdown else " FAIL"
    elif cell.status == "exempt":
        text += " exempt"
    return text


def audit_table(audit: Audit, markdown: bool = True) -> str:
    """The audit as a table: a row per condition, a column per shortcut, accuracy % (95% CI) and the mark."""
    header = ["condition", "pairs", *COLUMNS]
    rows = [[c, str(audit.n_pairs.get(c, 0)), *(_cell_text(row.get(s), markdown) for s in COLUMNS)]
            for c, row in audit.cells.items()]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    return "\n".join("  ".join(x.ljust(w) if i == 0 else x.rjust(w) for i, (x, w) in enumerate(zip(r, widths)))
                     for r in [header, *rows])


def verdict_counts(audit: Audit) -> str:
    """What FAILs, counted: ``N cell(s)`` and/or ``N rebuilt spec(s)``."""
    parts = [f"{len(audit.failures)} cell(s)"] if audit.failures else []
    if audit.rebuild_failures:
        parts.append(f"{len(audit.rebuild_failures)} rebuilt spec(s)")
    return ", ".join(parts)


def rebuild_text(audit: Audit, markdown: bool = True) -> str:
    """One line per regenerated shipped spec: the share of the set found in it, and the outcomes read from it."""
    if not audit.rebuilt:
        return "Rebuild: no shipped spec lists this set's conditions with its settings (nothing to regenerate)."
    lines = ["Rebuild (each shipped spec whose settings match the set's, regenerated from its own seed; FAIL when "
             "any episode of the set is found in it):", ""]
    for r in audit.rebuilt:
        mark = (" **FAIL**" if markdown else " FAIL") if r.found else " ok"
        lines.append(f"- {r.spec} (seed {r.seed}): {r.found} of {r.episodes} episodes found ({100 * r.share:.1f}%), "
                     f"outcomes read from the copy {100 * r.accuracy:.1f}% of {r.pairs} pairs;{mark}")
    return "\n".join(lines)


def audit_markdown(audit: Audit) -> str:
    """``audit.md``: the table, the verdict, the single-feature fits and the exemptions used."""
    sets = "; ".join(f"{s.get('name')} seed {s.get('seed')}" for s in audit.sets) or audit.source
    lines = [f"# Shortcut audit: {sets}", "",
             f"Pairwise accuracy % (bootstrap 95% CI), max readout, a tie counts 0.5. A shortcut FAILs a condition "
             f"outside {100 * BAND[0]:g}-{100 * BAND[1]:g}% unless the cue it reads is exempt there. "
             f"single-feature is scored on the held-out half only ({SPLIT_RULE}).", "",
             audit_table(audit, markdown=True), "",
             rebuild_text(audit, markdown=True), "",
             "**Verdict: " + ("PASS" if audit.passed else f"FAIL ({verdict_counts(audit)})") + "**", ""]
    if audit.stumps:
        lines += ["single-feature fits (feature, direction, fit-split accuracy):", ""]
        for cond, s in audit.stumps.items():
            direction = "larger = surprising" if s.sign > 0 else "smaller = surprising"
            lines.append(f"- {cond}: `{s.feature}` ({FEATURES[s.feature].cue}), {direction}, "
                         f"{100 * s.fit_accuracy:.1f}% on {s.n_fit_pairs} fit pairs")
        lines.append("")
    used = sorted({(c, cell.cue, cell.reason) for c, row in audit.cells.items() for cell in row.values()
                   if cell.status == "exempt"})
    if used:
        lines += ["Exempt cells:", ""] + [f"- {c}, {cue} cue: {reason}" for c, cue, reason in used] + [""]
    if audit.failures:
        lines += ["Failures:", ""] + [f"- {c}, {s}: {100 * cell.result.accuracy:.1f}% ({cell.reason})"
                                      for c, s, cell in audit.failures] + [""]
    return "\n".join(lines)


def write_audit(audit: Audit, out: Path) -> list[Path]:
    """Write ``audit.json``, ``audit.md``, ``audit.png``, ``audit.svg`` and ``single-feature.json`` into ``out`` (each atomically)."""
    paths = audit.save(out)
    write_stumps(out / "single-feature.json", audit.stumps, SPLIT_RULE)
    return [*paths, out / "single-feature.json"]


def read_audit(path: str | os.PathLike[str]) -> dict[str, object]:
    """Read an ``audit.json`` (schema :data:`SCHEMA`) written by :func:`write_audit`.

    Raises:
        BibInputError: unreadable JSON, or another schema.
    """
    p = Path(path)
    try:
        doc = read_json(p)
    except OSError as exc:
        raise BibInputError(f"{p}: cannot read audit JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("conditions"), dict):
        raise BibInputError(f"{p}: not a `bib audit` output (schema {SCHEMA!r} with 'conditions')")
    return doc


__all__ = ["Audit", "audit_json", "audit_markdown", "audit_table", "label_colour", "rebuild_text", "relative_luminance",
           "check_set", "judge", "read_audit", "run_audit", "split_pairs", "write_audit"]
