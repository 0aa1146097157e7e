"""Views across problems that benchmarking practice draws, from the
default-configuration cells of :func:`analysis.claims.cell_values`, one risk measure (``target``) at
a time, a method and a problem meeting at equal (problem, alpha, target, T) as in
:mod:`analysis.aggregate`:

* :func:`profile_table`, **performance profiles** (the empirical distribution of normalized scores
  over runs, as rliable draws them, Agarwal et al., NeurIPS 2021; COCO's ECDFs of runs): a run's
  score is its final log10 regret minus the median final log10 regret of the study's baseline on
  that problem (in decades below the baseline), and a method's profile at tau is the
  fraction of its runs with a score at or below tau, averaged over the problems (each problem
  weighs the same). The band is a 95 % stratified percentile bootstrap (each problem's seeds
  resampled on their own; the baseline's medians held fixed).
* :func:`rank_tables`, **ranks with ties made explicit**: within each block (problem, seed) the
  methods are ranked by final log10 regret (ties share their mean rank); average ranks per problem
  and over every block; Friedman's test over the blocks; then every pair by a two-sided Wilcoxon
  signed-rank test on its paired differences over the blocks, Holm-corrected over the pairs
  (Benavoli, Corani and Mangili, JMLR 2016, recommend these pairwise tests over the mean-rank
  post-hoc tests of Demsar 2006). :func:`cliques` groups the methods that no corrected test tells
  apart, the bars of the critical-difference diagram. Only methods that ran on every problem of the
  target are ranked, and only complete blocks (the others are named in the table's note).
* :func:`cost_quality_table`, **cost against quality**: per problem and method, the median over
  seeds of a cell's median seconds per iteration (model fit, acquisition, recommendation and
  evaluation, iterations >= 1) against the median final log10 regret, with both quartiles.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from analysis.aggregate import CONFIDENCE, RESAMPLES, SEED, SETTING, default_finals
from analysis.claim_cells import study_cells
from analysis.data import CELL_KEYS
from analysis.power import holm
from analysis.signed_rank import signed_rank_p
from harness.schema import TIMINGS
from harness.study import NO_STUDY, Study

#: Points of a profile's tau grid.
PROFILE_POINTS = 121
#: Level of the pairwise tests (after Holm's correction).
LEVEL = 0.05


def _profile(*samples: np.ndarray, tau: np.ndarray, axis: int = -1) -> np.ndarray:
    """Mean over problems of the fraction of runs at or below each ``tau``: ``len(tau)`` values
    (times any leading resample axes, moved last, as :func:`scipy.stats.bootstrap` wants them)."""
    fractions = [(np.moveaxis(s, axis, -1)[..., :, None] <= tau).mean(axis=-2) for s in samples]
    return np.moveaxis(np.mean(fractions, axis=0), -1, 0)


def _band(samples: list[np.ndarray], tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stratified percentile bootstrap band of :func:`_profile` (NaN where a problem has one run)."""
    if any(len(s) < 2 for s in samples):
        return np.full(tau.shape, np.nan), np.full(tau.shape, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate resamples (a step where every run agrees): NaN
        result = stats.bootstrap(samples, lambda *s, axis=-1: _profile(*s, tau=tau, axis=axis),
                                 n_resamples=RESAMPLES, vectorized=True, paired=False, axis=-1,
                                 confidence_level=CONFIDENCE, method="percentile",
                                 rng=np.random.default_rng(SEED))
    return np.asarray(result.confidence_interval.low), np.asarray(result.confidence_interval.high)


def scores(cells: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """The default-configuration cells with ``score``, a run's final log10 regret against the baseline's.

    ``score`` is the final log10 regret minus the median final log10 regret of ``baseline`` at the same
    (problem, alpha, target, T); settings where the baseline did not run are left out.

    Args:
        cells: the cells of :func:`analysis.claim_cells.cell_values`.
        baseline: the method the scores are measured against.

    Returns:
        The default-configuration cells with a final regret (:func:`analysis.aggregate.default_finals`), one
        row per cell, with two more columns: ``base`` (the baseline's median final log10 regret at the cell's
        setting) and ``score``.
    """
    finals = default_finals(cells)
    base = (finals.loc[finals["algorithm"] == baseline].groupby(SETTING)["final"].median()
            .rename("base").reset_index())
    out = finals.merge(base, on=SETTING, how="inner")
    return out.assign(score=out["final"] - out["base"])


def profile_table(cells: pd.DataFrame, baseline: str, points: int = PROFILE_POINTS) -> pd.DataFrame:
    """The performance profiles of every method, per target (module docstring).

    The baseline has a profile too: it crosses 1/2 at 0 on every problem.

    Args:
        cells: the cells of :func:`analysis.claim_cells.cell_values`.
        baseline: the method the scores are measured against (:func:`scores`); ``""`` for none.
        points: the points of each profile's tau grid.

    Returns:
        A frame with ``points`` rows per (target, method), columns ``target``, ``algorithm``, ``tau``,
        ``fraction`` (of runs at or below ``tau``, problems weighing the same), the band ``low`` and ``high``
        (NaN where a problem has a single run), ``n_problems`` and ``n_runs``; empty, with those columns,
        without a baseline or without a setting where it ran.
    """
    columns = ["target", "algorithm", "tau", "fraction", "low", "high", "n_problems", "n_runs"]
    scored = scores(cells, baseline) if baseline else pd.DataFrame()
    if scored.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for target, part in scored.groupby("target", sort=True):
        lo, hi = part["score"].min(), part["score"].max()
        pad = 0.05 * (hi - lo) if hi > lo else 0.5
        tau = np.linspace(lo - pad, hi + pad, points)
        for method, group in part.groupby("algorithm", sort=True):
            samples = [g["score"].to_numpy(float) for _, g in group.groupby(SETTING)]
            fraction = _profile(*samples, tau=tau)
            low, high = _band(samples, tau)
            rows.append(pd.DataFrame({"target": target, "algorithm": method, "tau": tau, "fraction": fraction,
                                      "low": low, "high": high, "n_problems": len(samples),
                                      "n_runs": int(sum(len(s) for s in samples))}))
    return pd.concat(rows, ignore_index=True)[columns]


def blocks(cells: pd.DataFrame, target: str) -> tuple[pd.DataFrame, str]:
    """The final log10 regrets of ``target``'s default cells as blocks x methods, ready to be ranked.

    Only the methods that ran on every problem are kept, and only the complete blocks.

    Args:
        cells: the cells of :func:`analysis.claim_cells.cell_values`.
        target: the risk measure.

    Returns:
        (blocks, note), where ``blocks`` is a frame with one row per complete block, indexed by (``problem``,
        ``alpha``, ``iterations``, ``seed``), and one column per kept method (sorted by name) holding final
        log10 regrets, and ``note`` names the methods and the number of blocks left out (``"; "``-joined),
        ``""`` where nothing was.
    """
    part = default_finals(cells).loc[lambda c: c["target"] == target]
    settings = part.groupby(SETTING).ngroups
    per_method = part.groupby("algorithm").apply(lambda g: g.groupby(SETTING).ngroups, include_groups=False)
    kept = sorted(per_method.index[per_method == settings])
    left = sorted(set(per_method.index) - set(kept))
    wide = (part.loc[part["algorithm"].isin(kept)]
            .pivot_table(index=["problem", "alpha", "iterations", "seed"], columns="algorithm",
                         values="final", aggfunc="first"))
    complete = wide.dropna()
    notes = []
    if left:
        notes.append(f"not ranked (absent from some problem): {', '.join(left)}")
    if len(complete) < len(wide):
        notes.append(f"{len(wide) - len(complete)} incomplete block(s) left out")
    return complete[kept] if kept else complete, "; ".join(notes)


def rank_tables(cells: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The ranks of the methods, Friedman's test and the pairwise tests, per target (module docstring).

    Args:
        cells: the cells of :func:`analysis.claim_cells.cell_values`.

    Returns:
        Three frames (``ranks``, ``friedman``, ``pairs``), of the targets with at least two ranked methods and
        a complete block. ``ranks`` has one row per (target, problem, method), the problem ``all`` for every
        block, columns ``target``, ``problem``, ``algorithm``, ``mean_rank``, ``n_blocks``. ``friedman`` has
        one row per target, columns ``target``, ``n_methods``, ``n_blocks``, ``n_problems``, ``statistic``,
        ``p`` (both NaN for two methods) and ``note`` (:func:`blocks`). ``pairs`` has one row per (target,
        pair of methods), columns ``target``, ``a``, ``b``, ``n_blocks``, ``median_d`` (the median of final
        log10 regret A - B over the blocks, negative when A tends to end lower), ``p``, ``p_holm``
        (Holm-corrected over the target's pairs) and ``different`` (``p_holm`` below :data:`LEVEL`).
    """
    rank_rows, friedman_rows, pair_rows = [], [], []
    for target in sorted(default_finals(cells)["target"].unique()):
        wide, note = blocks(cells, target)
        methods = list(wide.columns)
        if len(methods) < 2 or wide.empty:
            continue
        ranks = pd.DataFrame(stats.rankdata(wide.to_numpy(float), axis=1), index=wide.index, columns=methods)
        for problem, part in [("all", ranks), *ranks.groupby(level="problem", sort=True)]:
            for method in methods:
                rank_rows.append({"target": target, "problem": problem, "algorithm": method,
                                  "mean_rank": float(part[method].mean()), "n_blocks": len(part)})
        statistic, p = (stats.friedmanchisquare(*wide.to_numpy(float).T) if len(methods) >= 3
                        else (float("nan"), float("nan")))
        friedman_rows.append({"target": target, "n_methods": len(methods), "n_blocks": len(wide),
                              "n_problems": wide.index.get_level_values("problem").nunique(),
                              "statistic": float(statistic), "p": float(p), "note": note})
        pairs = list(itertools.combinations(methods, 2))
        p_raw = np.array([signed_rank_p((wide[a] - wide[b]).to_numpy(float), "two-sided") for a, b in pairs])
        for (a, b), p_one, p_adj in zip(pairs, p_raw, holm(p_raw), strict=True):
            pair_rows.append({"target": target, "a": a, "b": b, "n_blocks": len(wide),
                              "median_d": float(np.median(wide[a] - wide[b])), "p": float(p_one),
                              "p_holm": float(p_adj), "different": bool(p_adj < LEVEL)})
    return (pd.DataFrame(rank_rows, columns=["target", "problem", "algorithm", "mean_rank", "n_blocks"]),
            pd.DataFrame(friedman_rows, columns=["target", "n_methods", "n_blocks", "n_problems", "statistic",
                                                 "p", "note"]),
            pd.DataFrame(pair_rows, columns=["target", "a", "b", "n_blocks", "median_d", "p", "p_holm",
                                             "different"]))


def cliques(order: list[str], different: set[frozenset[str]]) -> list[tuple[int, int]]:
    """The bars of a critical-difference diagram.

    A bar is a maximal run ``order[i..j]`` (i < j) of which no two methods are ``different``.

    Args:
        order: the methods sorted by average rank.
        different: the pairs of methods that a test tells apart.

    Returns:
        The bars as (i, j), indices into ``order``, by increasing i; a run inside an earlier bar is not one.
    """
    runs = []
    for i in range(len(order)):
        j = i
        while j + 1 < len(order) and all(frozenset((order[k], order[j + 1])) not in different
                                         for k in range(i, j + 1)):
            j += 1
        if j > i and not any(a <= i and j <= b for a, b in runs):
            runs.append((i, j))
    return runs


def iteration_seconds(frame: pd.DataFrame) -> pd.DataFrame:
    """The seconds per iteration of each cell.

    A cell's ``seconds`` is the median over its iterations >= 1 of the row's fit, acquisition, recommendation
    and evaluation seconds summed (the timing columns it lacks count as 0).

    Args:
        frame: the rows of :func:`analysis.data.load_results`.

    Returns:
        A frame with one row per cell, columns :data:`analysis.data.CELL_KEYS` and ``seconds`` (NaN for every
        cell where the rows hold no timing column).
    """
    steps = frame.loc[frame["iteration"] >= 1]
    present = [c for c in TIMINGS if c in steps]
    if not present:
        return frame[CELL_KEYS].drop_duplicates().assign(seconds=np.nan)
    total = steps[present].fillna(0.0).sum(axis=1)
    return (steps.assign(seconds=total).groupby(CELL_KEYS, sort=False, dropna=False)["seconds"].median()
            .reset_index())


def cost_quality_table(frame: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """Cost against quality per setting and method of the default configuration (module docstring).

    Args:
        frame: the rows of :func:`analysis.data.load_results`, for the seconds (:func:`iteration_seconds`).
        cells: the cells of :func:`analysis.claim_cells.cell_values`, for the final regrets.

    Returns:
        A frame with one row per (problem, alpha, target, T, method), columns ``problem``, ``alpha``,
        ``target``, ``iterations``, ``algorithm``, the quartiles over seeds of the seconds per iteration
        (``seconds_q25``, ``seconds_median``, ``seconds_q75``) and of the final log10 regret (``final_q25``,
        ``final_median``, ``final_q75``), and ``n_seeds``.
    """
    finals = default_finals(cells).merge(iteration_seconds(frame), on=CELL_KEYS, how="left")
    rows = []
    for key, group in finals.groupby([*SETTING, "algorithm"], sort=True):
        row = dict(zip([*SETTING, "algorithm"], key, strict=True))
        for column, name in (("seconds", "seconds"), ("final", "final")):
            q = group[column].quantile([0.25, 0.5, 0.75]).to_numpy(float)
            row.update({f"{name}_q25": q[0], f"{name}_median": q[1], f"{name}_q75": q[2]})
        rows.append({**row, "n_seeds": len(group)})
    return pd.DataFrame(rows, columns=[*SETTING, "algorithm", "seconds_q25", "seconds_median", "seconds_q75",
                                       "final_q25", "final_median", "final_q75", "n_seeds"])


def at_budget(frame: pd.DataFrame, fraction: float, study: Study = NO_STUDY) -> pd.DataFrame:
    """The cells as if every cell had stopped after ``fraction`` of its iterations.

    The cells' iterations are cut at ``fraction`` of their last (rounded, at least 1), so that ``final`` is
    the log10 regret of that iteration's recommendation.

    Args:
        frame: the rows of :func:`analysis.data.load_results`.
        fraction: the fraction of each cell's iterations kept.
        study: the study whose default configuration the cells are read in.

    Returns:
        The frame of :func:`analysis.claim_cells.cell_values` (one row per cell) of the cut rows, with
        ``study``'s aliases, reduced effort and per-problem options.
    """
    last = frame.groupby(CELL_KEYS, sort=False, dropna=False)["iteration"].transform("max")
    stop = np.maximum(1, np.rint(fraction * last))
    return study_cells(frame.loc[frame["iteration"] <= stop], study)


def choice_table(frame: pd.DataFrame, groups: dict[str, tuple[str, ...]], fractions: tuple[float, ...],
                 study: Study = NO_STUDY) -> pd.DataFrame:
    """Which method to use, per group of problems, risk measure and budget.

    A group is a kind of problem, a budget a fraction of the iterations. The best method of a group is the one
    of lowest average rank over the group's blocks (problem, seed); the methods no test tells apart from it
    (two-sided Wilcoxon signed-rank against it over the blocks, Holm-corrected over the others) are ``tied``.
    Of methods with equal average ranks the first by name is called best (the tests then say whether they
    differ).

    Args:
        frame: the rows of :func:`analysis.data.load_results`.
        groups: group name -> its problems.
        fractions: the budgets, fractions of the iterations (:func:`at_budget`).
        study: the study whose default configuration the cells are read in.

    Returns:
        A frame with one row per (budget, group, target) with at least two ranked methods and a complete
        block, columns ``group``, ``target``, ``fraction``, ``best``, ``tied`` (comma-separated, by average
        rank), ``n_blocks``, ``ranks`` (every method's average rank as text, best first), ``best_seconds``
        (the best method's median seconds per iteration, :func:`iteration_seconds`) and ``note``
        (:func:`blocks`).
    """
    seconds = iteration_seconds(frame)
    rows = []
    for fraction in fractions:
        cells = at_budget(frame, fraction, study)
        for group, problems in groups.items():
            mine = cells.loc[cells["problem"].isin(problems)]
            for target in sorted(default_finals(mine)["target"].unique()):
                wide, note = blocks(mine, target)
                if wide.shape[1] >= 2 and not wide.empty:
                    cost = seconds.loc[seconds["problem"].isin(problems) & (seconds["target"] == target)]
                    rows.append({"group": group, "target": target, "fraction": fraction,
                                 **_choice(wide, cost), "note": note})
    return pd.DataFrame(rows, columns=["group", "target", "fraction", "best", "tied", "n_blocks", "ranks",
                                       "best_seconds", "note"])


def _choice(wide: pd.DataFrame, seconds: pd.DataFrame) -> dict:
    """The best method of the blocks ``wide`` (blocks x methods), those tied with it, the ranks and
    the best one's median seconds per iteration among ``seconds`` (:func:`iteration_seconds`)."""
    ranks = pd.Series(stats.rankdata(wide.to_numpy(float), axis=1).mean(axis=0), index=wide.columns)
    best = ranks.idxmin()
    others = [m for m in wide.columns if m != best]
    p = holm(np.array([signed_rank_p((wide[m] - wide[best]).to_numpy(float), "two-sided") for m in others]))
    tied = sorted((m for m, q in zip(others, p, strict=True) if q >= LEVEL), key=ranks.get)
    cost = seconds.loc[seconds["algorithm"] == best, "seconds"]
    return {"best": best, "tied": ", ".join(tied), "n_blocks": len(wide),
            "ranks": ", ".join(f"{m} {r:.2f}" for m, r in ranks.sort_values().items()),
            "best_seconds": float(cost.median()) if len(cost) else float("nan")}
