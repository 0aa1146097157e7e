"""Aggregate views across seeds and problems, with bootstrap intervals, as rliable reports them
(Agarwal et al., "Deep RL at the Edge of the Statistical Precipice", NeurIPS 2021):

* :func:`iqm_table`: per problem and method, the interquartile mean (IQM: the mean of the middle
  50 %) of the final log10 regret over seeds, with a 95 % percentile bootstrap interval;
* :func:`improvement_table`: per pair of methods, the probability that A ends below B (final log10
  regret of a random run of A below that of a random run of B, ties counting half), averaged over
  the problems both ran on, with a stratified bootstrap interval;
* :func:`relative_iqm_table`: per method, the IQM over every (problem, seed) of the final log10
  regret minus the median final log10 regret of a baseline method on the same problem (the study's
  ``baseline``): how many decades below the baseline a method ends, pooled across
  problems whose regrets live on different scales.

Only cells in the default configuration (no option, the default GP) count, each method on a problem
at its (alpha, T) setting; a method and a problem meet at equal (problem, alpha, target, T). The
bootstrap is scipy's (:func:`scipy.stats.bootstrap`, percentile method, seeded); stratified means each
method's seeds are resampled within each problem, which scipy does when every (problem, method)
sample is passed as its own sample with ``paired=False``.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
from scipy import stats

#: Bootstrap resamples and interval level.
RESAMPLES = 2000
CONFIDENCE = 0.95
#: One seeded generator per table, so that a table is the same on every run.
SEED = 20210718
SETTING = ["problem", "alpha", "target", "iterations"]


def _iqm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return stats.trim_mean(x, 0.25, axis=axis)


def _interval(samples: list[np.ndarray], statistic) -> tuple[float, float]:
    """The percentile bootstrap interval of ``statistic(*samples, axis=-1)``, each sample resampled on
    its own; NaN where the data are degenerate (every resample equal) or too small."""
    if any(len(s) < 2 for s in samples):
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate samples: NaN interval, said by the NaN
        result = stats.bootstrap(samples, statistic, n_resamples=RESAMPLES, vectorized=True, paired=False,
                                 axis=-1, confidence_level=CONFIDENCE, method="percentile",
                                 rng=np.random.default_rng(SEED))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def default_finals(cells: pd.DataFrame) -> pd.DataFrame:
    """The default-configuration cells of :func:`analysis.claim_cells.cell_values` with a final regret.

    Args:
        cells: the cells of :func:`analysis.claim_cells.cell_values`.

    Returns:
        The rows of ``cells`` whose ``settings`` are the default (``{}``) and whose ``final`` is not NaN, all
        columns kept.
    """
    return cells.loc[(cells["settings"] == "{}") & cells["final"].notna()]


def iqm_table(cells: pd.DataFrame) -> pd.DataFrame:
    """The interquartile mean of the final log10 regret over seeds per setting and method, with an interval.

    Args:
        cells: the cells of :func:`analysis.claim_cells.cell_values` (the default configuration's are used).

    Returns:
        A frame with one row per (problem, alpha, target, T, algorithm), columns ``problem``, ``alpha``,
        ``target``, ``iterations``, ``algorithm``, ``n_seeds``, ``iqm`` and its bootstrap interval
        ``iqm_low``, ``iqm_high`` (NaN with fewer than two seeds).
    """
    rows = []
    for key, group in default_finals(cells).groupby([*SETTING, "algorithm"], sort=True):
        x = group["final"].to_numpy(float)
        low, high = _interval([x], _iqm)
        rows.append({**dict(zip([*SETTING, "algorithm"], key, strict=True)), "n_seeds": len(x),
                     "iqm": float(_iqm(x)), "iqm_low": low, "iqm_high": high})
    return pd.DataFrame(rows, columns=[*SETTING, "algorithm", "n_seeds", "iqm", "iqm_low", "iqm_high"])


def _below(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """P(a run of A ends below a run of B), ties half, along the last axis of both (any leading axes)."""
    lower = (a[..., :, None] < b[..., None, :]).mean(axis=(-2, -1))
    ties = (a[..., :, None] == b[..., None, :]).mean(axis=(-2, -1))
    return lower + 0.5 * ties


def _mean_below(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
    """:func:`_below` averaged over problems; ``samples`` = (a_1, b_1, a_2, b_2, ...)."""
    return np.mean([_below(a, b) for a, b in zip(samples[::2], samples[1::2], strict=True)], axis=0)


def improvement_table(cells: pd.DataFrame) -> pd.DataFrame:
    """The probability that one method ends below another, per target and pair of methods.

    Only the pairs that met on at least one problem are compared. Each pair is oriented so that A is the
    method that tends to end lower.

    Args:
        cells: the cells of :func:`analysis.claim_cells.cell_values` (the default configuration's are used).

    Returns:
        A frame with one row per (target, pair), columns ``target``, ``a``, ``b``, ``p_a_below_b`` (>= 0.5)
        with its stratified bootstrap interval ``low``, ``high``, ``n_problems`` and ``problems`` (where they
        met, comma-separated).
    """
    finals = default_finals(cells)
    rows = []
    for target, part in finals.groupby("target", sort=True):
        runs = {key: g["final"].to_numpy(float) for key, g in part.groupby([*SETTING, "algorithm"])}
        methods = sorted({key[-1] for key in runs})
        for a, b in itertools.combinations(methods, 2):
            met = sorted(key[:-1] for key in runs if key[-1] == a and (*key[:-1], b) in runs)
            if not met:
                continue
            samples = [runs[(*setting, m)] for setting in met for m in (a, b)]
            value = float(_mean_below(*samples))
            if value < 0.5:  # orient: A is the method that tends to end lower
                a, b, value = b, a, 1.0 - value
                samples = [s for pair in zip(samples[1::2], samples[::2], strict=True) for s in pair]
            low, high = _interval(samples, _mean_below)
            rows.append({"target": target, "a": a, "b": b, "p_a_below_b": value, "low": low, "high": high,
                         "n_problems": len(met), "problems": ", ".join(s[0] for s in met)})
    return pd.DataFrame(rows, columns=["target", "a", "b", "p_a_below_b", "low", "high", "n_problems",
                                       "problems"])


def _pooled_iqm(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
    return _iqm(np.concatenate(samples, axis=-1))


def relative_iqm_table(cells: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """The final log10 regret of each method against ``baseline``'s, per target, as an IQM over runs.

    The IQM is taken over a method's runs on every problem where ``baseline`` ran too, of (final log10 regret
    - the baseline's median there): negative when it ends below the baseline, with a stratified bootstrap
    interval.

    Args:
        cells: the cells of :func:`analysis.claim_cells.cell_values` (the default configuration's are used).
        baseline: the method the others are measured against.

    Returns:
        A frame with one row per (target, method other than ``baseline`` that met it), columns ``target``,
        ``algorithm``, ``baseline``, ``iqm_vs_baseline``, ``low``, ``high``, ``n_problems`` and ``n_runs``.
    """
    finals = default_finals(cells)
    rows = []
    for target, part in finals.groupby("target", sort=True):
        base = part.loc[part["algorithm"] == baseline].groupby(SETTING)["final"].median()
        for method, group in part.loc[part["algorithm"] != baseline].groupby("algorithm", sort=True):
            samples = [g["final"].to_numpy(float) - base[key] for key, g in group.groupby(SETTING)
                       if key in base.index]
            if not samples:
                continue
            low, high = _interval(samples, _pooled_iqm)
            rows.append({"target": target, "algorithm": method, "baseline": baseline,
                         "iqm_vs_baseline": float(_pooled_iqm(*samples)), "low": low, "high": high,
                         "n_problems": len(samples), "n_runs": int(sum(len(s) for s in samples))})
    return pd.DataFrame(rows, columns=["target", "algorithm", "baseline", "iqm_vs_baseline", "low", "high",
                                       "n_problems", "n_runs"])
