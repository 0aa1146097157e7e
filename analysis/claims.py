"""The claims table: which of the study's claims the stored results reproduce, under which settings,
and by which statistic.

Every comparison pairs cells by seed: the initial design and the observation noise depend on
(problem, seed) only, so two algorithms' cells of one seed start from the same points. Each claim is
split into sub-claims (one per problem and pair of algorithms). Each sub-claim is tested

* by two statistics of a cell's regret: ``final`` (final-iteration log10 regret, the headline one)
  and ``last10`` (mean log10 regret over the last :data:`LAST_ITERATIONS` iterations, less noisy than
  one iteration of a recommendation that can jump); an "is cheaper" comparison by ``time``, a "same
  queries" one by ``queries``;
* under every *variant* found in the folder: the non-default settings of the two sides (algorithm
  options, the GP profile ``gp=...``, an algorithm the study runs as standing in for another). Two
  sides pair only under the same GP profile, and with the same value of any option both sides were
  run with (so A with ``beta=X`` meets B with ``beta=X``, not B with its default beta). ``default``
  is the study's configuration: no option, the default GP profile (:data:`algorithms.gp.DEFAULT_GP`).

A sub-claim's verdict is

* ``not run``: no paired cells;
* ``reproduced`` / ``not reproduced`` / ``inconclusive`` by the rules below, and ``inconclusive``
  whenever fewer than :data:`MIN_SEEDS` seeds pair (the exact one-sided signed-rank test cannot reach
  p < 0.05 with fewer than 5 pairs).

"A beats B" (:class:`harness.study.Beats`): paired Wilcoxon signed-rank test on the statistic,
one-sided (A lower). Reproduced if p < :data:`SIGNIFICANCE`; not reproduced if B is significantly
lower (the opposite one-sided test) or A and B are equivalent (the test below); inconclusive
otherwise.

"A on par with B" (:class:`harness.study.OnPar`): equivalence within +-:data:`EQUIVALENCE_MARGIN`
log10 units by two one-sided Wilcoxon signed-rank tests (TOST) on the paired differences
d = log10 r_A - log10 r_B: H1- median(d) > -margin and H1+ median(d) < +margin, p = max of the two.
Reproduced if p < 0.05. Not reproduced if non-equivalence at the margin is shown: the one-sided test
of d - margin > 0 or of d + margin < 0 rejects, at 0.05 after a Bonferroni factor of 2 for the two
directions (p = 2 min of the two). Inconclusive otherwise: neither equivalence nor a difference
beyond the margin is shown, which is not "on par".

"A queries what B queries" (:class:`harness.study.SameQueries`): the stored queries (x, z) of A at
alpha below the smallest mass equal B's at every iteration, cell by cell (max abs difference <=
:data:`QUERY_TOLERANCE`), up to the choice among exactly tied z: where x_t is far from every
observation the kernel underflows, l_{t-1}(x_t, z) is the prior's for every z and all of them
minimize it. The argmin is then a set; two algorithms may pick from it differently (one from a shared
random stream, the other by a rule of its own, e.g. the z of largest mass), and from there on the
two runs see different data. A cell whose first differing query has the same x and a tie (A's
``lv_count`` > 1: at this alpha its lacing values are exactly the minimizers of l) counts as
consistent, and is reported as such. "A is cheaper than B" (:class:`harness.study.Cheaper`):
per-cell median acquisition time (t_acq_s over iterations >= 1), A run on a problem against B
there, one-sided signed-rank test on log10 of the medians.

A claim's overall verdict (per variant and statistic): not reproduced if any sub-claim is; reproduced
if all are; not run if all are not run; inconclusive otherwise (including a mix of reproduced and not
run). :func:`overall` gives the default configuration's verdict and every change a variant or the
second statistic makes to it, on the sub-claims that variant covers.

The cells and their variants are :mod:`analysis.claim_cells`'s; the sub-claims' tests, thresholds and
verdicts :mod:`analysis.subclaims`'. This module holds the table of every sub-claim of a study, Holm's
adjustment within each claim, and the claim-level views: :func:`overall` and :func:`sensitivity_table`.
"""

from __future__ import annotations

import pandas as pd

