"""Computational complexity: how a method's time grows with |D| (observations) and |Dz| (the size
of Z's support), fitted as log-log slopes, next to the exponents a study's formulas predict.

A study declares its methods' cost formulas (:class:`harness.study.Complexity`), e.g.
O(n |Dz| (|D|^2 + log |Dz|)) per iteration for a method that scans Z's support, and O(|D|^3) per
likelihood evaluation for an exact GP fit, whatever |Dz|. A power law t = c s^k is a straight line
of slope k in log t against log s, so each (method, varied size) is
summarized by the least-squares slope of log10 t on log10 s with a t-based confidence interval
(:func:`fit_slope`). The study's ``exponents`` hold the exponent each formula predicts once its
leading term dominates; :func:`formula_slope` the slope the whole formula has over the sizes
actually measured (its regime there: a formula in |D|^2 + |Dz|^3, say, has the exponent 3 in |Dz|
once |Dz|^3 dominates, and a smaller slope while |D|^2 does). Fixed costs and lower-order terms
flatten a measured curve, so below the leading term's regime the measured slope is expected to be
smaller.

The timings come from the timing cells of a complexity grid (``python -m harness.run --grid
NAME``; :mod:`harness.complexity`, read by :func:`harness.frames.read_timings`);
:func:`timing_points` turns them into the (method, varied, size, fixed, seconds) frame that
:func:`slope_table` fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from harness.study import Complexity

#: The method label of every GP fit (the fit does not depend on the method).
FIT_METHOD = "gp-fit"

#: Appended to a method's label for its "evaluation" timings (one call of its acquisition function
#: on a fixed batch; the proposal timings carry the bare label).
EVALUATION_SUFFIX = ": one evaluation"

#: What the timings are compared with when no study declares it: nothing (no formula, no exponent).
NO_COMPLEXITY = Complexity()


def method_label(algorithm: str, z_kind: str, complexity: Complexity = NO_COMPLEXITY) -> str:
    """The method name used in the tables and figures.

    Args:
        algorithm: the algorithm's registered name.
        z_kind: the kind of Z, ``"continuous"`` or another (discrete).
        complexity: the study's method labels (:class:`harness.study.Complexity`).

    Returns:
        The study's label for (algorithm, kind of Z) if it declares one, else the algorithm's name, with "
        (continuous Z)" on a continuous Z.
    """
    label = complexity.labels.get((algorithm, z_kind))
    if label is not None:
        return label
    return f"{algorithm} (continuous Z)" if z_kind == "continuous" else algorithm


def formula_slope(method: str, varied: str, fixed: float, sizes: np.ndarray,
                  complexity: Complexity = NO_COMPLEXITY) -> float:
    """The least-squares log-log slope of the study's formula for ``method``: the exponent the formula
    predicts in the regime measured.

    Args:
        method: the method's label (:func:`method_label`), with or without :data:`EVALUATION_SUFFIX`.
        varied: the varied size, ``"D"`` or ``"Dz"``.
        fixed: the other size, held at this value.
        sizes: the sizes of the varied one the formula is evaluated at.
        complexity: the study's formulas (:class:`harness.study.Complexity`).

    Returns:
        The slope, NaN without a formula for ``method`` or with fewer than two distinct sizes.
    """
    formula = complexity.formulas.get(method.removesuffix(EVALUATION_SUFFIX))
    s = np.unique(np.asarray(sizes, dtype=float))
    if formula is None or len(s) < 2:
        return math.nan
    values = np.array([formula(v, fixed) if varied == "D" else formula(fixed, v) for v in s])
    return float(np.polyfit(np.log10(s), np.log10(values), 1)[0])


@dataclass(frozen=True)
class Slope:
    """A fitted log-log slope.

    Attributes:
        slope: least-squares slope of log10(seconds) on log10(size).
        low, high: its two-sided confidence interval at ``level``.
        level: confidence level of the interval.
        points: number of (size, seconds) pairs fitted.
        sizes: number of distinct sizes.
    """

    slope: float
    low: float
    high: float
    level: float
    points: int
    sizes: int


def fit_slope(sizes: np.ndarray, seconds: np.ndarray, level: float = 0.95) -> Slope:
    """The slope k of log10 t = a + k log10 s by least squares, with its confidence interval.

    The interval is k +- t_{(1+level)/2, n-2} se(k) (the usual regression interval; every repetition of a
    timing is one point, so the interval reflects the timing noise too).

    Args:
        sizes: ``n`` positive sizes (``|D|`` or ``|Dz|``), at least two distinct.
        seconds: ``n`` positive times.
        level: confidence level in (0, 1).

    Returns:
        The fitted :class:`Slope`, its interval of width 0 where the points lie on a line.

    Raises:
        ValueError: arrays that are not 1-D of one length, fewer than two distinct sizes, fewer than three
            points, or non-positive values.
    """
    s = np.asarray(sizes, dtype=float)
    t = np.asarray(seconds, dtype=float)
    if s.shape != t.shape or s.ndim != 1:
        raise ValueError("sizes and seconds must be 1-D arrays of the same length")
    if (s <= 0).any() or (t <= 0).any():
        raise ValueError("sizes and seconds must be positive")
    distinct = len(np.unique(s))
    if distinct < 2 or len(s) < 3:
        raise ValueError(f"need at least 2 distinct sizes and 3 points, got {distinct} and {len(s)}")
    fit = stats.linregress(np.log10(s), np.log10(t))
    dof = len(s) - 2
    half = stats.t.ppf(0.5 + level / 2, dof) * fit.stderr if fit.stderr > 0 else 0.0
    return Slope(float(fit.slope), float(fit.slope - half), float(fit.slope + half), level, len(s),
                 distinct)


def slope_table(frame: pd.DataFrame, level: float = 0.95, complexity: Complexity = NO_COMPLEXITY
                ) -> pd.DataFrame:
    """The fitted log-log slopes of the timings, each beside the study's formula.

    Groups with fewer than two distinct sizes or three points are left out (nothing to fit: the study
    stopped).

    Args:
        frame: timings with columns ``method``, ``varied`` ("D" or "Dz"), ``size`` (the varied size),
            ``fixed`` (the other size), ``seconds`` (one row per timed repetition), as :func:`timing_points`
            gives them.
        level: confidence level of the intervals.
        complexity: the study's formulas and exponents (:class:`harness.study.Complexity`).

    Returns:
        A frame with one row per (method, varied size, the other size held fixed), columns ``method``,
        ``varied``, ``fixed``, ``size_min``, ``size_max``, the fitted ``slope`` and its interval ``low``,
        ``high`` (:func:`fit_slope`), ``points``, ``sizes``, the study's formula slope and exponent
        (``formula_slope``, ``formula_exponent``, ``formula_term``; NaN and "" where it declares none) and
        ``within_formula`` (whether the interval's low end lies at or below the exponent; None without one).
    """
    rows = []
    for (method, varied, fixed), group in frame.groupby(["method", "varied", "fixed"], sort=True):
        if group["size"].nunique() < 2 or len(group) < 3:  # nothing to fit (the study stopped)
            continue
        fitted = fit_slope(group["size"].to_numpy(), group["seconds"].to_numpy(), level)
        exponent, term = complexity.exponents.get((method.removesuffix(EVALUATION_SUFFIX), varied),
                                                  (math.nan, ""))
        rows.append({"method": method, "varied": varied, "fixed": fixed,
                     "size_min": group["size"].min(), "size_max": group["size"].max(),
                     "slope": fitted.slope, "low": fitted.low, "high": fitted.high,
                     "points": fitted.points, "sizes": fitted.sizes,
                     "formula_slope": formula_slope(method, varied, fixed, group["size"].to_numpy(),
                                                    complexity),
                     "formula_exponent": exponent, "formula_term": term,
                     "within_formula": bool(fitted.low <= exponent) if not math.isnan(exponent) else None})
    columns = ["method", "varied", "fixed", "size_min", "size_max", "slope", "low", "high", "points",
               "sizes", "formula_slope", "formula_exponent", "formula_term", "within_formula"]
    return pd.DataFrame(rows, columns=columns)


def timing_points(timings: pd.DataFrame, clock: str = "cpu_seconds",
                  complexity: Complexity = NO_COMPLEXITY) -> pd.DataFrame:
    """The timing cells' rows as points of :func:`slope_table`.

    Every timed call is a point twice, once of its method's curve against ``|D|`` (``fixed`` = ``|Dz|``) and
    once against ``|Dz|`` (``fixed`` = ``|D|``). Proposals are labelled by :func:`method_label`, evaluations
    of the acquisition function by that label plus :data:`EVALUATION_SUFFIX`; every fit is :data:`FIT_METHOD`
    (the fit does not depend on the method).

    Args:
        timings: :func:`harness.frames.read_timings` output.
        clock: ``"cpu_seconds"`` (default: process CPU time, robust to other processes on the machine) or
            ``"seconds"`` (wall clock).
        complexity: the study's method labels (:class:`harness.study.Complexity`).

    Returns:
        A frame with two rows per timed call of positive seconds (the ``D`` points first), columns ``method``,
        ``varied``, ``size``, ``fixed``, ``seconds``, ``n_obs``, ``n_z``; empty, with those columns, without
        timings.
    """
    if timings.empty:
        return pd.DataFrame(columns=["method", "varied", "size", "fixed", "seconds", "n_obs", "n_z"])
    labels = [method_label(a, k, complexity) if w == "acquisition"
              else method_label(a, k, complexity) + EVALUATION_SUFFIX if w == "evaluation" else FIT_METHOD
              for a, k, w in zip(timings["algorithm"], timings["z_kind"], timings["what"], strict=True)]
    base = pd.DataFrame({"method": labels, "n_obs": timings["n_obs"].to_numpy(),
                         "n_z": timings["n_z"].to_numpy(), "seconds": timings[clock].to_numpy()})
    by_d = base.assign(varied="D", size=base["n_obs"], fixed=base["n_z"])
    by_z = base.assign(varied="Dz", size=base["n_z"], fixed=base["n_obs"])
    points = pd.concat([by_d, by_z], ignore_index=True)
    return points.loc[points["seconds"] > 0,
                      ["method", "varied", "size", "fixed", "seconds", "n_obs", "n_z"]].reset_index(drop=True)


def median_table(timings: pd.DataFrame, clock: str = "cpu_seconds",
                 complexity: Complexity = NO_COMPLEXITY) -> pd.DataFrame:
    """Median and interquartile range of each (method, ``|D|``, ``|Dz|``) over its repeats.

    Args:
        timings: :func:`harness.frames.read_timings` output.
        clock: the clock read, as in :func:`timing_points`.
        complexity: the study's method labels, as in :func:`timing_points`.

    Returns:
        A frame with one row per (method, ``|D|``, ``|Dz|``), methods labelled as :func:`timing_points` does,
        columns ``method``, ``n_obs``, ``n_z``, ``median_s``, ``q25_s``, ``q75_s``, ``repeats``.
    """
    points = timing_points(timings, clock, complexity)
    points = points.loc[points["varied"] == "D"]
    grouped = points.groupby(["method", "n_obs", "n_z"])["seconds"]
    table = pd.DataFrame({"median_s": grouped.median(), "q25_s": grouped.quantile(0.25),
                          "q75_s": grouped.quantile(0.75), "repeats": grouped.size()})
    return table.reset_index()
