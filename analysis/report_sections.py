"""The sections of a report on BO cells, in order (:func:`document`): what the folder holds, the
regret curves, the final iteration, the claims, the timing, the claims in detail and the
provenance."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from algorithms.gp import DEFAULT_GP
from analysis.bands import BAND_LEVEL
from analysis.claim_cells import LAST_ITERATIONS, seeds_text
from analysis.claims import sensitivity_table
from analysis.data import BEST_FOUND, CELL_KEYS, NEGATIVE_TOLERANCE
from analysis.provenance import analysis_environment
from analysis.report_output import Document
from analysis.subclaims import EQUIVALENCE_MARGIN, MIN_SEEDS, NOT_RUN, QUERY_TOLERANCE, SIGNIFICANCE
from analysis.summary import pivot_tables
from harness.study import Study


def document(doc: Document, results: Path, frame: pd.DataFrame, summary: pd.DataFrame, panels: pd.DataFrame,
             claims: pd.DataFrame, verdicts: pd.DataFrame, timing: pd.DataFrame, ratios: pd.DataFrame,
             status: dict, figures: list, floor: float, bounds: pd.DataFrame, study: Study) -> None:
    """The report's BO sections, in order: what the folder holds, the regret curves, the final
    iteration, the claims, the timing, the claims in detail, the provenance."""
    _overview(doc, results, frame, status)
    _regret_section(doc, panels, figures, floor, study)
    _final_section(doc, frame, summary, bounds)
    _claims_section(doc, verdicts, study)
    _timing_section(doc, timing, ratios, figures, status.get("also", ()))
    _claims_detail_section(doc, claims, verdicts, floor)
    _provenance_section(doc, results, frame, status)


#: What a report that joins other runs says wherever it sets seconds side by side.
MIXED_HOSTS = ("The runs joined here were timed on their own hosts: a method's seconds from one run and "
               "another's from the other compare only through the two machines' ratio, which the "
               "section on the runs compared measures on the cells both hold.")


def _overview(doc: Document, results: Path, frame: pd.DataFrame, status: dict) -> None:
    """The cells and rows read, the grid's counts, the table of contents."""
    # CELL_KEYS has the target: a CVaR cell and its VaR twin (same options and seed) are two cells
    own = frame["spec_hash"].isin(status.get("own_hashes", set(frame["spec_hash"])))
    n_own = frame.loc[own].groupby(CELL_KEYS, dropna=False).ngroups
    grid = status["grid"] or status.get("grid_damaged") or "no _grid.json"
    text = (f"{n_own} cells ({int(own.sum())} rows) from {results}. Grid: {grid} "
            f"({status['n_grid_cells']} cells listed); completed {status['n_done']}, failed "
            f"{status['n_failed']}, missing {status['n_missing']}.")
    if not own.all():  # the rows of the runs compared with: counted apart, never as this run's
        n_other = frame.loc[~own].groupby(CELL_KEYS, dropna=False).ngroups
        text += (f" Compared with {n_other} cells ({int((~own).sum())} rows) of "
                 f"{', '.join(str(f) for f in status.get('also', ()))}, read, not rerun (their "
                 "provenance: the section on the runs compared).")
    doc.para(text)
    doc.contents()


def _regret_section(doc: Document, panels: pd.DataFrame, figures: list, floor: float, study: Study) -> None:
    """How the regret curves are drawn, and the figures (the study's figures drawn always show
    even without cells; the timing figure is the timing section's)."""
    doc.heading("Regret curves")
    doc.para(
        f"Mean over seeds of log10 regret per iteration (iteration 0 is the initial design) with the "
        f"{BAND_LEVEL:.0%} two-sided confidence band of the mean, mean +- t(0.85, n-1) sd / sqrt(n). "
        f"Regret is the current recommendation's (not best-so-far). Regret <= {floor:g} (the optimum "
        f"reached) is set to {floor:g} (log10 = {np.log10(floor):.0f}). Each panel's title gives the "
        f"seeds (n) and, where any, the seeds at the floor at the last iteration (bands.csv: at every "
        f"iteration). Lines that coincide are told apart by their markers; options too long for the "
        f"legend are spelled out in the key under it. Regret below -{NEGATIVE_TOLERANCE:g} stops the "
        f"report. The worst-case figure uses the worst-case target max_x min_z f(x, z): the alpha -> 0 "
        f"study where its panels' alpha lies below the smallest mass of Z. The CVaR figures (cells with "
        f"risk = cvar) use the CVaR target: the optimal CVaR_alpha, the lower-tail mean, minus the "
        f"true CVaR of the recommendation.")
    drawn = set(panels["figure"])
    always = {spec.name for spec in study.figures if spec.always}
    empty = [title.split(" (")[0] for name, title, _ in figures if name in always and name not in drawn]
    for name, title, fig_paths in figures:
        if name != "fig_timing" and (name not in always or name in drawn):
            doc.figure(title, fig_paths["png"], fig_paths["pdf"])
    if empty:  # drawn all the same (every panel "not run"), for a folder that fills them later
        doc.para("No cell of this folder belongs to " + "; ".join(empty) + " (their files show empty "
                 "panels).")