from analysis.claim_cells import DEFAULT_VARIANT, STATISTICS, study_cells
from analysis.claim_cells import cell_values as cell_values  # named in reports (analysis.across's doc)
from analysis.power import holm, power, seeds_for_power
from analysis.subclaims import (
    EQUIVALENCE_MARGIN,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_RUN,
    REPRODUCED,
    SIGNIFICANCE,
    Sub,
    beats,
    cheaper,
    decide,
    on_par,
    same_queries,
)
from analysis.subclaims import MIN_SEEDS as MIN_SEEDS  # documented as this module's (docs/reference/api.md)
from analysis.subclaims import non_equivalence_p as non_equivalence_p  # likewise
from harness.study import Comparison, Study


def claims_table(frame: pd.DataFrame, study: Study) -> pd.DataFrame:
    """Every sub-claim of ``study``'s claims under every variant found, by every statistic, one row each (see
    the module docstring for the rules).

    Args:
        frame: all rows with ``log10_regret`` (:func:`analysis.data.load_results`).
        study: the study whose claims are tested.

    Returns:
        A frame with one row per (sub-claim, variant, statistic), the fields of
        :class:`analysis.subclaims.Sub` as columns, Holm-adjusted and decided by :func:`adjust`.
    """
    cells = study_cells(frame, study)
    subs: list[Sub] = []
    for claim in study.claims:
        for comparison in claim.comparisons:
            subs += _comparison_subs(frame, cells, claim.id, comparison, study.named_options)
    return adjust(pd.DataFrame([vars(s) for s in subs], columns=list(Sub.__dataclass_fields__)))


def _comparison_subs(frame: pd.DataFrame, cells: pd.DataFrame, claim: str, comparison: Comparison,
                     named: dict[str, dict]) -> list[Sub]:
    """The rows of one comparison of a claim: its sub-claims, one or more per problem."""
    if comparison.kind == "same_queries":
        return [same_queries(frame, claim, p, comparison.a, comparison.b) for p in comparison.problems]
    if comparison.kind == "cheaper":
        return _cheaper_subs(cells, claim, comparison, named)
    test = beats if comparison.kind == "beats" else on_par
    return [row for p in comparison.problems
            for row in test(cells, claim, p, comparison.a, comparison.b, named, comparison.target)]


def _cheaper_subs(cells: pd.DataFrame, claim: str, comparison: Comparison,
                  named: dict[str, dict]) -> list[Sub]:
    """A :class:`~harness.study.Cheaper` comparison: on each of its problems (every problem where
    ``b`` ran when it names none), each of its ``a`` that ran there (the last where none did)."""
    b = comparison.b
    problems = comparison.problems or tuple(sorted(set(cells.loc[cells["arm"] == b, "problem"])))
    subs: list[Sub] = []
    for p in problems:
        ran = [a for a in comparison.a if ((cells["problem"] == p) & (cells["arm"] == a)).any()]
        for a in ran or [comparison.a[-1]]:
            subs += cheaper(cells, claim, p, a, b, named, comparison.target)
    if not problems:
        names = " | ".join(comparison.a)
        subs.append(Sub(claim, "(every problem)", f"{names} vs {b}", "time", DEFAULT_VARIANT,
                        NOT_RUN, 0, float("nan"), "", float("nan"),
                        "Wilcoxon signed-rank on log10 per-cell median t_acq_s",
                        f"{names} vs {b}: per-iteration acquisition time", f"no {b} cells",
                        "cheaper"))
    return subs


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


#: The sub-claims of one claim tested together: Holm's adjustment runs within each family.
FAMILY = ["claim", "variant", "statistic"]


