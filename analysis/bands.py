"""The 70 % two-sided confidence band of the mean log10 regret over seeds, per series and iteration.

band = mean +- t_{0.85, n-1} * sd / sqrt(n), sd with n - 1 degrees of freedom (docs/conventions.md section 8;
not seaborn's bootstrap, which is random, slow and under-covers at 5 to 10 seeds). With one seed the
band is undefined (NaN) and only the mean is drawn.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from analysis.data import SERIES_KEYS

#: Two-sided coverage of the band (the 70 % the studies use).
BAND_LEVEL = 0.70


def t_quantile(n: np.ndarray | pd.Series, level: float = BAND_LEVEL) -> np.ndarray:
    """The critical value of the band, t_{(1 + level) / 2, n - 1}.

    Args:
        n: the numbers of seeds.
        level: the band's two-sided coverage.

    Returns:
        An array of the shape of ``n``, NaN where n < 2.
    """
    n = np.asarray(n, dtype=float)
    dof = np.where(n >= 2, n - 1, np.nan)
    return stats.t.ppf(0.5 + level / 2, dof)


def band_table(frame: pd.DataFrame, level: float = BAND_LEVEL, value: str = "log10_regret"
               ) -> pd.DataFrame:
    """The confidence band of ``value``'s mean over seeds, per series and iteration (module docstring).

    Args:
        frame: rows with the series keys (:data:`analysis.data.SERIES_KEYS`), ``iteration`` and ``value``, and
            optionally ``at_floor``.
        level: the band's two-sided coverage.
        value: the column the band is of, by default ``log10_regret`` (with ``at_floor``); e.g. ``var_rec``
            for the true VaR of the recommendations.

    Returns:
        A frame with one row per (series, iteration), columns the series keys, ``iteration``, ``n_seeds``,
        ``n_floor`` (seeds at the floor; 0 without ``at_floor``), ``mean``, ``sd``, ``se``, ``t_crit``,
        ``half_width``, ``lower``, ``upper`` (in the units of ``value``; the band NaN with one seed).
    """
    frame = frame if "at_floor" in frame else frame.assign(at_floor=False)
    grouped = frame.groupby([*SERIES_KEYS, "iteration"], sort=True, dropna=False)
    table = grouped.agg(n_seeds=(value, "count"), n_floor=("at_floor", "sum"),
                        mean=(value, "mean"), sd=(value, "std")).reset_index()
    table["n_floor"] = table["n_floor"].astype("int64")
    n = table["n_seeds"].to_numpy(dtype=float)
    table["se"] = table["sd"] / np.sqrt(n)
    table["t_crit"] = t_quantile(n, level)
    table["half_width"] = table["t_crit"] * table["se"]
    table["lower"] = table["mean"] - table["half_width"]
    table["upper"] = table["mean"] + table["half_width"]
    return table