def _final_section(doc: Document, frame: pd.DataFrame, summary: pd.DataFrame, bounds: pd.DataFrame) -> None:
    """The last iteration's regret and seconds per target, the optima that are lower bounds and the
    problems without a known optimum."""
    doc.heading("Final iteration", 3)
    doc.para(f"Mean log10 regret of the recommendation at the last iteration over seeds, with its "
             f"{BAND_LEVEL:.0%} band [lower, upper]; and the median seconds per proposal (iterations >= 1). "
             "One pair of tables per target; every series: final_table.csv.")
    for target, (regret, seconds, note) in pivot_tables(summary).items():
        doc.heading(f"Target {target}: final log10 regret", 4)
        doc.para(note)
        doc.table(regret)
        doc.heading(f"Target {target}: median seconds per proposal", 4)
        doc.table(seconds)
    if not bounds.empty:
        doc.heading("Optima that are lower bounds", 3)
        doc.para(
            "These problems have no certified optimum: the stored value is the best a search found "
            "(problems/optima.json, 'lower_bound'). A recommendation above it has a negative regret, "
            "drawn at the floor: the bound was beaten, the run is not wrong. The best value any "
            "recommendation reached:")
        doc.table(bounds)
    unknown = frame.loc[frame["regret_basis"] == BEST_FOUND]
    if not unknown.empty:
        doc.heading("Problems without a known optimum", 3)
        doc.para(
            "These problems declare their optimum unknown, so their cells store no regret. Their regret "
            "here is against the best true value any recommendation in this folder reached (the usual "
            "practice for such problems), and their panels say 'vs best found in folder': it changes "
            "when runs are added, and where a run reached that best its regret is 0 (drawn at the "
            "floor) by construction. The figure 'true value of the recommendation' does not depend on the "
            "other runs. The basis of each:")
        basis = (unknown.groupby(["problem", "alpha", "target"])["optimum"].first().rename("best_found")
                 .reset_index())
        doc.table(basis)


def _claims_section(doc: Document, verdicts: pd.DataFrame, study: Study) -> None:
    """The study's claims, one verdict each, and what they say."""
    doc.heading("Claims")
    if not study.claims:
        doc.para("These results belong to no study (harness.study: a study declares its claims), so "
                 "no claim is tested; give one with --study NAME.")
    doc.para(f"The claims of the study '{study.name}' ({study.description}) and whether this folder "
             "reproduces them in the default configuration, by the last iteration's regret ('verdict') "
             "and by the mean over the last "
             f"{LAST_ITERATIONS} iterations ('verdict_last10'); 'flipped': whether a variant "
             "in the folder (another GP profile, an algorithm option, an algorithm standing in for "
             "another, ...) turns a verdict around. How "
             "each is tested, the variants and every sub-claim: 'Claims in detail' below.")
    doc.table(verdicts[["claim", "statement", "verdict", "verdict_last10", "sub-claims", "flipped"]])
    doc.heading("What the verdicts say", 3)
    doc.bullets(conclusions(verdicts))


