"""The parts of a report beside its BO sections, each with its CSVs, figures and section: the
aggregate views across problems (:mod:`analysis.aggregate`), the views across problems of a study
that asks for them (:mod:`analysis.across`), the effect of a study's reduced effort
(:mod:`analysis.effort`) and the complexity study of timing cells (:mod:`analysis.complexity`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis import across, across_figures
from analysis.aggregate import CONFIDENCE, RESAMPLES, improvement_table, iqm_table, relative_iqm_table
from analysis.claim_cells import study_cells
from analysis.complexity import EVALUATION_SUFFIX, NO_COMPLEXITY, median_table, slope_table, timing_points
from analysis.effort import effort_table
from analysis.figure_styles import colours
from analysis.figures import complexity_figure
from analysis.report_output import Document, csv_ready
from analysis.report_sections import MIXED_HOSTS
from analysis.subclaims import EQUIVALENCE_MARGIN
from harness.study import Complexity, Study


def effort_part(doc: Document, frame: pd.DataFrame, study: Study, out: Path, paths: dict[str, Path]) -> None:
    """What the study's reduced effort changes (:mod:`analysis.effort`): its CSV and section."""
    cells = study_cells(frame, study)
    table = effort_table(frame, cells)
    paths["effort.csv"] = out / "effort.csv"
    csv_ready(table).to_csv(paths["effort.csv"], index=False)
    doc.heading("Effect of the reduced effort")
    doc.para(f"This study runs {', '.join(study.reduced_effort)} at their declared reduced effort (their "
             "cells at it are the default configuration above); a sample of cells ran at full effort too "
             "(the variant effort=full). Per problem: the paired difference of final log10 regret, full - "
             "reduced (negative: the full effort ends lower), a two-sided Wilcoxon signed-rank test of no "
             f"difference, equivalence within +-{EQUIVALENCE_MARGIN} log10 by TOST, and the "
             "median ratio of seconds per iteration, full / reduced.")
    doc.table(table, empty="No cell ran at both efforts.")


#: The across-problems section's opening, for a reader of the report (the module's docstring says
#: the same for a reader of the code, with its references).
ACROSS_TEXT = ("Views across problems that benchmarking practice draws (performance profiles, average "
               "ranks with Friedman's test and a critical-difference diagram, cost against quality), "
               "from the cells of the study's configuration, one risk measure (target) at a time, a "
               "method and a problem meeting at equal (problem, alpha, target, T):")


def across_part(doc: Document, frame: pd.DataFrame, study: Study, out: Path, paths: dict[str, Path],
                joined: bool = False) -> None:
    """The views across problems (:mod:`analysis.across`): their CSVs, figures and section;
    ``joined``: other runs' rows are in ``frame`` (their seconds, on their hosts, are said to be)."""
    cells = study_cells(frame, study)
    ranks, friedman, pairs = across.rank_tables(cells)
    tables = {"across_profiles": across.profile_table(cells, study.baseline), "across_ranks": ranks,
              "across_friedman": friedman, "across_pairs": pairs,
              "across_cost_quality": across.cost_quality_table(frame, cells)}
    for name, table in tables.items():
        paths[f"{name}.csv"] = out / f"{name}.csv"
        csv_ready(table).to_csv(paths[f"{name}.csv"], index=False)
    colour = colours(sorted(frame["algorithm"].unique()), study.colours)
    figures = []
    if not tables["across_profiles"].empty:
        figures.append(across_figures.profile_figure(tables["across_profiles"], colour, study.baseline, out))
    if not friedman.empty:
        figures.append(across_figures.cd_figure(ranks, friedman, pairs, colour, out))
    if not tables["across_cost_quality"].empty:
        figures.append(across_figures.cost_quality_figure(tables["across_cost_quality"], colour, out))
    doc.heading("Across problems")
    doc.para(ACROSS_TEXT + (" " + MIXED_HOSTS if joined else ""))
    for name, title, fig_paths in figures:
        paths[f"{name}.png"], paths[f"{name}.pdf"] = fig_paths["png"], fig_paths["pdf"]
        doc.figure(title, fig_paths["png"], fig_paths["pdf"])
    doc.heading("Friedman's test per risk measure", 3)
    doc.table(friedman, empty="Fewer than two methods ran on every problem of a risk measure.")
    doc.heading("Pairwise tests (two-sided Wilcoxon signed-rank over the blocks, Holm-corrected)", 3)
    doc.table(pairs, empty="No pair to test.")
    doc.heading("Average rank per problem", 3)
    doc.table(ranks.pivot_table(index=["target", "problem"], columns="algorithm", values="mean_rank")
              .reset_index() if not ranks.empty else ranks)


def aggregate_tables(frame: pd.DataFrame, study: Study) -> dict[str, pd.DataFrame]:
    """The aggregate views of :mod:`analysis.aggregate`, against the study's baseline where it names one.

    Args:
        frame: the BO rows of the report (:func:`analysis.report.read_frame`).
        study: the study whose configuration and baseline are used.

    Returns:
        The tables by the name of their CSV, ``aggregate_iqm`` (:func:`analysis.aggregate.iqm_table`),
        ``aggregate_improvement`` (:func:`analysis.aggregate.improvement_table`) and ``aggregate_relative``
        (:func:`analysis.aggregate.relative_iqm_table`).
    """
    cells = study_cells(frame, study)
    return {"aggregate_iqm": iqm_table(cells), "aggregate_improvement": improvement_table(cells),
            "aggregate_relative": relative_iqm_table(cells, study.baseline)}


