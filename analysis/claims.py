"""The claims table: which of the paper's claims C1-C8 (and our C9) the stored results reproduce,
under which settings, and by which statistic.

Every comparison pairs cells by seed: the initial design and the observation noise depend on
(problem, seed) only, so two algorithms' cells of one seed start from the same points. Each claim is
split into sub-claims (one per problem and pair of algorithms). Each sub-claim is tested

* by two statistics of a cell's regret: ``final`` (final-iteration log10 regret, the paper's) and
  ``last10`` (mean log10 regret over the last :data:`LAST_ITERATIONS` iterations, less noisy than one
  iteration of a recommendation that can jump); C8 by ``time``, C7 by ``queries``;
* under every *variant* found in the folder: the non-default settings of the two sides (algorithm
  options, the GP profile ``gp=...``, ``rhokg-apx-released`` standing in for ``rhokg-apx``). Two
  sides pair only under the same GP profile, and with the same value of any option both sides were
  run with (so V-UCB Prob with beta=authors meets V-UCB Unif with beta=authors, not with the
  default beta). ``default`` is the paper's configuration: no option, the ``paper`` GP.

A sub-claim's verdict is

* ``not run``: no paired cells;
* ``reproduced`` / ``not reproduced`` / ``inconclusive`` by the rules below, and ``inconclusive``
  whenever fewer than :data:`MIN_SEEDS` seeds pair (the exact one-sided signed-rank test cannot reach
  p < 0.05 with fewer than 5 pairs).

"A beats B" (C2-C6, C9): paired Wilcoxon signed-rank test on the statistic, one-sided (A lower).
Reproduced if p < :data:`SIGNIFICANCE`; not reproduced if B is significantly lower (the opposite
one-sided test) or A and B are equivalent (the test below); inconclusive otherwise.

"A on par with B" (C1, C6 second half): equivalence within +-:data:`EQUIVALENCE_MARGIN` log10 units
by two one-sided Wilcoxon signed-rank tests (TOST) on the paired differences d = log10 r_A - log10 r_B:
H1- median(d) > -margin and H1+ median(d) < +margin, p = max of the two. Reproduced if p < 0.05. Not
reproduced if non-equivalence at the margin is shown: the one-sided test of d - margin > 0 or of
d + margin < 0 rejects, at 0.05 after a Bonferroni factor of 2 for the two directions (p = 2 min of
the two). Inconclusive otherwise: neither equivalence nor a difference beyond the margin is shown,
which is not "on par".

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

A claim's overall verdict (per variant and statistic): not reproduced if any sub-claim is; reproduced
if all are; not run if all are not run; inconclusive otherwise (including a mix of reproduced and not
run). :func:`overall` gives the default configuration's verdict and every change a variant or the
second statistic makes to it, on the sub-claims that variant covers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.power import holm, power, seeds_for_power
from analysis.signed_rank import rank_biserial, signed_rank_p, tost_p
from harness.study import Comparison, Study
from problems.measures import RISK_MEASURES

SIGNIFICANCE = 0.05
MIN_SEEDS = 5
EQUIVALENCE_MARGIN = 0.5  # log10 units: final regrets within a factor of about 3.16
QUERY_TOLERANCE = 1e-6  # inputs live on [0, 1]

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN = "reproduced", "not reproduced", "inconclusive", "not run"

DEFAULT_OPTIONS = "{}"
DEFAULT_VARIANT = "default"
#: ``last10``: the mean log10 regret over this many final iterations.
LAST_ITERATIONS = 10
#: The statistics of a cell's regret the claims are tested on.
STATISTICS = {"final": "final-iteration log10 regret",
              "last10": f"mean log10 regret over the last {LAST_ITERATIONS} iterations"}

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


def _seeds_text(seeds: Iterable[int]) -> str:
    seeds = sorted(set(int(s) for s in seeds))
    if not seeds:
        return "none"
    if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def cell_values(frame: pd.DataFrame, aliases: dict[str, str] | None = None,
                reduced: tuple[str, ...] = (),
                fixed: dict[str, dict[str, dict]] | None = None) -> pd.DataFrame:
    """One row per cell: its keys, ``final`` (final log10 regret), ``last10`` (mean log10 regret over
    its last :data:`LAST_ITERATIONS` iterations, iteration 0 excluded unless it is all there is),
    ``time`` (median t_acq_s over iterations >= 1), ``arm`` (the algorithm the claims know it as) and
    ``settings`` (canonical JSON of its non-default settings, ``algorithm`` for an alias).
    ``aliases``: the study's algorithms that stand in for another one (:class:`harness.study.Study`).
    ``reduced``: the study's algorithms run at their declared reduced effort (its
    ``reduced_effort``): a cell of one whose options hold that effort counts as default (those
    options are not settings), one without them is the variant ``effort=full``. ``fixed``: problem
    -> algorithm -> options the study sets there (its ``problem_options``): not settings either."""
    keys = ["problem", "target", "options", "algorithm", "alpha", "iterations", "seed"]
    frame = frame.copy()
    last = frame.groupby(keys, sort=False, dropna=False)["iteration"].transform("max")
    in_tail = (frame["iteration"] > last - LAST_ITERATIONS) & ((frame["iteration"] >= 1) | (last == 0))
    tail = frame.loc[in_tail]
    grouped = frame.groupby(keys, sort=False, dropna=False)
    cells = grouped.size().rename("n_rows").reset_index()
    finals = frame.loc[frame["iteration"] == last, [*keys, "log10_regret"]].rename(
        columns={"log10_regret": "final"})
    cells = cells.merge(finals, on=keys, how="left")
    means = tail.groupby(keys, sort=False, dropna=False)["log10_regret"].mean().rename("last10").reset_index()
    cells = cells.merge(means, on=keys, how="left")
    steps = frame.loc[frame["iteration"] >= 1]
    if "t_acq_s" in steps:
        times = steps.groupby(keys, sort=False, dropna=False)["t_acq_s"].median().rename("time").reset_index()
        cells = cells.merge(times, on=keys, how="left")
    else:
        cells["time"] = np.nan
    aliases = aliases or {}
    cells["arm"] = cells["algorithm"].map(lambda a: aliases.get(a, a))
    efforts = {(a, p): _reduced_effort(aliases.get(a, a), p) for a, p in
               set(zip(cells["algorithm"], cells["problem"], strict=True)) if aliases.get(a, a) in reduced}
    fixed = fixed or {}
    keys = zip(cells["options"], cells["algorithm"], cells["problem"], strict=True)
    cells["settings"] = [_settings(o, a, aliases, efforts.get((a, p)), fixed.get(p, {}).get(a))
                         for o, a, p in keys]
    return cells


def study_cells(frame: pd.DataFrame, study: Study) -> pd.DataFrame:
    """:func:`cell_values` with ``study``'s aliases, reduced effort and per-problem options."""
    return cell_values(frame, study.aliases, study.reduced_effort, study.problem_options)