def adjust(table: pd.DataFrame) -> pd.DataFrame:
    """Holm-adjust the p-values within each family and decide every tested sub-claim's ``verdict``.

    ``p_value`` and ``p_against`` are adjusted within each family (:data:`FAMILY`; the tested sub-claims of
    one claim under one variant by one statistic), the verdicts decided on the adjusted values
    (``verdict_unadjusted`` keeps the raw decision), and the power of each test at 10 seeds and the seeds 80 %
    power needs (:mod:`analysis.power`) added, at the family's Bonferroni level, the strictest step of Holm's.

    Args:
        table: the claims table's rows (the fields of :class:`analysis.subclaims.Sub`), untested rows with a
            NaN ``p_value``.

    Returns:
        A copy of ``table`` with ``p_holm``, ``p_against_holm``, ``family``, ``verdict``, ``note``,
        ``power_10`` and ``seeds_80`` set on the tested rows; the untested rows as they were.
    """
    table = table.copy()
    tested = table["p_value"].notna()
    for _, index in table.loc[tested].groupby(FAMILY, sort=False).groups.items():
        table.loc[index, "p_holm"] = holm(table.loc[index, "p_value"].to_numpy(float))
        table.loc[index, "p_against_holm"] = holm(table.loc[index, "p_against"].to_numpy(float))
        table.loc[index, "family"] = len(index)
    for i in table.index[tested]:
        row = table.loc[i]
        verdict, note = decide(int(row["n_seeds"]), row["p_holm"], row["p_against_holm"], row["against"])
        table.loc[i, "verdict"] = verdict
        table.loc[i, "note"] = _join(row["note"], note.replace("(p=", "(Holm-adjusted p="))
        kind = "on_par" if row["kind"] == "on_par" else "beats"
        level = SIGNIFICANCE / max(int(table.loc[i, "family"]), 1)
        name = "|".join(str(row[k]) for k in ("claim", "problem", "comparison", "statistic", "variant"))
        table.loc[i, "power_10"] = power(row["effect_mean"], row["effect_sd"], 10, kind, level,
                                         EQUIVALENCE_MARGIN, name)
        table.loc[i, "seeds_80"] = seeds_for_power(row["effect_mean"], row["effect_sd"], kind, level,
                                                   EQUIVALENCE_MARGIN, name)
    return table


def _combine(verdicts: list[str]) -> str:
    if NOT_REPRODUCED in verdicts:
        return NOT_REPRODUCED
    if verdicts and all(v == REPRODUCED for v in verdicts):
        return REPRODUCED
    if all(v == NOT_RUN for v in verdicts):
        return NOT_RUN
    return INCONCLUSIVE


def overall(table: pd.DataFrame, study: Study) -> pd.DataFrame:
    """The verdict of each claim under the default configuration, and what the variants change.

    Args:
        table: the claims table (:func:`claims_table`).
        study: the study whose claims are summarized, in its order.

    Returns:
        A frame with one row per claim, columns ``claim``, ``statement``, ``verdict`` (under the default
        configuration by the headline statistic, final log10 regret; queries for "same queries", time for "is
        cheaper"), ``verdict_last10`` (by the second statistic, ``""`` where not tested), ``sub-claims`` (the
        counts of the default sub-claim verdicts), ``flipped`` (whether any change turns reproduced into not
        reproduced or back), ``changes`` (each sub-claim where a variant, or the second statistic, gives
        another verdict than the default configuration by the same statistic) and ``where_default_not_run``
        (the verdicts of variants on sub-claims the default did not run, counted per statistic; the
        sensitivity table has them one by one).
    """
    rows = []
    for declared in study.claims:
        claim, statement, headline = declared.id, declared.statement, declared.headline
        rows_claim = table.loc[table["claim"] == claim]
        is_default = rows_claim["variant"] == DEFAULT_VARIANT
        default = rows_claim.loc[is_default & (rows_claim["statistic"] == headline)]
        verdicts = default["verdict"].tolist()
        last10 = rows_claim.loc[is_default & (rows_claim["statistic"] == "last10")]
        verdict_last10 = _combine(last10["verdict"].tolist()) if not last10.empty else ""
        changes, flipped, alone = _changes(rows_claim, headline)
        counts = ", ".join(f"{verdicts.count(v)} {v}"
                           for v in (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN) if verdicts.count(v))
        rows.append({"claim": claim, "statement": statement, "verdict": _combine(verdicts),
                     "verdict_last10": verdict_last10, "sub-claims": counts, "flipped": flipped,
                     "changes": "; ".join(changes), "where_default_not_run": alone})
    return pd.DataFrame(rows, columns=["claim", "statement", "verdict", "verdict_last10", "sub-claims",
                                       "flipped", "changes", "where_default_not_run"])