def aggregate_section(doc: Document, tables: dict[str, pd.DataFrame], baseline: str) -> None:
    """The report's aggregate section: probability of ending lower, IQM against the study's baseline,
    IQM per problem."""
    doc.heading("Aggregate across problems")
    doc.para(
        f"Views that do not depend on one pair's test (rliable's, Agarwal et al. 2021), from the "
        f"default-configuration cells; intervals are {CONFIDENCE:.0%} percentile bootstraps "
        f"(scipy.stats.bootstrap, {RESAMPLES} resamples, seeded; stratified: each method's seeds "
        "resampled within each problem). 'p_a_below_b': the probability that a run of A ends with a "
        "lower final log10 regret than a run of B (ties half), averaged over the problems both ran on, "
        "oriented so that it is at least 0.5. 'iqm_vs_baseline': the interquartile mean over every "
        f"(problem, seed) of a method's final log10 regret minus the median of the study's baseline's "
        f"({baseline or 'none'}) on that problem (negative: below the baseline, in decades). 'iqm': per "
        "problem, the "
        "interquartile mean of the final log10 regret over seeds.")
    doc.heading("Probability of ending lower", 3)
    doc.table(tables["aggregate_improvement"], empty="No two methods ran on one problem.")
    doc.heading(f"Final log10 regret against {baseline or 'a baseline'}", 3)
    doc.table(tables["aggregate_relative"], empty=f"No {baseline or 'baseline'} cells to compare with (the "
              "study names its baseline).")
    doc.heading("Interquartile mean per problem", 3)
    doc.table(tables["aggregate_iqm"])


def complexity_section(doc: Document, timings: pd.DataFrame, out: Path, paths: dict[str, Path],
                       complexity: Complexity = NO_COMPLEXITY) -> int:
    """The complexity study of the timing cells (a study's complexity grid), written into the report.

    The section has the log-log figures (proposals and fits; evaluations of the acquisition function apart,
    where timed), the fitted slopes next to the exponents of the study's formulas (``complexity``) and the
    median times; they are written to ``complexity_slopes.csv`` and ``complexity_times.csv`` too.

    Args:
        doc: the report being written.
        timings: the timing cells' rows (:func:`harness.frames.read_timings`).
        out: the report folder the files are written to.
        paths: the report's files by name, to which the CSVs and figures are added.
        complexity: the study's labels, formulas and note (:class:`harness.study.Complexity`).

    Returns:
        The number of timing cells (distinct spec hashes).
    """
    points = timing_points(timings, complexity=complexity)
    slopes = slope_table(points, complexity=complexity)
    medians = median_table(timings, complexity=complexity)
    for name, table in (("complexity_slopes", slopes), ("complexity_times", medians)):
        paths[f"{name}.csv"] = out / f"{name}.csv"
        csv_ready(table).to_csv(paths[f"{name}.csv"], index=False)
    evaluation = points["method"].str.endswith(EVALUATION_SUFFIX)
    figures = [complexity_figure(points.loc[~evaluation], slopes, out, "fig_complexity",
                                 "Complexity: one proposal and one GP fit against |D| and |Dz| "
                                 "(log-log, median and IQR)")]
    if evaluation.any():
        figures.append(complexity_figure(points.loc[evaluation], slopes, out, "fig_complexity_evaluation",
                                         "Complexity: one evaluation of the acquisition function on a "
                                         "fixed batch against |D| and |Dz| (log-log, median and IQR)"))
    for name, _, fig_paths in figures:
        paths[f"{name}.png"], paths[f"{name}.pdf"] = fig_paths["png"], fig_paths["pdf"]
    n_cells = int(timings["spec_hash"].nunique())
    doc.heading("Computational complexity")
    doc.para(
        f"{n_cells} timing cells (a complexity grid's): process CPU seconds of one "
        "proposal, of one evaluation of the acquisition function on a fixed batch of candidates "
        f"(methods labelled '{EVALUATION_SUFFIX.strip(': ')}'; as many as the algorithm declares) and of "
        "one maximum-likelihood GP fit on a GP conditioned on |D| noisy "
        "observations, each timed after one untimed warm-up, on one torch thread. A proposal makes as "
        "many evaluations as its optimizer needs, which depends on the state, so its curves are not "
        "clean power laws; an evaluation is fixed work. For a discrete Z, |Dz| is the size "
        "of the support; for a continuous Z, the number of Z samples per estimate. 'slope' is the "
        "least-squares slope of log10 time on log10 size with its 95% t interval (every repeat is a "
        "point); 'formula_slope' is the slope of the study's cost formula for the method over the same "
        "sizes, i.e. the exponent it predicts in the regime measured; 'formula_exponent' the exponent of "
        "its leading term (empty where the study declares none). Cells "
        "whose estimated proposal time exceeds the grid's cap are not run, so some curves stop early.")
    if complexity.note:
        doc.para(complexity.note)
    for _, title, fig_paths in figures:
        doc.figure(title, fig_paths["png"], fig_paths["pdf"])
    doc.heading("Fitted slopes", 3)
    doc.table(slopes.drop(columns=["formula_term"]))
    doc.heading("Median times", 3)
    doc.table(medians)
    return n_cells
