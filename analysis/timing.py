"""Timing comparison: per-iteration acquisition and GP-fit time, and total cell time.

Per-iteration figures use iterations >= 1 (iteration 0 fits the initial design and proposes
nothing). Total cell time is the sum over all rows of ``t_fit_s + t_acq_s + t_rec_s + t_eval_s``:
the work of the BO loop, without process start-up, imports or Ray scheduling.
"""

from __future__ import annotations

import pandas as pd

from analysis.data import CELL_KEYS, SERIES_KEYS, options_text

RHOKG = "rhokg-apx"
RHOKG_ALGORITHMS = ("rhokg-apx", "rhokg-apx-released")
VUCB = ("vucb-unif", "vucb-prob")
_TIMINGS = ["t_fit_s", "t_acq_s", "t_rec_s", "t_eval_s"]


def _quantiles(grouped, column: str, prefix: str) -> pd.DataFrame:
    q = grouped[column].quantile([0.25, 0.5, 0.75]).unstack()
    q.columns = [f"{prefix}_q25", f"{prefix}_median", f"{prefix}_q75"]
    return q


def timing_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per series: median and quartiles of per-iteration ``t_acq_s`` and ``t_fit_s`` (seconds),
    median and quartiles over cells of the total cell time, number of cells."""
    steps = frame.loc[frame["iteration"] >= 1]
    grouped = steps.groupby(SERIES_KEYS, sort=True, dropna=False)
    acq = _quantiles(grouped, "t_acq_s", "acq_s")
    fit = _quantiles(grouped, "t_fit_s", "fit_s")
    totals = (frame[_TIMINGS].fillna(0.0).sum(axis=1).groupby([frame[k] for k in CELL_KEYS], dropna=False)
              .sum().rename("total").reset_index())
    tot_grouped = totals.groupby(SERIES_KEYS, sort=True, dropna=False)
    total = _quantiles(tot_grouped, "total", "total_s")
    total["n_cells"] = tot_grouped.size()
    table = total.join(acq, how="left").join(fit, how="left").reset_index()
    return table[[*SERIES_KEYS, "n_cells", "acq_s_median", "acq_s_q25", "acq_s_q75", "fit_s_median",
                  "fit_s_q25", "fit_s_q75", "total_s_median", "total_s_q25", "total_s_q75"]]


def ratio_table(timing: pd.DataFrame) -> pd.DataFrame:
    """rho-KG^apx / V-UCB ratios of the medians, per problem, alpha, iterations, rho-KG^apx series
    (``rhokg``: rhokg-apx or rhokg-apx-released with its options, any) and V-UCB variant (default
    options; every V-UCB series where a problem has none with default options). Empty when no
    problem has both."""
    keys = ["problem", "alpha", "target", "iterations"]
    kg = timing.loc[timing["algorithm"].isin(RHOKG_ALGORITHMS)]
    vucb = timing.loc[timing["algorithm"].isin(VUCB)]
    has_default = vucb.loc[vucb["options"] == "{}", keys].drop_duplicates().assign(_default=True)
    vucb = vucb.merge(has_default, on=keys, how="left")
    vucb = vucb.loc[(vucb["options"] == "{}") | vucb["_default"].isna()].drop(columns="_default")
    merged = vucb.merge(kg, on=keys, suffixes=("", "_kg"))
    out = merged[keys].copy()
    out["rhokg"] = [series_name(a, o) for a, o in zip(merged["algorithm_kg"], merged["options_kg"],
                                                       strict=True)]
    out["vucb"] = [series_name(a, o) for a, o in zip(merged["algorithm"], merged["options"], strict=True)]
    for prefix in ("acq_s", "fit_s", "total_s"):
        out[f"{prefix.split('_')[0]}_ratio"] = merged[f"{prefix}_median_kg"] / merged[f"{prefix}_median"]
    out["n_cells_vucb"] = merged["n_cells"]
    out["n_cells_kg"] = merged["n_cells_kg"]
    return out.sort_values([*keys, "rhokg", "vucb"]).reset_index(drop=True)


def series_name(algorithm: str, options: str) -> str:
    """``rhokg-apx`` or ``rhokg-apx (gp=borisk, maxiter=100)``."""
    text = options_text(options)
    return f"{algorithm} ({text})" if text else algorithm
