"""Timing comparison: per-iteration acquisition and GP-fit time, and total cell time.

Per-iteration figures use iterations >= 1 (iteration 0 fits the initial design and proposes
nothing). Total cell time is the sum over all rows of ``t_fit_s + t_acq_s + t_rec_s + t_eval_s``:
the work of the BO loop, without process start-up, imports or Ray scheduling. The ratios compare the
pairs a study's "cheaper" claims name (:class:`harness.study.Cheaper`).
"""

from __future__ import annotations

import pandas as pd

from analysis.data import CELL_KEYS, SERIES_KEYS, options_text
from harness.schema import TIMINGS
from harness.study import NO_STUDY, Cheaper, Study


def _quantiles(grouped, column: str, prefix: str) -> pd.DataFrame:
    q = grouped[column].quantile([0.25, 0.5, 0.75]).unstack()
    q.columns = [f"{prefix}_q25", f"{prefix}_median", f"{prefix}_q75"]
    return q


def timing_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The seconds of each series: per iteration, for the acquisition and the GP fit, and per cell in total.

    Args:
        frame: the BO rows of the report (:func:`analysis.report.read_frame`).

    Returns:
        A frame with one row per series, columns the series keys (:data:`analysis.data.SERIES_KEYS`),
        ``n_cells``, median and quartiles of per-iteration ``t_acq_s`` (``acq_s_median``, ``acq_s_q25``,
        ``acq_s_q75``) and ``t_fit_s`` (``fit_s_...``) over the rows of iterations >= 1, and median and
        quartiles over cells of the total cell time (``total_s_...``), all in seconds.
    """
    steps = frame.loc[frame["iteration"] >= 1]
    grouped = steps.groupby(SERIES_KEYS, sort=True, dropna=False)
    acq = _quantiles(grouped, "t_acq_s", "acq_s")
    fit = _quantiles(grouped, "t_fit_s", "fit_s")
    per_row = frame[list(TIMINGS)].fillna(0.0).sum(axis=1)
    totals = per_row.groupby([frame[k] for k in CELL_KEYS], dropna=False).sum().rename("total").reset_index()
    tot_grouped = totals.groupby(SERIES_KEYS, sort=True, dropna=False)
    total = _quantiles(tot_grouped, "total", "total_s")
    total["n_cells"] = tot_grouped.size()
    table = total.join(acq, how="left").join(fit, how="left").reset_index()
    return table[[*SERIES_KEYS, "n_cells", "acq_s_median", "acq_s_q25", "acq_s_q75", "fit_s_median",
                  "fit_s_q25", "fit_s_q75", "total_s_median", "total_s_q25", "total_s_q75"]]


#: The ratio table's keys and columns: the costlier and the cheaper series of a pair, the ratios of
#: their medians and their numbers of cells.
_RATIO_KEYS = ["problem", "alpha", "target", "iterations"]
RATIO_COLUMNS = [*_RATIO_KEYS, "costlier", "cheaper", "acq_ratio", "fit_ratio", "total_ratio",
                 "n_cells_cheaper", "n_cells_costlier"]


def cost_pairs(study: Study) -> list[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]:
    """The sides of every "cheaper" comparison of the study's claims (:class:`harness.study.Cheaper`).

    Each side comes with the algorithms that stand in for its own as variants (``study.aliases``), without
    repeats.

    Args:
        study: the study whose claims are read.

    Returns:
        (problems, cheaper algorithms, costlier algorithms) of each comparison, in the claims' order, each
        triple once; no problems means every problem.
    """

    def with_variants(names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v for name in names for v in (
            name, *(alias for alias, target in study.aliases.items() if target == name))))

    pairs: list[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = []
    for comparison in (c for claim in study.claims for c in claim.comparisons):
        if isinstance(comparison, Cheaper):
            pair = (tuple(comparison.problems), with_variants(comparison.a), with_variants((comparison.b,)))
            if pair not in pairs:
                pairs.append(pair)
    return pairs


def ratio_table(timing: pd.DataFrame, study: Study = NO_STUDY) -> pd.DataFrame:
    """Costlier / cheaper ratios of the medians of :func:`timing_table`, for every pair of the study's
    "cheaper" claims (:func:`cost_pairs`).

    The costlier series (``costlier``) may have any options; the cheaper one (``cheaper``) has the default
    options, or is every series of the cheaper algorithms where a problem has none with default options.

    Args:
        timing: the rows of :func:`timing_table`.
        study: the study whose claims are read.

    Returns:
        A frame with one row per (problem, alpha, target, iterations, costlier series, cheaper series), sorted
        so, columns :data:`RATIO_COLUMNS` (the ratios of the acquisition, fit and total medians, and both
        series' numbers of cells); empty, with those columns, when no problem has both or the study claims
        nothing cheaper.
    """
    frames = [_pair_ratios(timing, *pair) for pair in cost_pairs(study)]
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=RATIO_COLUMNS)
    out = pd.concat(frames, ignore_index=True).drop_duplicates([*_RATIO_KEYS, "costlier", "cheaper"])
    return out.sort_values([*_RATIO_KEYS, "costlier", "cheaper"]).reset_index(drop=True)


def _pair_ratios(timing: pd.DataFrame, problems: tuple[str, ...], cheaper: tuple[str, ...],
                 costlier: tuple[str, ...]) -> pd.DataFrame:
    """The rows of :func:`ratio_table` of one pair (``problems`` empty: every problem)."""
    keys = _RATIO_KEYS
    if problems:
        timing = timing.loc[timing["problem"].isin(problems)]
    dear = timing.loc[timing["algorithm"].isin(costlier)]
    cheap = timing.loc[timing["algorithm"].isin(cheaper)]
    has_default = cheap.loc[cheap["options"] == "{}", keys].drop_duplicates().assign(_default=True)
    cheap = cheap.merge(has_default, on=keys, how="left")
    cheap = cheap.loc[(cheap["options"] == "{}") | cheap["_default"].isna()].drop(columns="_default")
    merged = cheap.merge(dear, on=keys, suffixes=("", "_dear"))
    out = merged[keys].copy()
    out["costlier"] = [series_name(a, o) for a, o in zip(merged["algorithm_dear"], merged["options_dear"],
                                                          strict=True)]
    out["cheaper"] = [series_name(a, o) for a, o in zip(merged["algorithm"], merged["options"], strict=True)]
    for prefix in ("acq_s", "fit_s", "total_s"):
        out[f"{prefix.split('_')[0]}_ratio"] = merged[f"{prefix}_median_dear"] / merged[f"{prefix}_median"]
    out["n_cells_cheaper"] = merged["n_cells"]
    out["n_cells_costlier"] = merged["n_cells_dear"]
    return out[RATIO_COLUMNS]


def series_name(algorithm: str, options: str) -> str:
    """The name of a series in the report's tables.

    Args:
        algorithm: the series' algorithm.
        options: the JSON of its ``options`` column.

    Returns:
        ``ALGORITHM``, or ``ALGORITHM (gp=borisk, maxiter=100)`` with non-default options.
    """
    text = options_text(options)
    return f"{algorithm} ({text})" if text else algorithm
