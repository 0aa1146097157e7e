"""The claims table: which of the paper's claims C1-C8 the stored results reproduce.

Every comparison pairs cells by seed: the initial design and the observation noise depend on
(problem, seed) only, so two algorithms' cells of one seed start from the same points. Each claim is
split into sub-claims (one per problem and pair of algorithms); a sub-claim's verdict is

* ``not run``: no paired cells;
* ``reproduced`` / ``not reproduced`` / ``inconclusive`` by the rules below, and ``inconclusive``
  whenever fewer than :data:`MIN_SEEDS` seeds pair (the exact one-sided signed-rank test cannot reach
  p < 0.05 with fewer than 5 pairs).

"A beats B" (C2-C6): paired Wilcoxon signed-rank test on final-iteration log10 regret, one-sided
(A lower). Reproduced if p < :data:`SIGNIFICANCE`; not reproduced if B is significantly lower
(the opposite one-sided test) or A and B are equivalent (the test below); inconclusive otherwise.

"A on par with B" (C1, C6 second half): equivalence within +-:data:`EQUIVALENCE_MARGIN` log10 units
by two one-sided Wilcoxon signed-rank tests (TOST) on the paired differences d = log10 r_A - log10 r_B:
H1- median(d) > -margin and H1+ median(d) < +margin, p = max of the two. Reproduced if p < 0.05; not
reproduced if the two-sided signed-rank test rejects (p < 0.05) and |median(d)| > margin;
inconclusive otherwise. The absence of a significant difference is never read as "on par".

C7: the stored queries (x, z) of V-UCB at alpha below the smallest mass equal StableOpt's at every
iteration, cell by cell (max abs difference <= :data:`QUERY_TOLERANCE`), up to the choice among
exactly tied z: where x_t is far from every observation the kernel underflows, l_{t-1}(x_t, z) is the
prior's for every z and all of them minimize it. StableOpt's argmin is then a set; StableOpt and V-UCB
Unif pick from it with the same shared stream, V-UCB Prob the z of largest mass (its rule), and from
there on the two runs see different data. A cell whose first differing query has the same x and a
tie (V-UCB's ``lv_count`` > 1: at this alpha its lacing values are exactly the minimizers of l) counts
as consistent, and is reported as such. C8: per-cell median
acquisition time (t_acq_s over iterations >= 1), each V-UCB variant run on a problem against
rho-KG^apx there, one-sided signed-rank test on log10 of the medians.

A claim's overall verdict: not reproduced if any sub-claim is; reproduced if all are; not run if all
are not run; inconclusive otherwise (including a mix of reproduced and not run).

Only cells with default options (``options == "{}"``) enter the claims: the paper's configuration.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

SIGNIFICANCE = 0.05
MIN_SEEDS = 5
EQUIVALENCE_MARGIN = 0.5  # log10 units: final regrets within a factor of about 3.16
QUERY_TOLERANCE = 1e-6  # inputs live on [0, 1]

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN = "reproduced", "not reproduced", "inconclusive", "not run"

DISCRETE = ("branin-1-1-discrete", "goldstein-1-1-discrete", "hartmann-1-2-discrete",
            "hartmann-2-1-discrete")
CONTINUOUS = ("branin-1-1-continuous", "goldstein-1-1-continuous", "hartmann-1-2-continuous",
              "hartmann-2-1-continuous")
VUCB = ("vucb-unif", "vucb-prob")
RHOKG = "rhokg-apx"
STABLEOPT = "stableopt"
DEFAULT_OPTIONS = "{}"

CLAIMS = {
    "C1": "discrete Z: V-UCB Unif is on par with rho-KG^apx on Branin-(1,1) and Goldstein-Price-(1,1)",
    "C2": "discrete Z: V-UCB Unif beats rho-KG^apx on Hartmann-(1,2) and Hartmann-(2,1)",
    "C3": "discrete Z: V-UCB Prob beats V-UCB Unif on the synthetic problems",
    "C4": "continuous Z: V-UCB Prob beats rho-KG^apx",
    "C5": "portfolio: V-UCB beats rho-KG^apx",
    "C6": "robot pushing: V-UCB beats rho-KG^apx, and Unif and Prob are close",
    "C7": "alpha -> 0: V-UCB selects the same queries as StableOpt",
    "C8": "V-UCB's per-iteration cost is lower than rho-KG^apx's",
}


@dataclass
class Sub:
    """One sub-claim's row of the claims table."""

    claim: str
    problem: str
    comparison: str  # "A vs B"
    data: str
    statistic: str
    effect: str
    effect_value: float
    p_value: float
    n_seeds: int
    verdict: str
    note: str = ""