def _timing_section(doc: Document, timing: pd.DataFrame, ratios: pd.DataFrame, figures: list,
                    also: tuple = ()) -> None:
    """The per-iteration times, their figure (the last of ``figures``) and the costlier / cheaper
    ratios of the pairs the study's "cheaper" claims name (:func:`analysis.timing.ratio_table`);
    where other runs are joined (``also``), that their seconds were measured on their own hosts."""
    doc.heading("Timing")
    doc.para("Per-iteration times over iterations >= 1 (median and interquartile range, seconds); total "
             "cell time = the sum of t_fit_s, t_acq_s, t_rec_s and t_eval_s over a cell's rows (median and "
             "IQR over cells). Ratios: for each pair a 'cheaper' claim of the study names, the costlier "
             "series' median / the cheaper series' median." + (" " + MIXED_HOSTS if also else ""))
    _, title, fig_paths = figures[-1]
    doc.figure(title, fig_paths["png"], fig_paths["pdf"])
    doc.table(timing)
    doc.heading("Costlier / cheaper", 3)
    doc.table(ratios, empty="No problem has both series of a pair the study's 'cheaper' claims name "
                            "(of any options).")


def _claims_detail_section(doc: Document, claims: pd.DataFrame, verdicts: pd.DataFrame, floor: float) -> None:
    """How the claims are tested, where variants change a verdict, the sensitivity table and every
    sub-claim."""
    doc.heading("Claims in detail")
    doc.para(
        f"Tests: paired by seed (initial designs and noise are shared per (problem, seed)), on two "
        f"statistics of each cell's log10 regret (regret floored at {floor:g}): 'final', the last "
        f"iteration's (the headline statistic), and 'last10', the mean over the last {LAST_ITERATIONS} "
        f"iterations (less noisy). 'A beats B': one-sided Wilcoxon signed-rank test, reproduced if "
        f"p < {SIGNIFICANCE}; not reproduced if B is significantly lower or the two are equivalent. "
        f"'On par': equivalence within +-{EQUIVALENCE_MARGIN} log10 units (a factor of "
        f"{10 ** EQUIVALENCE_MARGIN:.2f}) by two one-sided Wilcoxon signed-rank tests (TOST), reproduced "
        f"if p < {SIGNIFICANCE}; not reproduced only if non-equivalence at the margin is shown (one-sided "
        f"tests of d - margin > 0 or d + margin < 0, Bonferroni over the two directions). Fewer than "
        f"{MIN_SEEDS} paired seeds: inconclusive. 'Same queries' compares the stored queries (x, z) "
        f"of every iteration (tolerance {QUERY_TOLERANCE:g}); 'cheaper' compares per-cell median "
        f"acquisition time (t_acq_s). Multiplicity: within each claim (one variant, one statistic) the "
        f"p-values of its sub-claims, and those of the evidence against them, are Holm-adjusted "
        f"('p_holm', 'p_against_holm'; 'family' sub-claims), and 'verdict' is decided on the adjusted "
        f"values ('verdict_unadjusted' on the raw ones): each sub-claim reported as reproduced keeps "
        f"the 5 % familywise error. A claim's own verdict needs all its sub-claims, an "
        f"intersection-union test that is valid at 5 % even unadjusted; the adjustment makes it "
        f"stricter, not looser. 'effect_mean' and 'effect_sd' are the mean and sd of "
        f"the paired differences; 'power_10' is the power of the sub-claim's own test at 10 seeds and "
        f"'seeds_80' the seeds 80 % power would need (empty: more than 100), both by seeded Monte "
        f"Carlo under a normal model with the observed mean and sd, at the family's Bonferroni level "
        f"(the strictest of Holm's steps): planning figures, not evidence. 'verdict' is the "
        f"study's configuration ('default': no algorithm option, the default GP profile, {DEFAULT_GP}); "
        f"every other configuration found in the folder is a variant (its non-default settings: another "
        f"GP profile, an algorithm option, an algorithm standing in for another), tested the same way; "
        f"'changes' lists where a variant or "
        f"the second statistic gives another verdict on the sub-claims it covers, 'flipped' whether one "
        f"turns reproduced into not reproduced or back.")
    changed = [(row.claim, change) for row in verdicts.itertuples(index=False) if row.changes
               for change in row.changes.split("; ")]
    if changed:
        doc.heading("Where variants change a verdict", 3)
        doc.table(pd.DataFrame(changed, columns=["claim", "variant on problem: verdict changes"]))
    sensitivity = sensitivity_table(claims)
    if len(sensitivity) > 1:  # a variant beside the default
        doc.heading("Sensitivity: the verdict of each sub-claim under each variant", 3)
        doc.para("Each entry: verdict by the final / by the last-10 statistic; yes = reproduced, NO = not "
                 "reproduced, ? = inconclusive, - = not run.")
        doc.table(sensitivity)
    doc.heading("Every sub-claim", 3)
    shown = claims[["claim", "problem", "comparison", "statistic", "variant", "verdict", "verdict_unadjusted",
                    "n_seeds", "p_value", "p_holm", "p_against_holm", "effect", "effect_mean", "effect_sd",
                    "power_10", "seeds_80", "test", "data", "note"]]
    doc.table(shown)