def _reduced_effort(algorithm: str, problem: str) -> dict:
    """The reduced effort ``algorithm`` declares for ``problem``'s kind of Z ({} if none)."""
    from harness.grid import smoke_options  # the engine's own rule, as the grids apply it
    from problems import get_problem

    try:
        continuous = not get_problem(problem).z.is_discrete
    except (KeyError, ValueError):
        return {}
    return smoke_options(algorithm, continuous) or {}


def _settings(options: str, algorithm: str, aliases: dict[str, str], effort: dict | None = None,
              fixed: dict | None = None) -> str:
    settings = json.loads(options)
    if fixed and all(settings.get(k) == v for k, v in fixed.items()):  # the study's, on this problem
        settings = {k: v for k, v in settings.items() if k not in fixed}
    if effort:  # the study runs this algorithm at its reduced effort: that is its default here
        if all(settings.get(k) == v for k, v in effort.items()):
            settings = {k: v for k, v in settings.items() if k not in effort}
        else:
            settings["effort"] = "full"
    if algorithm in aliases:
        settings["algorithm"] = algorithm
    return json.dumps(settings, sort_keys=True)


def variant_label(a: dict, b: dict, named: dict[str, dict] | None = None) -> str:
    """The non-default settings of two paired sides, each named once: ``gp=...`` first, then an
    aliased algorithm by name, then options as ``name=value`` (the study's named option sets by
    their name); ``default`` when there are none."""
    named = named or {}
    a, b = _named(a, named), _named(b, named)
    parts = []
    if "gp" in a:
        parts.append(f"gp={a['gp']}")
    for side in (a, b):
        if "algorithm" in side:
            parts.append(side["algorithm"])
    for side in (a, b):
        for key, value in sorted(side.items()):
            part = key if value is True and key in named else f"{key}={value}"
            if key not in ("gp", "algorithm") and part not in parts:
                parts.append(part)
    return ", ".join(parts) or DEFAULT_VARIANT


def _named(settings: dict, named: dict[str, dict]) -> dict:
    for name, options in named.items():
        if all(settings.get(k) == v for k, v in options.items()):
            settings = {k: v for k, v in settings.items() if k not in options}
            settings[name] = True
    return settings


