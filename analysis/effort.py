"""What a study's reduced effort changes: for each algorithm a study runs at its
declared reduced effort (:attr:`harness.study.Study.reduced_effort`) and also, on a sample of
cells, at its full effort, the paired comparison of the two on each problem: the cells of one seed
start from the same initial design and noise, so the paired difference of final log10 regret
(full - reduced) measures the reduction alone. Tested as the claims are (:mod:`analysis.claims`):
a two-sided Wilcoxon signed-rank test of "no difference", and equivalence within the claims'
margin by TOST; with the median ratio of seconds per iteration (full / reduced)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.across import iteration_seconds
from analysis.data import CELL_KEYS
from analysis.signed_rank import signed_rank_p, tost_p
from analysis.subclaims import EQUIVALENCE_MARGIN

FULL = '{"effort": "full"}'
COLUMNS = ["problem", "target", "algorithm", "n_seeds", "seeds", "median_d", "p_difference", "p_equivalent",
           "time_ratio", "note"]


def effort_table(frame: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """The effect of a study's reduced effort: the cells at both efforts, paired by seed.

    Args:
        frame: the rows of :func:`analysis.data.load_results`, for the seconds per iteration
            (:func:`analysis.across.iteration_seconds`).
        cells: the cells of :func:`analysis.claim_cells.cell_values` with the study's reduced effort (the
            default settings are the reduced effort, ``effort=full`` the full one).

    Returns:
        A frame with one row per (problem, alpha, target, T, algorithm) with cells at both efforts, columns
        ``problem``, ``target``, ``algorithm``, ``n_seeds`` paired, ``seeds`` (comma-separated), ``median_d``
        (final log10 regret, full - reduced: negative when the full effort ends lower), ``p_difference``
        (two-sided signed-rank), ``p_equivalent`` (TOST within +-margin), ``time_ratio`` (median over seeds of
        full / reduced seconds per iteration) and ``note`` (what so few seeds cannot decide, ``""`` from 6
        seeds).
    """
    cells = cells.merge(iteration_seconds(frame), on=CELL_KEYS, how="left")
    keys = ["problem", "alpha", "target", "iterations", "arm"]
    rows = []
    for key, group in cells.groupby(keys, sort=True):
        reduced = group.loc[group["settings"] == "{}"].set_index("seed")
        full = group.loc[group["settings"] == FULL].set_index("seed")
        seeds = sorted(set(reduced.index) & set(full.index))
        if not seeds:
            continue
        d = (full.loc[seeds, "final"] - reduced.loc[seeds, "final"]).to_numpy(float)
        ratio = (full.loc[seeds, "seconds"] / reduced.loc[seeds, "seconds"]).to_numpy(float)
        rows.append({"problem": key[0], "target": key[2], "algorithm": key[4], "n_seeds": len(seeds),
                     "seeds": ",".join(map(str, seeds)), "median_d": float(np.median(d)),
                     "p_difference": signed_rank_p(d, "two-sided"),
                     "p_equivalent": tost_p(d, EQUIVALENCE_MARGIN),
                     "time_ratio": float(np.median(ratio)),
                     "note": _note(len(seeds))})
    return pd.DataFrame(rows, columns=COLUMNS)


def _note(n: int) -> str:
    """What ``n`` paired seeds can decide at 0.05: the smallest exact signed-rank p is 2^-n one-sided
    (TOST's), twice that two-sided, so equivalence needs 5 seeds and a difference 6."""
    if n >= 6:
        return ""
    if n == 5:
        return "5 paired seeds: equivalence can be decided, a difference cannot (6 needed)"
    return "fewer than 5 paired seeds: no test can decide"
