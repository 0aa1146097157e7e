"""Final-iteration tables by problem and method, one per target: what a publication's results table
shows.

``final_summary`` is the long form (one row per series: its last iteration's mean log10 regret and
70 % band, from :func:`analysis.bands.band_table`, with the series' median seconds per proposal from
:func:`analysis.timing.timing_table`); ``pivot_tables`` lays it out as problems x methods, one
regret table and one timing table per target (``var``, ``cvar``, ``worst_case``). The report writes
the long form to ``final_table.csv`` and shows the pivots; the VaR and CVaR tables of the documentation are
copied from them.
"""

from __future__ import annotations

import pandas as pd

from analysis.data import SERIES_KEYS, options_text
from analysis.timing import series_name

#: rows of a pivot: one per (problem, alpha, T)
ROW_KEYS = ["problem", "alpha", "iterations"]


def final_summary(bands: pd.DataFrame, timing: pd.DataFrame) -> pd.DataFrame:
    """One row per series at its last iteration.

    Args:
        bands: :func:`analysis.bands.band_table`'s rows (any extra columns are kept, e.g. the report's
            ``figure``).
        timing: :func:`analysis.timing.timing_table`'s rows.

    Returns:
        A frame with one row per series, sorted by figure (where ``bands`` has one), target, problem, alpha, T
        and series, columns ``figure`` (where ``bands`` has one), the series keys, ``series`` (the algorithm
        with its non-default options), ``iteration``, ``n_seeds``, ``n_floor``, ``mean``, ``lower``, ``upper``
        (log10 regret), ``acq_s_median`` (NaN where the timing has no such series).
    """
    last = bands.loc[bands.groupby(SERIES_KEYS, dropna=False)["iteration"].idxmax()].copy()
    last["series"] = [series_name(a, o) for a, o in zip(last["algorithm"], last["options"], strict=True)]
    times = timing[[*SERIES_KEYS, "acq_s_median"]]
    last = last.merge(times, on=SERIES_KEYS, how="left")
    extra = ["figure"] if "figure" in bands.columns else []
    columns = [*extra, *SERIES_KEYS, "series", "iteration", "n_seeds", "n_floor", "mean", "lower", "upper",
               "acq_s_median"]
    return last[columns].sort_values([*extra, "target", *ROW_KEYS, "series"]).reset_index(drop=True)


def _regret_text(row: pd.Series) -> str:
    """``-2.07 [-2.40, -1.74]``: the mean and the 70 % band."""
    return f"{row['mean']:.2f} [{row['lower']:.2f}, {row['upper']:.2f}]"


def pivot_tables(summary: pd.DataFrame) -> dict[str, tuple[pd.DataFrame, pd.DataFrame, str]]:
    """The final regrets and the timings of a report's series, per target, as tables to read.

    An algorithm run with one set of options in the target is named alone and the note gives its options; one
    run with several is named with them (``ALGORITHM (gp=borisk)``). A regret cell is the final mean log10
    regret with its 70 % band, ``mean [lower, upper]``; a timing cell the median seconds per proposal
    (iterations >= 1); a missing combination an empty string. The note gives the seeds per cell (and every
    cell whose count differs from the most common) and the seeds at the floor.

    Args:
        summary: the rows of :func:`final_summary`.

    Returns:
        Target -> (regret pivot, timing pivot, note). Both pivots have one row per (problem, alpha, T) of the
        regret pivot, columns ``problem``, ``alpha``, ``T`` and one column per series, sorted by name, every
        cell a string.
    """
    out: dict[str, tuple[pd.DataFrame, pd.DataFrame, str]] = {}
    for target, part in summary.groupby("target", sort=True):
        part = part.reset_index(drop=True)
        # an algorithm run with one set of options in this target is named alone; its options
        # go to the note
        n_options = part.groupby("algorithm")["options"].transform("nunique")
        part["series"] = part["series"].where(n_options > 1, part["algorithm"])
        named = part.loc[(n_options == 1) & (part["options"] != "{}"), ["algorithm", "options"]]
        named = named.drop_duplicates().sort_values("algorithm")
        columns = sorted(part["series"].unique())
        regret = part.assign(text=part.apply(_regret_text, axis=1))
        regret_pivot = (regret.pivot_table(index=ROW_KEYS, columns="series", values="text", aggfunc="first")
                        .reindex(columns=columns).fillna("").reset_index())
        # the regret pivot's rows (only settings some series has), not every product of their keys
        rows = pd.MultiIndex.from_frame(regret_pivot[ROW_KEYS])
        timing_pivot = (part.pivot_table(index=ROW_KEYS, columns="series", values="acq_s_median",
                                         aggfunc="first", dropna=False)
                        .reindex(index=rows, columns=columns).reset_index())
        for column in columns:
            timing_pivot[column] = timing_pivot[column].map(lambda v: "" if pd.isna(v) else f"{v:.3g}")
        regret_pivot, timing_pivot = (pivot.rename(columns={"iterations": "T"}).rename_axis(columns=None)
                                      for pivot in (regret_pivot, timing_pivot))
        common = int(part["n_seeds"].mode().iloc[0])
        odd = part.loc[part["n_seeds"] != common]
        note = f"{common} seeds per cell"
        if not odd.empty:
            note += " except " + "; ".join(f"{r.problem} {r.series}: {r.n_seeds}" for r in odd.itertuples())
        floored = part.loc[part["n_floor"] > 0]
        if not floored.empty:
            note += ". Seeds at the floor at the end: " + "; ".join(
                f"{r.problem} {r.series}: {r.n_floor}" for r in floored.itertuples())
        if not named.empty:
            note += ". Options: " + "; ".join(f"{a}: {options_text(o)}"
                                              for a, o in named.itertuples(index=False))
        out[str(target)] = (regret_pivot, timing_pivot, note + ".")
    return out