#: Above this many nonzero differences the signed-rank p-value uses the normal approximation.
EXACT_MAX_N = 50


def signed_rank_p(d: np.ndarray, alternative: str) -> float:
    """Wilcoxon signed-rank p-value of the paired differences ``d`` (zeros dropped, Wilcoxon's
    convention; ties get midranks).

    ``alternative``: ``"less"`` (d tends to be negative), ``"greater"`` or ``"two-sided"``. Exact for
    up to :data:`EXACT_MAX_N` nonzero differences: the null distribution of W+ (each rank's sign a fair
    coin, given the observed midranks) by dynamic programming over doubled ranks, which are integers.
    Beyond that, the normal approximation with the tie correction. scipy's ``wilcoxon`` gives the same
    p-values without ties but falls back to a Monte-Carlo-sized permutation test with them (seconds
    per call), too slow for a report. 1 when every difference is zero.
    """
    d = np.asarray(d, dtype=float)
    d = d[d != 0]
    n = d.size
    if n == 0:
        return 1.0
    ranks2 = np.rint(2 * stats.rankdata(np.abs(d))).astype(np.int64)  # doubled midranks: integers
    w2 = int(ranks2[d > 0].sum())  # 2 W+
    total = int(ranks2.sum())
    if n <= EXACT_MAX_N:
        counts = np.zeros(total + 1)
        counts[0] = 1.0
        for r in ranks2:  # n steps over arrays of length <= n(n+1) + 1
            counts[r:] = counts[r:] + counts[: total + 1 - r].copy()
        pmf = counts / counts.sum()
        p_le = float(pmf[: w2 + 1].sum())  # P(W+ <= observed)
        p_ge = float(pmf[w2:].sum())
    else:
        mean = total / 4  # in doubled units: E[2W+] = sum(2r) / 2
        var = float((ranks2.astype(float) ** 2).sum()) / 4
        z = (w2 - mean) / np.sqrt(var)
        p_le, p_ge = float(stats.norm.cdf(z)), float(stats.norm.sf(z))
    if alternative == "less":
        return min(p_le, 1.0)
    if alternative == "greater":
        return min(p_ge, 1.0)
    return min(1.0, 2 * min(p_le, p_ge))


def rank_biserial(d: np.ndarray) -> float:
    """Matched-pairs rank-biserial correlation of ``d``: (W+ - W-) / (W+ + W-), zeros dropped;
    -1 when every nonzero difference is negative."""
    d = np.asarray(d, dtype=float)
    d = d[d != 0]
    if d.size == 0:
        return 0.0
    ranks = stats.rankdata(np.abs(d))
    return float((ranks[d > 0].sum() - ranks[d < 0].sum()) / ranks.sum())


def tost_p(d: np.ndarray, margin: float = EQUIVALENCE_MARGIN) -> float:
    """p-value of equivalence |median d| < margin by two one-sided signed-rank tests."""
    d = np.asarray(d, dtype=float)
    if d.size == 0:
        return float("nan")
    return max(signed_rank_p(d + margin, "greater"), signed_rank_p(d - margin, "less"))


def _seeds_text(seeds: Iterable[int]) -> str:
    seeds = sorted(set(int(s) for s in seeds))
    if not seeds:
        return "none"
    if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def _pair(finals: pd.DataFrame, problem: str, a: str, b: str, target: str, value: str
          ) -> tuple[pd.DataFrame, str]:
    """Cells of ``a`` and ``b`` on ``problem`` paired by seed (columns ``<value>_a``, ``<value>_b``,
    ``seed``, ``alpha``, ``iterations``) at the (alpha, iterations) with the most pairs, and a note
    on what is missing."""
    everything = finals.loc[(finals["problem"] == problem) & (finals["target"] == target)]
    sub = everything.loc[everything["options"] == DEFAULT_OPTIONS]
    cells_a = sub.loc[sub["algorithm"] == a, ["alpha", "iterations", "seed", value]]
    cells_b = sub.loc[sub["algorithm"] == b, ["alpha", "iterations", "seed", value]]
    notes = []
    for name, cells in ((a, cells_a), (b, cells_b)):
        if cells.empty:
            other = int((everything["algorithm"] == name).sum())
            notes.append(f"no {name} cells on {problem} (target {target})"
                         + (f" with default options ({other} with other options)" if other else ""))
    merged = cells_a.merge(cells_b, on=["alpha", "iterations", "seed"], suffixes=("_a", "_b"))
    if not merged.empty:
        sizes = merged.groupby(["alpha", "iterations"]).size()
        alpha, iterations = sizes.idxmax()
        merged = merged.loc[(merged["alpha"] == alpha) & (merged["iterations"] == iterations)]
        unpaired = (len(cells_a) + len(cells_b)) - 2 * len(merged)
        if unpaired:
            notes.append(f"{unpaired} cell(s) without a partner seed or at another alpha/T")
    return merged.reset_index(drop=True), "; ".join(notes)


