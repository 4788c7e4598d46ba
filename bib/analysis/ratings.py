"""Adult surprise ratings (AGENT's human study, Shu et al. 2021) and their per-trial agreement with models.

The design is AGENT's (section 5.2): a rater watches a pair's familiarization videos, then ONE of its
two test videos, and rates it on a 0-100 slider ("not at all surprising" to "extremely surprising");
each rater sees one outcome of every pair, so the two outcomes of a pair are rated by different raters.
:func:`rating_plan` draws a rater's plan (which outcome of each pair, in which order) from the study
seed and the rater's number; raters ``2j - 1`` and ``2j`` see complementary outcomes, so every pair's
two outcomes are rated equally often and every rater sees half of each.

Session files (``NAME_ID_ratings.csv``, :data:`RATING_COLUMNS`) join as looking-time sessions do
(:func:`bib.analysis.importers.join_sessions`: one header, no participant in two files, one study id
and one protocol hash). :func:`agreement` reports, per trial (test episode):

- Pearson and Spearman correlations between each model's surprise and the mean human rating, with
  percentile bootstrap CIs (episodes resampled with replacement, ``numpy.random.default_rng(seed)``);
- pairwise accuracy (unexpected rated above expected; a tie counts 0.5) of each model, of the mean
  ratings (AGENT's ensemble) and of single raters (AGENT's metric: each rater's ratings z-scored,
  then every (unexpected, expected) rating pair of a pair compared; averaged over pairs);
- the split-half reliability of the mean ratings: raters split at random into halves, the halves'
  per-episode means correlated (Pearson) and Spearman-Brown corrected (``2 r / (1 + r)``), averaged
  over seeded splits: the ceiling a model's correlation can reach.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from bib.errors import BibInputError
from bib.results import Result, markdown_table

#: Suffix of a rating session's file (``NAME_ID_ratings.csv``).
RATINGS_SUFFIX = "_ratings.csv"
#: Columns of a rating session file, in order (the page writes them; :func:`read_ratings` reads them).
RATING_COLUMNS: tuple[str, ...] = (
    "participant_id", "study", "trial_num", "task", "pair_id", "episode_id", "outcome", "rating",
    "response_ms", "rater_number", "session_date", "synthetic", "study_id", "criteria_hash",
)
#: The slider's range, and the words at its ends (AGENT: 0 "not at all surprising", 100 "extremely surprising").
SCALE = (0, 100)
SCALE_LABELS = ("not at all surprising", "extremely surprising")


@dataclass(frozen=True)
class RatingProtocol:
    """What a rating study fixes; its :meth:`digest` is every row's ``criteria_hash``.

    Attributes:
        seed: the study seed the raters' plans are drawn from (:func:`rating_plan`).
        scale_min, scale_max: the slider's range.
        familiarization: whether each trial shows the pair's familiarization videos before the test video.
    """

    seed: int = 0
    scale_min: int = SCALE[0]
    scale_max: int = SCALE[1]
    familiarization: bool = True

    def digest(self) -> str:
        """12 hex digits naming this protocol (sha256 of its canonical JSON), as :meth:`Criteria.digest`."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]


