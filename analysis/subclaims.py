"""The sub-claims of the claims table (:mod:`analysis.claims`, whose docstring gives the rules): one
problem and one pair of algorithms, tested on cells paired by seed under every variant
(:func:`analysis.claim_cells.variants`) and statistic. Each is a :class:`Sub` row: "A beats B"
(:func:`beats`), "A on par with B" (:func:`on_par`), "A is cheaper than B" (:func:`cheaper`), "A
queries what B queries" (:func:`same_queries`), with the thresholds they are decided by and the
verdicts they take.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.claim_cells import DEFAULT_OPTIONS, DEFAULT_VARIANT, STATISTICS, seeds_text, variants
from analysis.signed_rank import rank_biserial, signed_rank_p, tost_p
from problems.measures import DEFAULT_RISK, RISK_MEASURES, WORST_CASE

SIGNIFICANCE = 0.05
MIN_SEEDS = 5
EQUIVALENCE_MARGIN = 0.5  # log10 units: final regrets within a factor of about 3.16
QUERY_TOLERANCE = 1e-6  # inputs live on [0, 1]

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN = "reproduced", "not reproduced", "inconclusive", "not run"


@dataclass
class Sub:
    """One row of the claims table: a sub-claim under one variant, by one statistic.

    ``p_value`` is the raw p of the sub-claim's own test, ``p_against`` that of the evidence against it
    (``against`` says which: B significantly lower, equivalence, apart beyond the margin); ``p_holm``
    and ``p_against_holm`` are Holm-adjusted within the claim's family (same claim, variant and
    statistic; ``family`` sub-claims). ``verdict`` is decided on the adjusted values,
    ``verdict_unadjusted`` on the raw ones. ``effect_mean`` and ``effect_sd``: mean and sd of the paired
    differences; ``power_10`` and ``seeds_80``: see :mod:`analysis.power`.
    """

    claim: str
    problem: str
    comparison: str  # "A vs B"
    statistic: str  # "final", "last10", "time" or "queries"
    variant: str  # "default" or the non-default settings of the two sides
    verdict: str
    n_seeds: int
    p_value: float
    effect: str
    effect_value: float
    test: str
    data: str
    note: str = ""
    kind: str = ""  # "beats", "on_par", "cheaper" or "queries"
    p_against: float = float("nan")
    against: str = ""
    p_holm: float = float("nan")
    p_against_holm: float = float("nan")
    family: int = 0
    verdict_unadjusted: str = ""
    effect_mean: float = float("nan")
    effect_sd: float = float("nan")
    power_10: float = float("nan")
    seeds_80: float = float("nan")


def _data_text(problem: str, a: str, b: str, merged: pd.DataFrame, what: str,
               target: str = DEFAULT_RISK) -> str:
    if target != DEFAULT_RISK:  # the default target goes unnamed; another is named (its own rows)
        what = f"{what} of {RISK_MEASURES[target].label}" if target in RISK_MEASURES else f"{what} ({target})"
    if merged.empty:
        return f"{a} vs {b} on {problem}: {what}"
    return (f"{a} vs {b} on {problem} (alpha={merged['alpha'].iloc[0]:.4g}, T={merged['iterations'].iloc[0]},"
            f" seeds {seeds_text(merged['seed'])}): {what}")


def _effect(d: np.ndarray) -> tuple[str, float]:
    median = float(np.median(d))
    return f"median d(log10 A - log10 B) = {median:+.3f}; rank-biserial r = {rank_biserial(d):+.2f}", median


def _beats_tests(d: np.ndarray) -> tuple[float, float, str]:
    """p of "A lower than B" on the paired differences ``d``, and the p of the evidence against it:
    B significantly lower, or the two equivalent within the margin (the smaller, and which)."""
    p_opposite, p_equivalent = signed_rank_p(d, "greater"), tost_p(d, EQUIVALENCE_MARGIN)
    if p_opposite <= p_equivalent:
        return signed_rank_p(d, "less"), p_opposite, "B significantly lower"
    return signed_rank_p(d, "less"), p_equivalent, f"equivalent within +-{EQUIVALENCE_MARGIN} (TOST)"


def non_equivalence_p(d: np.ndarray, margin: float = EQUIVALENCE_MARGIN) -> float:
    """p-value of "the median difference lies outside +-margin".

    It is the smaller of the one-sided signed-rank tests of d - margin > 0 and d + margin < 0, times 2
    (Bonferroni over the two directions).

    Args:
        d: the paired differences.
        margin: the equivalence margin (log10 units).

    Returns:
        The p-value, at most 1; 1 for no data.
    """
    d = np.asarray(d, dtype=float)
    if d.size == 0:
        return 1.0
    return min(1.0, 2 * min(signed_rank_p(d - margin, "greater"), signed_rank_p(d + margin, "less")))


def _on_par_tests(d: np.ndarray) -> tuple[float, float, str]:
    """p of "A on par with B" (TOST) on ``d``, and of the evidence against it (non-equivalence)."""
    apart = "apart by more than the margin (non-equivalence)"
    return tost_p(d, EQUIVALENCE_MARGIN), non_equivalence_p(d), apart


def decide(n: int, p: float, p_against: float, against: str, level: float = SIGNIFICANCE
           ) -> tuple[str, str]:
    """Verdict and note of a tested sub-claim from its p-values (raw or adjusted).

    It is inconclusive below :data:`MIN_SEEDS` seeds; reproduced if p < level; not reproduced if the evidence
    against it is (p_against < level); inconclusive otherwise.

    Args:
        n: the number of paired seeds.
        p: the p-value of the sub-claim's own test.
        p_against: the p-value of the evidence against it.
        against: what that evidence is, named in the note.
        level: the significance level.

    Returns:
        (verdict, note), the note ``""`` except below :data:`MIN_SEEDS` seeds (it says so) and for not
        reproduced (the evidence against, with its p).
    """
    if n < MIN_SEEDS:
        return INCONCLUSIVE, f"fewer than {MIN_SEEDS} paired seeds"
    if p < level:
        return REPRODUCED, ""
    if p_against < level:
        return NOT_REPRODUCED, f"{against} (p={p_against:.3g})"
    return INCONCLUSIVE, ""


def _regret_subs(cells: pd.DataFrame, claim: str, problem: str, a: str, b: str, kind: str,
                 named: dict[str, dict] | None = None, target: str = DEFAULT_RISK) -> list[Sub]:
    """The rows of a regret sub-claim (``kind`` "beats" or "on_par"): every variant x statistic.
    Verdicts here are the unadjusted ones; :func:`adjust` decides them within the claim."""
    if kind == "beats":
        test, tests = "Wilcoxon signed-rank, paired by seed, one-sided (A lower)", _beats_tests
    else:
        test = (f"TOST by two one-sided Wilcoxon signed-rank tests, margin +-{EQUIVALENCE_MARGIN} log10; "
                "not reproduced on non-equivalence at the margin")
        tests = _on_par_tests
    rows = []
    for variant, merged, pair_note in variants(cells, problem, a, b, target, named):
        for statistic, what in STATISTICS.items():
            data = _data_text(problem, a, b, merged, what, target)
            if merged.empty:
                rows.append(Sub(claim, problem, f"{a} vs {b}", statistic, variant, NOT_RUN, 0, float("nan"),
                                "", float("nan"), test, data, pair_note, kind))
                continue
            d = (merged[f"{statistic}_a"] - merged[f"{statistic}_b"]).to_numpy(float)
            rows.append(_tested(claim, problem, f"{a} vs {b}", statistic, variant, d, tests, kind, test,
                                data, pair_note, *_effect(d)))
    return rows


def _tested(claim: str, problem: str, comparison: str, statistic: str, variant: str, d: np.ndarray,
            tests, kind: str, test: str, data: str, pair_note: str, effect: str, value: float) -> Sub:
    """A sub-claim tested on its paired differences ``d``, with its unadjusted verdict (the note of the
    verdict comes with the adjusted one, :func:`adjust`)."""
    p, p_against, against = tests(d)
    verdict = decide(len(d), p, p_against, against)[0]
    sd = float(np.std(d, ddof=1)) if len(d) > 1 else float("nan")
    return Sub(claim, problem, comparison, statistic, variant, verdict, len(d), p, effect, value, test, data,
               pair_note, kind, p_against, against, verdict_unadjusted=verdict,
               effect_mean=float(np.mean(d)), effect_sd=sd)


def beats(cells: pd.DataFrame, claim: str, problem: str, a: str, b: str,
          named: dict[str, dict] | None = None, target: str = DEFAULT_RISK) -> list[Sub]:
    """Sub-claim "``a`` has lower log10 regret than ``b`` on ``problem``" (the regret of the risk measure
    ``target``), every variant and statistic.

    Args:
        cells: the cells of :func:`analysis.claim_cells.cell_values`.
        claim: the claim's id.
        problem: the problem the sides pair on.
        a: side A's algorithm, as the claims know it.
        b: side B's.
        named: the study's named option sets (:func:`analysis.claim_cells.variant_label`).
        target: the risk measure.

    Returns:
        One :class:`Sub` per (variant, statistic) of :func:`analysis.claim_cells.variants` and
        :data:`analysis.claim_cells.STATISTICS`, the default variant first, with its unadjusted verdict
        (``not run`` for a variant without pairs).
    """
    return _regret_subs(cells, claim, problem, a, b, "beats", named, target)


def on_par(cells: pd.DataFrame, claim: str, problem: str, a: str, b: str,
           named: dict[str, dict] | None = None, target: str = DEFAULT_RISK) -> list[Sub]:
    """Sub-claim "``a`` and ``b`` reach log10 regrets within +-margin of each other", every variant.

    Every statistic is tested under each variant.

    Args:
        cells: the cells of :func:`analysis.claim_cells.cell_values`.
        claim: the claim's id.
        problem: the problem the sides pair on.
        a: side A's algorithm, as the claims know it.
        b: side B's.
        named: the study's named option sets (:func:`analysis.claim_cells.variant_label`).
        target: the risk measure.

    Returns:
        One :class:`Sub` per (variant, statistic), as :func:`beats` gives them, tested by TOST.
    """
    return _regret_subs(cells, claim, problem, a, b, "on_par", named, target)


def cheaper(cells: pd.DataFrame, claim: str, problem: str, a: str, b: str,
            named: dict[str, dict] | None = None, target: str = DEFAULT_RISK) -> list[Sub]:
    """Sub-claim "``a``'s median per-iteration acquisition time is lower than ``b``'s", every variant.

    Args:
        cells: the cells of :func:`analysis.claim_cells.cell_values`.
        claim: the claim's id.
        problem: the problem the sides pair on.
        a: side A's algorithm, as the claims know it.
        b: side B's.
        named: the study's named option sets (:func:`analysis.claim_cells.variant_label`).
        target: the risk measure.

    Returns:
        One :class:`Sub` per variant of :func:`analysis.claim_cells.variants` (statistic ``time``), the
        default first, tested on log10 of the cells' median times, with the median time ratio B / A as its
        effect; ``not run`` for a variant without pairs.
    """
    test = "Wilcoxon signed-rank on log10 per-cell median t_acq_s, paired by seed, one-sided (A lower)"
    rows = []
    for variant, merged, pair_note in variants(cells, problem, a, b, target, named):
        data = _data_text(problem, a, b, merged, "per-iteration acquisition time", target)
        if merged.empty:
            rows.append(Sub(claim, problem, f"{a} vs {b}", "time", variant, NOT_RUN, 0, float("nan"), "",
                            float("nan"), test, data, pair_note, "cheaper"))
            continue
        ta, tb = merged["time_a"].to_numpy(float), merged["time_b"].to_numpy(float)
        d = np.log10(ta) - np.log10(tb)
        ratio = float(np.median(tb / ta))
        rows.append(_tested(claim, problem, f"{a} vs {b}", "time", variant, d, _cheaper_tests, "cheaper",
                            test, data, pair_note, f"median time ratio B / A = {ratio:.3g}", ratio))
    return rows


def _cheaper_tests(d: np.ndarray) -> tuple[float, float, str]:
    return signed_rank_p(d, "less"), signed_rank_p(d, "greater"), "B significantly cheaper"


def same_queries(frame: pd.DataFrame, claim: str, problem: str, one: str, other: str) -> Sub:
    """Sub-claim "``one`` at alpha below the smallest mass queries exactly ``other``'s (x, z)", exact ties of
    l aside (see :mod:`analysis.claims`' docstring).

    Cells with target ``worst_case`` are those at alpha below the smallest mass (harness.cell); each is paired
    with the ``other`` cell of the same (alpha, iterations, seed).

    Args:
        frame: all rows, with ``x``, ``z`` and ``lv_count`` (:func:`analysis.data.load_results`).
        claim: the claim's id.
        problem: the problem compared on.
        one: the algorithm whose queries are checked.
        other: the algorithm whose queries they should equal.

    Returns:
        The sub-claim's :class:`Sub` (statistic ``queries``, default variant, no p-value), ``not run`` without
        paired cells; not reproduced where a cell differs other than at a tie, else inconclusive below
        :data:`MIN_SEEDS` seeds, else reproduced.
    """
    statistic = (f"cells whose (x, z) match {other}'s at every iteration "
                 f"(max abs diff <= {QUERY_TOLERANCE:g}), or until a choice among exactly tied z")
    keys = ["alpha", "iterations", "seed", "iteration"]
    base = frame.loc[(frame["problem"] == problem) & (frame["iteration"] >= 1)
                     & (frame["target"] == WORST_CASE.name) & (frame["options"] == DEFAULT_OPTIONS)]
    a = base.loc[base["algorithm"] == one, [*keys, "x", "z", "lv_count"]]
    b = base.loc[base["algorithm"] == other, [*keys, "x", "z"]]
    notes = [f"no {name} cells on {problem} at alpha below the smallest mass"
             for name, cells in ((one, a), (other, b)) if cells.empty]
    merged = a.merge(b, on=keys, suffixes=("_a", "_b"))
    if merged.empty:
        data = f"{one} vs {other} on {problem}: queries x, z"
        return Sub(claim, problem, f"{one} vs {other}", "queries", DEFAULT_VARIANT, NOT_RUN, 0,
                   float("nan"), "", float("nan"), statistic, data, "; ".join(notes), "queries")
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
    seeds = seeds_text(per_cell.index.get_level_values("seed"))
    data = (f"{one} vs {other} on {problem} (alpha={alphas}, seeds {seeds}):"
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
    return Sub(claim, problem, f"{one} vs {other}", "queries", DEFAULT_VARIANT, verdict, n, float("nan"),
               effect, fraction, statistic, data, "; ".join(notes), "queries", verdict_unadjusted=verdict)