def _changes(rows: pd.DataFrame, headline: str) -> tuple[list[str], bool, str]:
    """What the variants and the second statistic change, sub-claim by sub-claim (see :func:`overall`),
    whether one flips, and the verdicts of variants on sub-claims the default did not run, counted."""
    several = rows["comparison"].nunique() > 1
    by_key = {(r.variant, r.problem, r.comparison, r.statistic): r.verdict for r in rows.itertuples()}
    changes, flipped = [], False
    alone: dict[str, list[str]] = {}
    for (variant, problem, comparison), group in rows.groupby(["variant", "problem", "comparison"],
                                                              sort=True):
        where = f"{problem} ({comparison})" if several else problem
        if variant == DEFAULT_VARIANT:  # the second statistic against the headline one
            base = by_key.get((variant, problem, comparison, headline), NOT_RUN)
            for statistic in group["statistic"]:
                mine = by_key[(variant, problem, comparison, statistic)]
                if statistic != headline and NOT_RUN not in (base, mine) and mine != base:
                    changes.append(f"{statistic} instead of {headline} on {where}: {base} -> {mine}")
                    flipped |= {base, mine} == {REPRODUCED, NOT_REPRODUCED}
            continue
        parts = []
        for statistic in group["statistic"]:
            mine = by_key[(variant, problem, comparison, statistic)]
            base = by_key.get((DEFAULT_VARIANT, problem, comparison, statistic), NOT_RUN)
            if mine == NOT_RUN:
                continue
            if base == NOT_RUN:
                alone.setdefault(statistic, []).append(mine)
            elif mine != base:
                parts.append(f"{statistic} {base} -> {mine}")
                flipped |= {base, mine} == {REPRODUCED, NOT_REPRODUCED}
        if parts:
            changes.append(f"{variant} on {where}: " + ", ".join(parts))
    counted = "; ".join(
        f"{statistic}: " + ", ".join(f"{verdicts.count(v)} {v}" for v in
                                     (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE) if verdicts.count(v))
        for statistic, verdicts in alone.items())
    return changes, flipped, counted


#: Short forms of the verdicts in the sensitivity table.
SHORT = {REPRODUCED: "yes", NOT_REPRODUCED: "NO", INCONCLUSIVE: "?", NOT_RUN: "-"}


def sensitivity_table(table: pd.DataFrame, claims: tuple[str, ...] | None = None) -> pd.DataFrame:
    """The verdicts of every sub-claim under every variant, by the final and by the last-10 statistic.

    Claims tested by queries or time (one statistic, default only or timing) are left out unless named.

    Args:
        table: the claims table (:func:`claims_table`).
        claims: the claims to keep (default: every claim tested by ``final`` and ``last10``).

    Returns:
        A frame with one row per variant (the default first, then by name), a column ``variant`` and one
        column per sub-claim (``CLAIM problem: A vs B``) holding ``"final / last10"`` in short forms
        (:data:`SHORT`; ``-`` where the variant did not run on that sub-claim); sub-claims no variant ran are
        left out. Empty (no columns) where no row is kept.
    """
    keep = table.loc[table["statistic"].isin(STATISTICS)]
    if claims is not None:
        keep = keep.loc[keep["claim"].isin(claims)]
    if keep.empty:
        return pd.DataFrame()
    keep = keep.assign(sub_claim=keep["claim"] + " " + keep["problem"] + ": " + keep["comparison"])
    wide = keep.pivot_table(index=["variant", "sub_claim"], columns="statistic", values="verdict",
                            aggfunc="first")
    text = (wide["final"].map(SHORT).fillna("-") + " / " + wide["last10"].map(SHORT).fillna("-")).rename("v")
    out = text.reset_index().pivot_table(index="variant", columns="sub_claim", values="v",
                                         aggfunc="first").fillna("- / -")
    out = out.loc[:, ~(out == "- / -").all(axis=0)]
    order = [DEFAULT_VARIANT, *sorted(v for v in out.index if v != DEFAULT_VARIANT)]
    out = out.reindex([v for v in order if v in out.index])
    out.columns.name = None
    return out.reset_index()
