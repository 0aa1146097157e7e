"""Computational complexity: how a method's time grows with |D| (observations) and |Dz| (the size
of Z's support), fitted as log-log slopes, next to the exponents the paper's formulas predict.

The paper (Section 3.2) states, per BO iteration,

* V-UCB: O(n |Dz| (|D|^2 + log |Dz|)), n the number of x evaluated by the inner optimizer;
* rho-KG^apx: O(n_out |D| K |Dz| (|D|^2 + |Dz| |D| + |Dz|^2 + M |Dz|));

and an exact GP fit costs O(|D|^3) per likelihood evaluation, whatever |Dz|. A power law
t = c s^k is a straight line of slope k in log t against log s, so each (method, varied size) is
summarized by the least-squares slope of log10 t on log10 s with a t-based confidence interval
(:func:`fit_slope`). :data:`PAPER_EXPONENTS` holds the exponent each formula predicts once its
leading term dominates; below that regime the measured slope is expected to be smaller (fixed
costs and lower-order terms flatten the curve), never larger.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

#: (method, varied size) -> (exponent of the leading term, the term it comes from).
PAPER_EXPONENTS: dict[tuple[str, str], tuple[float, str]] = {
    ("vucb-prob", "Dz"): (1.0, "n |Dz| |D|^2 (the log |Dz| of the sort is lower order)"),
    ("vucb-prob", "D"): (2.0, "n |Dz| |D|^2"),
    ("stableopt", "Dz"): (1.0, "as V-UCB: the minimum over Dz replaces the quantile"),
    ("stableopt", "D"): (2.0, "as V-UCB"),
    ("rhokg-apx", "Dz"): (3.0, "n_out |D| K |Dz| |Dz|^2"),
    ("rhokg-apx", "D"): (3.0, "n_out |D| K |Dz| |D|^2"),
    ("gp-fit", "D"): (3.0, "a Cholesky factor of the |D| x |D| kernel matrix"),
    ("gp-fit", "Dz"): (0.0, "the fit does not see Dz"),
}


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
    """The slope k of log10 t = a + k log10 s by least squares, with the interval
    k +- t_{(1+level)/2, n-2} * se(k) (the usual regression interval; every repetition of a timing is
    one point, so the interval reflects the timing noise too).

    Args:
        sizes: ``n`` positive sizes (|D| or |Dz|), at least two distinct.
        seconds: ``n`` positive times.
        level: confidence level in (0, 1).

    Raises:
        ValueError: fewer than two distinct sizes, fewer than three points, or non-positive values.
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


def slope_table(frame: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """One row per (method, varied size, the other size held fixed): the fitted slope, its interval,
    the paper's exponent and whether the interval lies at or below it.

    Args:
        frame: timings with columns ``method``, ``varied`` ("D" or "Dz"), ``size`` (the varied
            size), ``fixed`` (the other size), ``seconds`` (one row per timed repetition).
    """
    rows = []
    for (method, varied, fixed), group in frame.groupby(["method", "varied", "fixed"], sort=True):
        fitted = fit_slope(group["size"].to_numpy(), group["seconds"].to_numpy(), level)
        paper, term = PAPER_EXPONENTS.get((method, varied), (math.nan, ""))
        rows.append({"method": method, "varied": varied, "fixed": fixed, "slope": fitted.slope,
                     "low": fitted.low, "high": fitted.high, "points": fitted.points,
                     "sizes": fitted.sizes, "paper_exponent": paper, "paper_term": term,
                     "within_paper": bool(fitted.low <= paper) if not math.isnan(paper) else None})
    return pd.DataFrame(rows)