def _compatible(a: dict, b: dict, shared: set[str]) -> bool:
    return all(a.get(key) == b.get(key) for key in shared)


def variants(cells: pd.DataFrame, problem: str, a: str, b: str, target: str,
             named: dict[str, dict] | None = None) -> list[tuple[str, pd.DataFrame, str]]:
    """Every variant under which ``a`` and ``b`` pair on ``problem``: (label, paired cells, note).

    The paired cells have the columns of :func:`cell_values` suffixed ``_a`` / ``_b`` and ``seed``,
    ``alpha``, ``iterations``, at the (alpha, iterations) with the most pairs. The default variant
    always comes first, empty (not run) when it has no pairs, with a note on what is missing.
    """
    sub = cells.loc[(cells["problem"] == problem) & (cells["target"] == target)]
    cells_a, cells_b = sub.loc[sub["arm"] == a], sub.loc[sub["arm"] == b]
    keys_a = {k for s in cells_a["settings"].unique() for k in json.loads(s)}
    keys_b = {k for s in cells_b["settings"].unique() for k in json.loads(s)}
    shared = (keys_a & keys_b) | {"gp"}
    found: dict[str, tuple[pd.DataFrame, str]] = {}
    for sa, group_a in cells_a.groupby("settings", sort=True):
        for sb, group_b in cells_b.groupby("settings", sort=True):
            da, db = json.loads(sa), json.loads(sb)
            if not _compatible(da, db, shared):
                continue
            merged = group_a.merge(group_b, on=["alpha", "iterations", "seed"], suffixes=("_a", "_b"))
            note = ""
            if not merged.empty:
                sizes = merged.groupby(["alpha", "iterations"]).size()
                alpha, iterations = sizes.idxmax()
                merged = merged.loc[(merged["alpha"] == alpha) & (merged["iterations"] == iterations)]
                unpaired = len(group_a) + len(group_b) - 2 * len(merged)
                if unpaired:
                    note = f"{unpaired} cell(s) without a partner seed or at another alpha/T"
            found[variant_label(da, db, named)] = (merged.reset_index(drop=True), note)
    out = []
    if DEFAULT_VARIANT in found and not found[DEFAULT_VARIANT][0].empty:
        out.append((DEFAULT_VARIANT, *found.pop(DEFAULT_VARIANT)))
    else:
        found.pop(DEFAULT_VARIANT, None)
        notes = []
        for name, side in ((a, cells_a), (b, cells_b)):
            default = side.loc[side["settings"] == DEFAULT_OPTIONS]
            if default.empty:
                other = len(side)
                notes.append(f"no {name} cells on {problem} (target {target})"
                             + (f" with default settings ({other} with other settings)" if other else ""))
        out.append((DEFAULT_VARIANT, pd.DataFrame(), "; ".join(notes)))
    out += [(label, merged, note) for label, (merged, note) in sorted(found.items()) if not merged.empty]
    return out


def _data_text(problem: str, a: str, b: str, merged: pd.DataFrame, what: str, target: str = "var") -> str:
    if target != "var":  # VaR is the paper's; another measure is named (its sub-claims' own rows)
        what = f"{what} of {RISK_MEASURES[target].label}" if target in RISK_MEASURES else f"{what} ({target})"
    if merged.empty:
        return f"{a} vs {b} on {problem}: {what}"
    return (f"{a} vs {b} on {problem} (alpha={merged['alpha'].iloc[0]:.4g}, T={merged['iterations'].iloc[0]},"
            f" seeds {_seeds_text(merged['seed'])}): {what}")


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


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
    """p-value of "the median difference lies outside +-margin": the smaller of the one-sided
    signed-rank tests of d - margin > 0 and d + margin < 0, times 2 (Bonferroni over the two
    directions); 1 for no data."""
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
    """Verdict and note of a tested sub-claim from its p-values (raw or adjusted): inconclusive below
    :data:`MIN_SEEDS` seeds; reproduced if p < level; not reproduced if the evidence against it is
    (p_against < level); inconclusive otherwise."""
    if n < MIN_SEEDS:
        return INCONCLUSIVE, f"fewer than {MIN_SEEDS} paired seeds"
    if p < level:
        return REPRODUCED, ""
    if p_against < level:
        return NOT_REPRODUCED, f"{against} (p={p_against:.3g})"
    return INCONCLUSIVE, ""


def _regret_subs(cells: pd.DataFrame, claim: str, problem: str, a: str, b: str, kind: str,
                 named: dict[str, dict] | None = None, target: str = "var") -> list[Sub]:
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
          named: dict[str, dict] | None = None, target: str = "var") -> list[Sub]:
    """Sub-claim "``a`` has lower log10 regret than ``b`` on ``problem``" (the regret of the risk
    measure ``target``), every variant and statistic."""
    return _regret_subs(cells, claim, problem, a, b, "beats", named, target)