def _data_text(problem: str, a: str, b: str, merged: pd.DataFrame, what: str) -> str:
    if merged.empty:
        return f"{a} vs {b} on {problem}: {what}"
    return (f"{a} vs {b} on {problem} (alpha={merged['alpha'].iloc[0]:.4g}, T={merged['iterations'].iloc[0]},"
            f" seeds {_seeds_text(merged['seed'])}): {what}")


def _not_run(claim: str, problem: str, comparison: str, data: str, statistic: str, note: str) -> Sub:
    return Sub(claim, problem, comparison, data, statistic, "", float("nan"), float("nan"), 0, NOT_RUN, note)


def beats(finals: pd.DataFrame, claim: str, problem: str, a: str, b: str) -> Sub:
    """Sub-claim "``a`` has lower final log10 regret than ``b`` on ``problem``"."""
    merged, note = _pair(finals, problem, a, b, "var", "log10_regret")
    statistic = "Wilcoxon signed-rank, paired by seed, one-sided (A lower)"
    data = _data_text(problem, a, b, merged, "final-iteration log10 regret")
    if merged.empty:
        return _not_run(claim, problem, f"{a} vs {b}", data, statistic, note)
    d = (merged["log10_regret_a"] - merged["log10_regret_b"]).to_numpy()
    p = signed_rank_p(d, "less")
    p_opposite = signed_rank_p(d, "greater")
    p_equivalent = tost_p(d)
    n = len(d)
    if n < MIN_SEEDS:
        verdict = INCONCLUSIVE
        note = "; ".join(filter(None, [note, f"fewer than {MIN_SEEDS} paired seeds"]))
    elif p < SIGNIFICANCE:
        verdict = REPRODUCED
    elif p_opposite < SIGNIFICANCE:
        verdict = NOT_REPRODUCED
        note = "; ".join(filter(None, [note, f"B significantly lower (p={p_opposite:.3g})"]))
    elif p_equivalent < SIGNIFICANCE:
        verdict = NOT_REPRODUCED
        equivalent = f"equivalent within +-{EQUIVALENCE_MARGIN} (TOST p={p_equivalent:.3g})"
        note = "; ".join(filter(None, [note, equivalent]))
    else:
        verdict = INCONCLUSIVE
    median = float(np.median(d))
    effect = f"median d(log10 A - log10 B) = {median:+.3f}; rank-biserial r = {rank_biserial(d):+.2f}"
    return Sub(claim, problem, f"{a} vs {b}", data, statistic, effect, median, p, n, verdict, note)


def on_par(finals: pd.DataFrame, claim: str, problem: str, a: str, b: str) -> Sub:
    """Sub-claim "``a`` and ``b`` reach final log10 regrets within +-margin of each other"."""
    merged, note = _pair(finals, problem, a, b, "var", "log10_regret")
    statistic = f"TOST by two one-sided Wilcoxon signed-rank tests, margin +-{EQUIVALENCE_MARGIN} log10"
    data = _data_text(problem, a, b, merged, "final-iteration log10 regret")
    if merged.empty:
        return _not_run(claim, problem, f"{a} vs {b}", data, statistic, note)
    d = (merged["log10_regret_a"] - merged["log10_regret_b"]).to_numpy()
    p = tost_p(d)
    p_diff = signed_rank_p(d, "two-sided")
    n = len(d)
    median = float(np.median(d))
    if n < MIN_SEEDS:
        verdict = INCONCLUSIVE
        note = "; ".join(filter(None, [note, f"fewer than {MIN_SEEDS} paired seeds"]))
    elif p < SIGNIFICANCE:
        verdict = REPRODUCED
    elif p_diff < SIGNIFICANCE and abs(median) > EQUIVALENCE_MARGIN:
        verdict = NOT_REPRODUCED
        note = "; ".join(filter(None, [note, f"significantly different (two-sided p={p_diff:.3g})"]))
    else:
        verdict = INCONCLUSIVE
    effect = f"median d(log10 A - log10 B) = {median:+.3f}; rank-biserial r = {rank_biserial(d):+.2f}"
    return Sub(claim, problem, f"{a} vs {b}", data, statistic, effect, median, p, n, verdict, note)


