"""Computational complexity: how a method's time grows with |D| (observations) and |Dz| (the size
of Z's support), fitted as log-log slopes, next to the exponents the paper's formulas predict.

The paper (Section 3.2) states, per BO iteration,

* V-UCB: O(n |Dz| (|D|^2 + log |Dz|)), n the number of x evaluated by the inner optimizer;
* rho-KG^apx: O(n_out |D| K |Dz| (|D|^2 + |Dz| |D| + |Dz|^2 + M |Dz|));

and an exact GP fit costs O(|D|^3) per likelihood evaluation, whatever |Dz|. A power law
t = c s^k is a straight line of slope k in log t against log s, so each (method, varied size) is
summarized by the least-squares slope of log10 t on log10 s with a t-based confidence interval
(:func:`fit_slope`). :data:`PAPER_EXPONENTS` holds the exponent each formula predicts once its
leading term dominates; :func:`formula_slope` the slope the whole formula has over the sizes
actually measured (its regime there: rho-KG^apx's exponent in |Dz| is 1 while |D|^2 dominates
|Dz|^2 and 3 beyond). Fixed costs and lower-order terms flatten a measured curve, so below the
leading term's regime the measured slope is expected to be smaller.

The timings come from the timing cells of ``python -m harness.run --grid complexity``
(:mod:`harness.complexity`, read by :func:`harness.results.read_timings`); :func:`timing_points`
turns them into the (method, varied, size, fixed, seconds) frame that :func:`slope_table` fits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
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


#: rho-KG^apx's fantasies K and samples M at BoRisk's settings (they enter its formula).
RHOKG_K = 10
RHOKG_M = 10

#: (method) -> the paper's cost formula as a function of (|D|, |Dz|), constants dropped.
PAPER_FORMULAS: dict[str, Callable[[float, float], float]] = {
    "vucb-prob": lambda d, z: z * (d**2 + math.log(z)),
    "stableopt": lambda d, z: z * (d**2 + math.log(z)),
    "rhokg-apx": lambda d, z: d * RHOKG_K * z * (d**2 + z * d + z**2 + RHOKG_M * z),
    "gp-fit": lambda d, z: d**3,
}

#: Appended to a method's label for its "evaluation" timings (one call of its acquisition function
#: on a fixed batch; the proposal timings carry the bare label).
EVALUATION_SUFFIX = ": one evaluation"

#: Method labels of the continuous-Z V-UCB variants (their Z is |Dz| samples, see
#: :mod:`harness.complexity`); the paper gives them no formula.
LNSO_LABEL = "vucb-prob (continuous Z, LNSO)"
SAA_LABEL = "vucb-prob-saa (continuous Z)"


def method_label(algorithm: str, z_kind: str) -> str:
    """The method name used in the study's tables and figures."""
    if z_kind == "continuous" and algorithm in ("vucb-prob", "vucb-unif"):
        return LNSO_LABEL if algorithm == "vucb-prob" else f"{algorithm} (continuous Z, LNSO)"
    if z_kind == "continuous":
        return SAA_LABEL if algorithm == "vucb-prob-saa" else f"{algorithm} (continuous Z)"
    return algorithm


def formula_slope(method: str, varied: str, fixed: float, sizes: np.ndarray) -> float:
    """The least-squares log-log slope of the paper's formula for ``method`` over ``sizes`` of the
    varied size (``"D"`` or ``"Dz"``) with the other held at ``fixed``: the exponent the formula
    predicts in the regime measured (NaN without a formula)."""
    formula = PAPER_FORMULAS.get(method.removesuffix(EVALUATION_SUFFIX))
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
        if group["size"].nunique() < 2 or len(group) < 3:  # nothing to fit (the study stopped)
            continue
        fitted = fit_slope(group["size"].to_numpy(), group["seconds"].to_numpy(), level)
        paper, term = PAPER_EXPONENTS.get((method.removesuffix(EVALUATION_SUFFIX), varied), (math.nan, ""))
        rows.append({"method": method, "varied": varied, "fixed": fixed,
                     "size_min": group["size"].min(), "size_max": group["size"].max(),
                     "slope": fitted.slope, "low": fitted.low, "high": fitted.high,
                     "points": fitted.points, "sizes": fitted.sizes,
                     "formula_slope": formula_slope(method, varied, fixed, group["size"].to_numpy()),
                     "paper_exponent": paper, "paper_term": term,
                     "within_paper": bool(fitted.low <= paper) if not math.isnan(paper) else None})
    columns = ["method", "varied", "fixed", "size_min", "size_max", "slope", "low", "high", "points",
               "sizes", "formula_slope", "paper_exponent", "paper_term", "within_paper"]
    return pd.DataFrame(rows, columns=columns)


def timing_points(timings: pd.DataFrame, clock: str = "cpu_seconds") -> pd.DataFrame:
    """The timing cells' rows as points of :func:`slope_table`: every timed call twice, once as a
    point of its method's curve against |D| (``fixed`` = |Dz|) and once against |Dz| (``fixed`` =
    |D|). Proposals are labelled by :func:`method_label`, evaluations of the acquisition function by
    that label plus :data:`EVALUATION_SUFFIX`; every fit is ``"gp-fit"`` (the fit does not depend on
    the method).

    Args:
        timings: :func:`harness.results.read_timings` output.
        clock: ``"cpu_seconds"`` (default: process CPU time, robust to other processes on the
            machine) or ``"seconds"`` (wall clock).
    """
    if timings.empty:
        return pd.DataFrame(columns=["method", "varied", "size", "fixed", "seconds", "n_obs", "n_z"])
    labels = [method_label(a, k) if w == "acquisition"
              else method_label(a, k) + EVALUATION_SUFFIX if w == "evaluation" else "gp-fit"
              for a, k, w in zip(timings["algorithm"], timings["z_kind"], timings["what"], strict=True)]
    base = pd.DataFrame({"method": labels, "n_obs": timings["n_obs"].to_numpy(),
                         "n_z": timings["n_z"].to_numpy(), "seconds": timings[clock].to_numpy()})
    by_d = base.assign(varied="D", size=base["n_obs"], fixed=base["n_z"])
    by_z = base.assign(varied="Dz", size=base["n_z"], fixed=base["n_obs"])
    points = pd.concat([by_d, by_z], ignore_index=True)
    return points.loc[points["seconds"] > 0,
                      ["method", "varied", "size", "fixed", "seconds", "n_obs", "n_z"]].reset_index(drop=True)


def median_table(timings: pd.DataFrame, clock: str = "cpu_seconds") -> pd.DataFrame:
    """Median and interquartile range of each (method, |D|, |Dz|) over its repeats."""
    points = timing_points(timings, clock)
    points = points.loc[points["varied"] == "D"]
    grouped = points.groupby(["method", "n_obs", "n_z"])["seconds"]
    table = pd.DataFrame({"median_s": grouped.median(), "q25_s": grouped.quantile(0.25),
                          "q75_s": grouped.quantile(0.75), "repeats": grouped.size()})
    return table.reset_index()