def on_par(cells: pd.DataFrame, claim: str, problem: str, a: str, b: str,
           named: dict[str, dict] | None = None, target: str = "var") -> list[Sub]:
    """Sub-claim "``a`` and ``b`` reach log10 regrets within +-margin of each other"."""
    return _regret_subs(cells, claim, problem, a, b, "on_par", named, target)


def cheaper(cells: pd.DataFrame, claim: str, problem: str, a: str, b: str,
            named: dict[str, dict] | None = None, target: str = "var") -> list[Sub]:
    """Sub-claim "``a``'s median per-iteration acquisition time is lower than ``b``'s", every variant."""
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


def same_queries(frame: pd.DataFrame, claim: str, problem: str, vucb: str, other: str) -> Sub:
    """Sub-claim "``vucb`` at alpha below the smallest mass queries exactly ``other``'s (x, z)"
    (StableOpt's, in the paper's study), exact ties of l aside (see the module docstring).

    Cells with target ``worst_case`` are those at alpha below the smallest mass (harness.cell);
    each is paired with the ``other`` cell of the same (alpha, iterations, seed).
    """
    statistic = (f"cells whose (x, z) match {other}'s at every iteration "
                 f"(max abs diff <= {QUERY_TOLERANCE:g}), or until a choice among exactly tied z")
    keys = ["alpha", "iterations", "seed", "iteration"]
    base = frame.loc[(frame["problem"] == problem) & (frame["iteration"] >= 1)
                     & (frame["target"] == "worst_case") & (frame["options"] == DEFAULT_OPTIONS)]
    a = base.loc[base["algorithm"] == vucb, [*keys, "x", "z", "lv_count"]]
    b = base.loc[base["algorithm"] == other, [*keys, "x", "z"]]
    notes = [f"no {name} cells on {problem} at alpha below the smallest mass"
             for name, cells in ((vucb, a), (other, b)) if cells.empty]
    merged = a.merge(b, on=keys, suffixes=("_a", "_b"))
    if merged.empty:
        data = f"{vucb} vs {other} on {problem}: queries x, z"
        return Sub(claim, problem, f"{vucb} vs {other}", "queries", DEFAULT_VARIANT, NOT_RUN, 0,
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
    seeds = _seeds_text(per_cell.index.get_level_values("seed"))
    data = (f"{vucb} vs {other} on {problem} (alpha={alphas}, seeds {seeds}):"
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
    return Sub(claim, problem, f"{vucb} vs {other}", "queries", DEFAULT_VARIANT, verdict, n, float("nan"),
               effect, fraction, statistic, data, "; ".join(notes), "queries", verdict_unadjusted=verdict)


def claims_table(frame: pd.DataFrame, study: Study) -> pd.DataFrame:
    """Every sub-claim of ``study``'s claims under every variant found, by every statistic, one row
    each (see the module docstring for the rules). ``frame``: all rows with ``log10_regret``."""
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


#: The sub-claims of one claim tested together: Holm's adjustment runs within each family.
FAMILY = ["claim", "variant", "statistic"]


def adjust(table: pd.DataFrame) -> pd.DataFrame:
    """Holm-adjust ``p_value`` and ``p_against`` within each family (:data:`FAMILY`; the tested
    sub-claims of one claim under one variant by one statistic), decide every tested sub-claim's
    ``verdict`` on the adjusted values (``verdict_unadjusted`` keeps the raw decision), and add the
    power of its test at 10 seeds and the seeds 80 % power needs (:mod:`analysis.power`), at the
    family's Bonferroni level, the strictest step of Holm's."""
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
    """One row per claim: its statement; ``verdict`` under the default configuration by the headline
    statistic (final log10 regret; C7 queries, C8 time) and ``verdict_last10`` by the second; the
    counts of the default sub-claim verdicts; ``changes``: each sub-claim where a variant, or the
    second statistic, gives another verdict than the default configuration by the same statistic;
    ``flipped``: whether any of these turns reproduced into not reproduced or back;
    ``where_default_not_run``: the verdicts of variants on sub-claims the default did not run,
    counted per statistic (the sensitivity table has them one by one)."""
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
    """One row per variant (the default first), one column per sub-claim (``C1 problem: A vs B``):
    the verdict by the final and by the last-10 statistic, "final / last10" in short forms
    (:data:`SHORT`; '-' where the variant did not run on that sub-claim). C7 and C8 (one statistic,
    default only or timing) are left out unless named."""
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