def cheaper(frame: pd.DataFrame, claim: str, problem: str, a: str, b: str) -> Sub:
    """Sub-claim "``a``'s median per-iteration acquisition time is lower than ``b``'s"."""
    rows = frame.loc[(frame["iteration"] >= 1) & (frame["problem"] == problem)
                     & (frame["algorithm"].isin([a, b]))]
    per_cell = (rows.groupby(["problem", "target", "options", "algorithm", "alpha", "iterations", "seed"],
                             dropna=False)["t_acq_s"].median().rename("t_acq_median").reset_index())
    merged, note = _pair(per_cell, problem, a, b, "var", "t_acq_median")
    statistic = "Wilcoxon signed-rank on log10 per-cell median t_acq_s, paired by seed, one-sided (A lower)"
    data = _data_text(problem, a, b, merged, "per-iteration acquisition time")
    if merged.empty:
        return _not_run(claim, problem, f"{a} vs {b}", data, statistic, note)
    ta, tb = merged["t_acq_median_a"].to_numpy(float), merged["t_acq_median_b"].to_numpy(float)
    d = np.log10(ta) - np.log10(tb)
    p = signed_rank_p(d, "less")
    n = len(d)
    ratio = float(np.median(tb / ta))
    if n < MIN_SEEDS:
        verdict = INCONCLUSIVE
        note = "; ".join(filter(None, [note, f"fewer than {MIN_SEEDS} paired seeds"]))
    elif p < SIGNIFICANCE:
        verdict = REPRODUCED
    elif signed_rank_p(d, "greater") < SIGNIFICANCE:
        verdict = NOT_REPRODUCED
    else:
        verdict = INCONCLUSIVE
    effect = f"median time ratio B / A = {ratio:.3g}"
    return Sub(claim, problem, f"{a} vs {b}", data, statistic, effect, ratio, p, n, verdict, note)


def same_queries(frame: pd.DataFrame, claim: str, problem: str, vucb: str) -> Sub:
    """Sub-claim "``vucb`` at alpha below the smallest mass queries exactly StableOpt's (x, z)",
    exact ties of l aside (see the module docstring).

    V-UCB cells with target ``worst_case`` are those at alpha below the smallest mass (harness.cell);
    each is paired with the StableOpt cell of the same (alpha, iterations, seed).
    """
    statistic = ("cells whose (x, z) match StableOpt's at every iteration "
                 f"(max abs diff <= {QUERY_TOLERANCE:g}), or until a choice among exactly tied z")
    keys = ["alpha", "iterations", "seed", "iteration"]
    base = frame.loc[(frame["problem"] == problem) & (frame["iteration"] >= 1)
                     & (frame["target"] == "worst_case") & (frame["options"] == DEFAULT_OPTIONS)]
    a = base.loc[base["algorithm"] == vucb, [*keys, "x", "z", "lv_count"]]
    b = base.loc[base["algorithm"] == STABLEOPT, [*keys, "x", "z"]]
    notes = [f"no {name} cells on {problem} at alpha below the smallest mass"
             for name, cells in ((vucb, a), (STABLEOPT, b)) if cells.empty]
    merged = a.merge(b, on=keys, suffixes=("_a", "_b"))
    if merged.empty:
        data = f"{vucb} vs {STABLEOPT} on {problem}: queries x, z"
        return _not_run(claim, problem, f"{vucb} vs {STABLEOPT}", data, statistic, "; ".join(notes))
    xa, xb = (np.stack(merged[c].to_numpy()) for c in ("x_a", "x_b"))
    za, zb = (np.stack(merged[c].to_numpy()) for c in ("z_a", "z_b"))
    merged["x_match"] = np.max(np.abs(xa - xb), axis=1) <= QUERY_TOLERANCE
    merged["match"] = merged["x_match"] & (np.max(np.abs(za - zb), axis=1) <= QUERY_TOLERANCE)
    per_cell = merged.groupby(["alpha", "iterations", "seed"])["match"].agg(["all", "mean"])
    n = len(per_cell)
    n_all = int(per_cell["all"].sum())
    fraction = float(merged["match"].mean())
    # each mismatched cell's first differing iteration: a tie there (same x, several minimizers)
    first = (merged.loc[~merged["match"]].sort_values("iteration")
             .groupby(["alpha", "iterations", "seed"]).head(1).sort_values("seed"))
    at_tie = first["x_match"] & (first["lv_count"].fillna(1) > 1)
    n_tie = int(at_tie.sum())
    if not first.empty:
        notes.append("first differing iteration by seed: " + ", ".join(
            f"seed{s}: t={t}" + (f" (a tie of {int(c)} z)" if tie else "")
            for s, t, c, tie in zip(first["seed"], first["iteration"], first["lv_count"].fillna(1), at_tie,
                                    strict=True)))
    alphas = ", ".join(f"{v:.4g}" for v in sorted(merged["alpha"].unique()))
    seeds = _seeds_text(per_cell.index.get_level_values("seed"))
    data = (f"{vucb} vs {STABLEOPT} on {problem} (alpha={alphas}, seeds {seeds}):"
            f" queries x, z at {len(merged)} iterations")
    if n_all + n_tie < n:
        verdict = NOT_REPRODUCED
    elif n < MIN_SEEDS:
        verdict = INCONCLUSIVE
        notes.append(f"fewer than {MIN_SEEDS} paired seeds")
    else:
        verdict = REPRODUCED
    effect = f"{n_all}/{n} cells identical"
    if n_tie:
        effect += f", {n_tie} identical until a choice among tied z"
    effect += f"; {fraction:.1%} of iterations identical"
    return Sub(claim, problem, f"{vucb} vs {STABLEOPT}", data, statistic, effect, fraction, float("nan"), n,
               verdict, "; ".join(notes))