def rating_plan(n_pairs: int, rater: int, seed: int) -> list[tuple[int, int]]:
    """Rater ``rater``'s (1-based) trials: ``(pair index, 1 for the unexpected outcome else 0)`` in presentation order.

    The outcomes come from ``default_rng([seed, 0, (rater - 1) // 2])`` (half the pairs, rounded down,
    unexpected; the even rater of a couple gets the complement), the order from ``default_rng([seed, 1, rater])``.

    Raises:
        BibInputError: ``rater`` below 1 or no pairs.
    """
    if rater < 1:
        raise BibInputError(f"rater number {rater}: must be 1 or more")
    if n_pairs < 1:
        raise BibInputError("the study has no pairs to rate")
    unexpected = np.zeros(n_pairs, dtype=int)
    chosen = np.random.default_rng([seed, 0, (rater - 1) // 2]).permutation(n_pairs)[: n_pairs // 2]
    unexpected[chosen] = 1
    if rater % 2 == 0:
        unexpected = 1 - unexpected
    order = np.random.default_rng([seed, 1, rater]).permutation(n_pairs)
    return [(int(p), int(unexpected[p])) for p in order]


def ratings_files(folder: Path) -> list[Path]:
    """The session files of a ratings folder (``*_ratings.csv``, sorted), or the one file given.

    Raises:
        BibInputError: no such path, or a folder without ``*_ratings.csv`` files.
    """
    folder = Path(folder)
    if folder.is_file():
        return [folder]
    if not folder.is_dir():
        raise BibInputError(f"{folder}: no such file or directory (give the folder of the raters' {RATINGS_SUFFIX.lstrip('_')} files)")
    files = sorted(folder.glob(f"*{RATINGS_SUFFIX}"))
    if not files:
        raise BibInputError(f"{folder}: no rating sessions (*{RATINGS_SUFFIX}) in the folder")
    return files


def read_ratings(folder: Path, episodes: pd.DataFrame) -> pd.DataFrame:
    """The raters' ratings, joined and checked against the episode index (:func:`bib.analysis.compare.read_episode_index`).

    Returns:
        ``participant_id, episode_id, pair_id, task, outcome, rating, synthetic, row`` (``row`` is ``FILE:LINE``;
        ``synthetic`` is True on rows marked ``synthetic = true``, made by :func:`simulate_ratings`).

    Raises:
        BibInputError: a file with other columns, sessions of different studies or protocols, a rater in
            two files, a rating that is not a number in the scale, an episode twice for one rater, an
            episode or outcome not in the set; each names the file and line.
    """
    from bib.analysis.importers import check_one_file_per_participant, check_one_study, join_sessions, read_strings
    from bib.analysis.schema import OUTCOMES, ROW

    files = ratings_files(folder)
    raw = join_sessions(files) if len(files) > 1 else read_strings(files[0], f"{files[0].name}:")
    missing = [c for c in ("participant_id", "episode_id", "rating") if c not in raw.columns]
    if missing:
        raise BibInputError(f"{files[0]}: line 1: not a rating session (no column {', '.join(missing)}; "
                            f"the columns are {', '.join(RATING_COLUMNS)})")
    check_one_study(raw, files, str(folder))
    check_one_file_per_participant(raw, files)
    if raw.empty:
        raise BibInputError(f"{folder}: no ratings (the session files have only a header)")
    if (raw["participant_id"] == "").any():
        raise BibInputError(f"{raw.loc[raw['participant_id'] == '', ROW].iloc[0]}: column participant_id: empty")
    rating = pd.to_numeric(raw["rating"], errors="coerce")
    bad = rating.isna() | ~np.isfinite(rating) | (rating < SCALE[0]) | (rating > SCALE[1])
    if bad.any():
        first = raw.loc[bad].iloc[0]
        raise BibInputError(f"{first[ROW]}: column rating: {first['rating']!r} is not a number from {SCALE[0]} to {SCALE[1]}")
    twice = raw.duplicated(["participant_id", "episode_id"], keep="first")
    if twice.any():
        first = raw.loc[twice].iloc[0]
        raise BibInputError(f"{first[ROW]}: rater {first['participant_id']} rated episode {first['episode_id']} twice")
    known = episodes.drop_duplicates("episode_id").set_index("episode_id")
    unknown = ~raw["episode_id"].isin(known.index)
    if unknown.any():
        first = raw.loc[unknown].iloc[0]
        raise BibInputError(f"{first[ROW]}: column episode_id: {first['episode_id']!r} is not in the episode set (ratings of another set?)")
    meta = known.loc[raw["episode_id"], ["pair_id", "condition", "outcome"]].reset_index(drop=True)
    if "outcome" in raw.columns:
        differs = raw["outcome"].to_numpy() != meta["outcome"].to_numpy()
        if differs.any():
            i = int(np.flatnonzero(differs)[0])
            raise BibInputError(f"{raw[ROW].iloc[i]}: column outcome: {raw['outcome'].iloc[i]!r}, but the set's episode "
                                f"{raw['episode_id'].iloc[i]} is {meta['outcome'].iloc[i]!r}")
    notest = ~meta["outcome"].isin(OUTCOMES).to_numpy()
    if notest.any():
        i = int(np.flatnonzero(notest)[0])
        raise BibInputError(f"{raw[ROW].iloc[i]}: episode {raw['episode_id'].iloc[i]} has no expected/unexpected outcome")
    return pd.DataFrame({"participant_id": raw["participant_id"].to_numpy(), "episode_id": raw["episode_id"].to_numpy(),
                         "pair_id": meta["pair_id"].to_numpy(), "task": meta["condition"].to_numpy(),
                         "outcome": meta["outcome"].to_numpy(), "rating": rating.to_numpy(dtype=float),
                         "synthetic": (raw["synthetic"].str.lower() == "true").to_numpy() if "synthetic" in raw.columns else False,
                         "row": raw[ROW].to_numpy()})


def ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``x``, ties given their average rank (Spearman's convention)."""
    return pd.Series(np.asarray(x, dtype=float)).rank(method="average").to_numpy()


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r (NaN when either side is constant or has fewer than 2 values)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 2:
        return float("nan")
    dx, dy = x - x.mean(), y - y.mean()
    den = np.sqrt((dx * dx).sum() * (dy * dy).sum())
    return float((dx * dy).sum() / den) if den > 0 else float("nan")


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho: Pearson's r of the average ranks."""
    return pearson(ranks(x), ranks(y))


def bootstrap_ci(x: np.ndarray, y: np.ndarray, stat: Any, n_boot: int, rng: np.random.Generator,
                 alpha: float) -> tuple[float, float]:
    """Percentile CI of ``stat(x, y)`` over ``n_boot`` resamples of the items (``rng.integers(0, n, (n_boot, n))``);
    resamples where the statistic is undefined are left out."""
    n = len(x)
    idx = rng.integers(0, n, size=(n_boot, n))
    values = np.array([stat(x[i], y[i]) for i in idx])
    values = values[np.isfinite(values)]
    if not len(values):
        return float("nan"), float("nan")
    lo, hi = np.quantile(values, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def pair_accuracy(scores: pd.Series, episodes: pd.DataFrame) -> tuple[float, int]:
    """Share of pairs whose unexpected episode scores above its expected one (a tie counts 0.5), over the
    pairs with both episodes in ``scores`` (indexed by episode id); and how many pairs that is."""
    sub = episodes[episodes["episode_id"].isin(scores.index)]
    wide = sub.pivot_table(index="pair_id", columns="outcome", values="episode_id", aggfunc="first")
    if not {"expected", "unexpected"} <= set(wide.columns):
        return float("nan"), 0
    wide = wide.dropna(subset=["expected", "unexpected"])
    if wide.empty:
        return float("nan"), 0
    u = scores.loc[wide["unexpected"]].to_numpy(dtype=float)
    e = scores.loc[wide["expected"]].to_numpy(dtype=float)
    return float(np.mean(np.where(u > e, 1.0, np.where(u == e, 0.5, 0.0)))), len(wide)


def rater_accuracy(ratings: pd.DataFrame) -> tuple[float, int]:
    """AGENT's single-rater accuracy: each rater's ratings z-scored (SD with ddof 0; a constant rater gets 0),
    then per pair the share of (unexpected, expected) rating pairs in the right order (ties 0.5), averaged
    over the pairs rated in both outcomes; and how many pairs that is."""
    grouped = ratings.groupby("participant_id")["rating"]
    sd = grouped.transform(lambda r: r.std(ddof=0))
    z = (ratings["rating"] - grouped.transform("mean")) / sd.where(sd > 0, 1.0)
    z = z.where(sd > 0, 0.0)
    shares = []
    for _, rows in ratings.assign(z=z).groupby("pair_id", sort=True):
        u = rows.loc[rows["outcome"] == "unexpected", "z"].to_numpy()
        e = rows.loc[rows["outcome"] == "expected", "z"].to_numpy()
        if len(u) and len(e):
            d = u[:, None] - e[None, :]
            shares.append(float(np.mean(np.where(d > 0, 1.0, np.where(d == 0, 0.5, 0.0)))))
    return (float(np.mean(shares)) if shares else float("nan")), len(shares)


def split_half(ratings: pd.DataFrame, n_splits: int, rng: np.random.Generator) -> dict[str, Any]:
    """Split-half reliability of the mean ratings: for each split the raters are permuted
    (``rng.permutation``), the first half (``n // 2`` raters) against the rest; Pearson r of the halves'
    per-episode means over the episodes rated in both; Spearman-Brown ``2 r / (1 + r)``."""
    raters = np.array(sorted(ratings["participant_id"].unique()))
    if len(raters) < 2:
        return {"n_splits": 0, "r_half": float("nan"), "spearman_brown": float("nan"), "ci_low": float("nan"),
                "ci_high": float("nan")}
    rs = []
    for _ in range(n_splits):
        perm = rng.permutation(raters)
        half = set(perm[: len(raters) // 2])
        in_a = ratings["participant_id"].isin(half)
        a = ratings[in_a].groupby("episode_id")["rating"].mean()
        b = ratings[~in_a].groupby("episode_id")["rating"].mean()
        both = a.index.intersection(b.index)
        rs.append(pearson(a.loc[both].to_numpy(), b.loc[both].to_numpy()))
    r = np.array(rs)
    sb = 2 * r / (1 + r)
    ok = np.isfinite(sb)
    if not ok.any():
        return {"n_splits": n_splits, "r_half": float("nan"), "spearman_brown": float("nan"), "ci_low": float("nan"),
                "ci_high": float("nan")}
    lo, hi = np.quantile(sb[ok], [0.025, 0.975])
    return {"n_splits": n_splits, "r_half": float(np.mean(r[ok])), "spearman_brown": float(np.mean(sb[ok])),
            "ci_low": float(lo), "ci_high": float(hi)}


def agreement(ratings: pd.DataFrame, episodes: pd.DataFrame, models: dict[str, dict[str, float]], *, n_boot: int = 2000,
              n_splits: int = 200, seed: int = 0, alpha: float = 0.05) -> dict[str, Any]:
    """Per-trial agreement of each model's surprise with the mean human rating (module doc).

    Args:
        ratings: from :func:`read_ratings`.
        episodes: the episode index (``episode_id, pair_id, condition, outcome``).
        models: model name to ``{episode_id: surprise}`` (a results file; it may cover part of the set).
        n_boot: bootstrap resamples per correlation; n_splits: random rater splits.
        seed: seeds ``default_rng(seed)``, drawn from in this order: the split-half splits, then each
            model's bootstrap (Pearson's resamples, then Spearman's), models in the order given.
        alpha: the CIs are ``1 - alpha``.

    Raises:
        BibInputError: a model that scored none of the rated episodes, or fewer than 3 in common.
    """
    rng = np.random.default_rng(seed)
    means = ratings.groupby("episode_id")["rating"].mean()
    counts = ratings.groupby("episode_id")["rating"].size()
    humans_acc, humans_pairs = pair_accuracy(means, episodes)
    single_acc, single_pairs = rater_accuracy(ratings)
    reliability = split_half(ratings, n_splits, rng)
    out_models = {}
    for name, scores in models.items():
        common = [e for e in means.index if e in scores]
        if len(common) < 3:
            raise BibInputError(f"model {name}: scored {len(common)} of the {len(means)} rated episodes; "
                                "at least 3 are needed for a correlation (results of another set?)")
        x = np.array([scores[e] for e in common], dtype=float)
        y = means.loc[common].to_numpy(dtype=float)
        acc, n_pairs = pair_accuracy(pd.Series(scores, dtype=float), episodes[episodes["episode_id"].isin(means.index)])
        p_lo, p_hi = bootstrap_ci(x, y, pearson, n_boot, rng, alpha)
        s_lo, s_hi = bootstrap_ci(x, y, spearman, n_boot, rng, alpha)
        out_models[name] = {"n_trials": len(common), "pearson": pearson(x, y), "pearson_ci": [p_lo, p_hi],
                            "spearman": spearman(x, y), "spearman_ci": [s_lo, s_hi],
                            "pair_accuracy": acc, "n_pairs": n_pairs}
    return {
        "alpha": alpha, "seed": seed, "n_boot": n_boot, "n_raters": int(ratings["participant_id"].nunique()),
        "synthetic": bool(ratings["synthetic"].any()) if "synthetic" in ratings.columns else False,
        "n_ratings": len(ratings), "n_trials": len(means), "ratings_per_trial": [int(counts.min()), int(counts.max())],
        "humans": {"mean_rating_accuracy": humans_acc, "single_rater_accuracy": single_acc, "n_pairs": humans_pairs,
                   "n_pairs_single": single_pairs},
        "reliability": reliability, "models": out_models,
    }


def simulate_ratings(episodes: pd.DataFrame, n_raters: int, seed: int, name: str) -> dict[str, pd.DataFrame]:
    """SYNTHETIC rating sessions for the episode set's pairs, one per rater, as the study would save them.

    Each rater follows :func:`rating_plan` (pairs sorted by id). A rating is ``clip(round(30 + 35 u + p + b + e), 0, 100)``
    with ``u`` 1 for the unexpected outcome, ``p ~ N(0, 10)`` per pair and outcome (how surprising that
    video is), ``b ~ N(0, 8)`` per rater and ``e ~ N(0, 15)`` per rating, all from ``default_rng(seed)``.
    Every row has ``synthetic = true``.

    Returns:
        file name (``NAME_rNN_ratings.csv``) to its rows (:data:`RATING_COLUMNS`).
    """
    pairs = _pairs(episodes)
    if not pairs:
        raise BibInputError("the episode set has no expected/unexpected pairs to rate")
    protocol = RatingProtocol(seed=seed)
    rng = np.random.default_rng(seed)
    video = {(p, o): rng.normal(0, 10) for p in range(len(pairs)) for o in (0, 1)}
    study_id = study_id_of(name, pairs)
    out = {}
    width = max(2, len(str(n_raters)))
    for r in range(1, n_raters + 1):
        bias = rng.normal(0, 8)
        rows = []
        for k, (p, u) in enumerate(rating_plan(len(pairs), r, seed), start=1):
            pair = pairs[p]
            ep = pair["unexpected" if u else "expected"]
            value = float(np.clip(np.round(30 + 35 * u + video[p, u] + bias + rng.normal(0, 15)), *SCALE))
            rows.append({"participant_id": f"r{r:0{width}d}", "study": name, "trial_num": k, "task": pair["task"],
                         "pair_id": pair["pair_id"], "episode_id": ep, "outcome": "unexpected" if u else "expected",
                         "rating": int(value), "response_ms": int(rng.integers(1500, 9000)), "rater_number": r,
                         "session_date": "", "synthetic": "true", "study_id": study_id, "criteria_hash": protocol.digest()})
        out[f"{name}_r{r:0{width}d}{RATINGS_SUFFIX}"] = pd.DataFrame(rows, columns=list(RATING_COLUMNS))
    return out


def _pairs(episodes: pd.DataFrame) -> list[dict[str, str]]:
    """The set's pairs with both outcomes, sorted by pair id: ``pair_id, task, expected, unexpected`` (episode ids)."""
    out = []
    for pair_id, rows in episodes.drop_duplicates("episode_id").groupby("pair_id", sort=True):
        by = dict(zip(rows["outcome"], rows["episode_id"]))
        if "expected" in by and "unexpected" in by:
            out.append({"pair_id": str(pair_id), "task": str(rows["condition"].iloc[0]),
                        "expected": by["expected"], "unexpected": by["unexpected"]})
    return out


def study_id_of(name: str, pairs: list[dict[str, str]]) -> str:
    """A rating study's id: its name and 10 hex digits of the sha256 of its pairs."""
    return f"{name}-{hashlib.sha256(json.dumps(pairs, sort_keys=True).encode()).hexdigest()[:10]}"


@dataclass
class RatingAgreement(Result):
    """``bib compare --ratings``'s result: the dict of :func:`agreement` and a Markdown table."""

    name: ClassVar[str] = "ratings"
    result: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return self.result

    def to_markdown(self) -> str:
        r = self.result
        level = f"{1 - r['alpha']:.0%}"
        rel = r["reliability"]
        h = r["humans"]
        rows = [[name, m["n_trials"], m["pearson"], f"[{m['pearson_ci'][0]:.3f}, {m['pearson_ci'][1]:.3f}]",
                 m["spearman"], f"[{m['spearman_ci'][0]:.3f}, {m['spearman_ci'][1]:.3f}]", m["pair_accuracy"], m["n_pairs"]]
                for name, m in r["models"].items()]
        rows.append(["humans (mean rating)", r["n_trials"], None, "", None, "", h["mean_rating_accuracy"], h["n_pairs"]])
        rows.append(["humans (single rater, z)", "", None, "", None, "", h["single_rater_accuracy"], h["n_pairs_single"]])
        lines = ["**SYNTHETIC ratings** (rows with synthetic = true): made-up raters, not people.", ""] if r.get("synthetic") else []
        lines += [
            f"Per-trial agreement with the mean human rating: {r['n_raters']} raters, {r['n_ratings']} ratings, "
            f"{r['n_trials']} trials ({r['ratings_per_trial'][0]}-{r['ratings_per_trial'][1]} ratings each); "
            f"{level} bootstrap CIs ({r['n_boot']} resamples, seed {r['seed']})", "",
            markdown_table(["observer", "trials", "pearson", "CI", "spearman", "CI", "pair_accuracy", "pairs"], rows,
                           align="lrrlrlrr"), "",
            f"Ceiling: split-half reliability of the mean ratings (Spearman-Brown) {rel['spearman_brown']:.3f} "
            f"(95% of splits {rel['ci_low']:.3f}-{rel['ci_high']:.3f}; half-sample r {rel['r_half']:.3f}; {rel['n_splits']} random splits)",
        ]
        return "\n".join(lines)