def _provenance_section(doc: Document, results: Path, frame: pd.DataFrame, status: dict) -> None:
    """Where the cells come from (folder, grid, seeds, commits, Python, packages, the analysis's own
    environment), cells stored twice, failed and missing cells."""
    env = analysis_environment()
    doc.heading("Provenance")
    doc.bullets([
        f"results folder: {results}",
        f"grid: {status['grid'] or status.get('grid_damaged') or 'unknown (no _grid.json)'}, "
        f"{status['n_grid_cells']} cells",
        "seeds found: " + ", ".join(f"{k}: {v}" for k, v in _seeds_by_problem(frame).items()),
        "git commits of the cells: " + ", ".join(f"{k} ({v} cells)" for k, v in status["commits"].items()),
        "python of the cells: " + ", ".join(f"{k} ({v} cells)" for k, v in status["python"].items()),
        "kernels and CPUs of the cells (harness.kernels): " + "; ".join(status.get("hosts") or ["none"]),
        *[f"packages of {v} cells: {k}" for k, v in status["package_sets"].items()],
        f"analysis: git {env['git_commit']}, python {env['python']}, {json.dumps(env['packages'])}",
    ])
    if not status["duplicates"].empty:
        doc.heading("Cells stored twice", 3)
        doc.para("These cells are stored under two spec hashes with identical rows (e.g. a cell run alone "
                 "without --iterations, whose spec leaves T unset, and the grid's cell): each counts once, "
                 "with the rows of the file 'kept'.")
        doc.table(status["duplicates"])
    doc.heading("Failed cells", 3)
    doc.table(status["failed"], empty="No failure records.")
    doc.heading("Missing cells", 3)
    if status.get("grid_damaged"):
        no_missing = f"Missing cells cannot be listed: {status['grid_damaged']}."
    elif status["grid"]:
        no_missing = "None missing from the recorded grid."
    else:
        no_missing = ("No grid recorded (_grid.json), so missing cells cannot be listed; see the claims' "
                      "notes.")
    doc.table(status["missing"], empty=no_missing)


def conclusions(verdicts: pd.DataFrame) -> list[str]:
    """One plain sentence per claim that ran.

    A sentence gives the claim's default verdict, its second statistic's, and what the variants change.

    Args:
        verdicts: the claims' overall verdicts (:func:`analysis.claims.overall`).

    Returns:
        The sentences, in the claims' order, a claim that did not run and that no variant changes left out; a
        single sentence saying so where no claim has paired cells.
    """
    lines = []
    for row in verdicts.itertuples(index=False):
        if row.verdict == NOT_RUN and not row.changes and not row.where_default_not_run:
            continue
        text = f"{row.claim} ({row.statement}): {row.verdict} in the study's configuration"
        if row.verdict_last10 and row.verdict_last10 != row.verdict:
            text += f" ({row.verdict_last10} by the mean of the last iterations)"
        if row.changes:
            n = len(row.changes.split("; "))
            text += (f"; {n} variant(s) change it" + (", and one FLIPS it" if row.flipped else "")
                     + " (Claims in detail: where variants change a verdict)")
        elif row.verdict != NOT_RUN:
            text += "; no variant in the folder changes it"
        if row.where_default_not_run:
            text += (f"; where only variants ran, their verdicts are {row.where_default_not_run} "
                     "(see the sensitivity table)")
        lines.append(text + ".")
    return lines or ["No claim has paired cells in this folder."]


def _seeds_by_problem(frame: pd.DataFrame) -> dict[str, str]:
    seeds = frame.groupby("problem")["seed"].unique()
    return {p: seeds_text(s) for p, s in seeds.items()}