def claims_table(frame: pd.DataFrame, finals: pd.DataFrame) -> pd.DataFrame:
    """Every sub-claim of C1-C8 as one row (see the module docstring for the rules).

    ``frame``: all rows with ``log10_regret``; ``finals``: the final row of each cell.
    """
    subs: list[Sub] = []
    subs += [on_par(finals, "C1", p, "vucb-unif", RHOKG) for p in DISCRETE[:2]]
    subs += [beats(finals, "C2", p, "vucb-unif", RHOKG) for p in DISCRETE[2:]]
    subs += [beats(finals, "C3", p, "vucb-prob", "vucb-unif") for p in DISCRETE]
    subs += [beats(finals, "C4", p, "vucb-prob", RHOKG) for p in CONTINUOUS]
    subs += [beats(finals, "C5", "portfolio-3-2", "vucb-prob", RHOKG)]
    subs += [beats(finals, "C6", "robot-push-3-2", v, RHOKG) for v in VUCB]
    subs += [on_par(finals, "C6", "robot-push-3-2", "vucb-unif", "vucb-prob")]
    subs += [same_queries(frame, "C7", p, v) for p in DISCRETE for v in VUCB]
    c8_problems = sorted(set(frame.loc[frame["algorithm"] == RHOKG, "problem"]))
    for p in c8_problems:  # the V-UCB variants run there (the paper has no Unif on a continuous Z)
        ran = [v for v in VUCB if ((frame["problem"] == p) & (frame["algorithm"] == v)).any()]
        subs += [cheaper(frame, "C8", p, v, RHOKG) for v in ran or ["vucb-prob"]]
    if not c8_problems:
        subs.append(_not_run("C8", "(every problem)", f"vucb-* vs {RHOKG}",
                             "V-UCB vs rho-KG^apx: per-iteration acquisition time",
                             "Wilcoxon signed-rank on log10 per-cell median t_acq_s", f"no {RHOKG} cells"))
    return pd.DataFrame([vars(s) for s in subs])


def overall(table: pd.DataFrame) -> pd.DataFrame:
    """One row per claim: its statement, overall verdict and counts of sub-claim verdicts."""
    rows = []
    for claim, statement in CLAIMS.items():
        verdicts = table.loc[table["claim"] == claim, "verdict"].tolist()
        if NOT_REPRODUCED in verdicts:
            verdict = NOT_REPRODUCED
        elif verdicts and all(v == REPRODUCED for v in verdicts):
            verdict = REPRODUCED
        elif all(v == NOT_RUN for v in verdicts):
            verdict = NOT_RUN
        else:
            verdict = INCONCLUSIVE
        counts = ", ".join(f"{verdicts.count(v)} {v}"
                           for v in (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN) if verdicts.count(v))
        rows.append({"claim": claim, "statement": statement, "verdict": verdict, "sub-claims": counts})
    return pd.DataFrame(rows)
