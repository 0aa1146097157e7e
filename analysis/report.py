"""``python -m analysis.report RESULTS_DIR [--out DIR]``: figures, timing comparison and claims table.

Reads the stored rows of a results folder (complete or not) and writes to DIR (default
``RESULTS_DIR/_report``, which the results readers skip):

* ``report.md`` and ``report.html`` (one self-contained file, figures embedded);
* ``fig3_discrete``, ``fig4_continuous``, ``fig5_simulated``, ``fig_alpha0``, ``fig_other`` (when some
  setting is outside the paper's figures), ``fig_timing``: PNG and PDF;
* ``bands.csv`` / ``bands.parquet`` (mean log10 regret and its 70 % band per series and iteration),
  ``final_regret.csv`` (one row per cell), ``timing.csv``, ``timing_ratio.csv``, ``claims.csv``,
  ``claims_overall.csv``;
* for timing cells (``--grid complexity``): ``fig_complexity``, ``complexity_slopes.csv`` and
  ``complexity_times.csv``, and a "Computational complexity" section.

Exit codes: 0 on success, 1 when a stored regret is below -1e-9 (the cell's optimum is wrong; the
message names the cells), 2 for bad input.
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import across, across_figures
from analysis import claims as claims_module
from analysis.aggregate import CONFIDENCE, RESAMPLES, improvement_table, iqm_table, relative_iqm_table
from analysis.bands import BAND_LEVEL, band_table
from analysis.claims import (
    EQUIVALENCE_MARGIN,
    MIN_SEEDS,
    QUERY_TOLERANCE,
    SIGNIFICANCE,
    claims_table,
    overall,
)
from analysis.complexity import EVALUATION_SUFFIX, NO_COMPLEXITY, median_table, slope_table, timing_points
from analysis.data import (
    BEST_FOUND,
    CELL_KEYS,
    DEFAULT_FLOOR,
    NEGATIVE_TOLERANCE,
    DuplicateCellError,
    NegativeRegretError,
    achieved,
    beaten_bounds,
    check_regret,
    drop_duplicate_cells,
    final_rows,
    load_results,
    normalise,
    regret_against_best_found,
    with_log_regret,
)
from analysis.effort import effort_table
from analysis.figures import (
    assign_figures,
    colours,
    complexity_figure,
    regret_figures,
    series_styles,
    shown_options,
    timing_figure,
    value_figure,
)
from analysis.provenance import analysis_environment, cell_status
from analysis.summary import final_summary, pivot_tables
from analysis.timing import ratio_table, timing_table
from harness.cli import exit_with
from harness.results import location, read_timings
from harness.study import NO_STUDY, Complexity, Study, load_study, study_of_grid
from problems.measures import DEFAULT_RISK, WORST_CASE

EXIT_NEGATIVE_REGRET = 1
#: Significant digits of the measured values in the report's CSV tables (full precision stays in
#: bands.parquet): the tables are read by people and compared at rtol 1e-9, and 17 digits made the
#: published bands.csv files a quarter larger, past the published folder's size budget.
CSV_DIGITS = 10
EXIT_USAGE = 2


# ---------------------------------------------------------------------------------------------------
# Markdown and HTML side by side


def _fmt(value: object) -> str:
    if isinstance(value, float | np.floating):
        if np.isnan(value):
            return ""
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
            return f"{value:.3e}"
        return f"{value:.4g}"
    return str(value)


def _slug(text: str) -> str:
    """A heading's anchor as GitHub renders Markdown ones: lower case, spaces to hyphens, only
    letters, digits, hyphens and underscores kept."""
    return "".join(c for c in text.lower().replace(" ", "-") if c.isalnum() or c in "-_")


class Document:
    """A report written once and rendered as Markdown and as self-contained HTML, with a table of
    contents of its second-level headings where :meth:`contents` is called."""

    def __init__(self, title: str) -> None:
        self.md: list[str] = [f"# {title}", ""]
        self.html: list[str] = [f"<h1>{html.escape(title)}</h1>"]
        self.title = title
        self.headings: list[tuple[int, str]] = []
        self._toc: tuple[int, int] | None = None  # where the contents go in md and html

    def contents(self) -> None:
        """The table of contents goes here (filled in by :meth:`write`)."""
        self._toc = (len(self.md), len(self.html))

    def heading(self, text: str, level: int = 2) -> None:
        self.headings.append((level, text))
        self.md += [f"{'#' * level} {text}", ""]
        self.html.append(f'<h{level} id="{_slug(text)}">{html.escape(text)}</h{level}>')

    def para(self, text: str) -> None:
        self.md += [text, ""]
        self.html.append(f"<p>{html.escape(text)}</p>")

    def bullets(self, items: list[str]) -> None:
        self.md += [f"- {item}" for item in items] + [""]
        self.html.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>")

    def table(self, frame: pd.DataFrame, empty: str = "(none)") -> None:
        if frame.empty:
            self.para(empty)
            return
        cells = [[_fmt(v).replace("|", "\\|").replace("\n", " ") for v in row]
                 for row in frame.itertuples(index=False)]  # report-sized tables only
        header = [str(c) for c in frame.columns]
        self.md += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        self.md += ["| " + " | ".join(row) + " |" for row in cells] + [""]
        body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>"
                       for row in frame.itertuples(index=False))
        head = "".join(f"<th>{html.escape(c)}</th>" for c in header)
        self.html.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")

    def figure(self, title: str, png: Path, pdf: Path) -> None:
        self.md += [f"![{title}]({png.name})", "", f"({pdf.name} for print)", ""]
        data = base64.b64encode(png.read_bytes()).decode()
        self.html.append(f'<figure><img alt="{html.escape(title)}" src="data:image/png;base64,{data}">'
                         f"<figcaption>{html.escape(title)}</figcaption></figure>")

    def write(self, out: Path) -> tuple[Path, Path]:
        md, body = list(self.md), list(self.html)
        if self._toc is not None:
            shown = [(level, text) for level, text in self.headings if level == 2]
            md[self._toc[0]:self._toc[0]] = (["**Contents**", ""]
                                             + [f"- [{t}](#{_slug(t)})" for _, t in shown] + [""])
            body.insert(self._toc[1], "<nav><b>Contents</b><ul>" + "".join(
                f'<li><a href="#{_slug(t)}">{html.escape(t)}</a></li>' for _, t in shown) + "</ul></nav>")
        md_path, html_path = out / "report.md", out / "report.html"
        md_path.write_text("\n".join(md))
        style = ("body{font-family:sans-serif;max-width:1200px;margin:auto;padding:1em}"
                 "table{border-collapse:collapse;font-size:12px;margin:0.5em 0}"
                 "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}"
                 "th{background:#eee}img{max-width:100%}nav{background:#f6f6f6;padding:0.3em 1em}"
                 "nav ul{margin:0.2em 0}")
        title = html.escape(self.title)
        html_path.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
                             f"<style>{style}</style></head><body>{''.join(body)}</body></html>")
        return md_path, html_path


# ---------------------------------------------------------------------------------------------------
# the report


def build_report(results: Path, out: Path, floor: float = DEFAULT_FLOOR, study: Study | None = None,
                 also: tuple[Path, ...] = ()) -> dict[str, Path]:
    """Write every output of the report for ``results`` into ``out``; returns the paths by name.
    ``study``: the study whose claims are tested (default: :func:`results_study` of ``results``, else
    of the first folder of ``also`` that has one). ``also``: folders compared with, not rerun
    (:func:`read_frame`).

    Raises :class:`~analysis.data.NegativeRegretError` when a stored regret is below -1e-9.
    """
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    frame, metas, duplicates = read_frame(results, floor, also)
    timings = read_timings(results)
    if frame.empty and timings.empty:
        raise ValueError(f"{results} holds no finished cells (no *.parquet outside '_'/'.' folders)")
    t_read = time.perf_counter() - started
    doc = Document(f"varbo-bench report: {results}")
    paths: dict[str, Path] = {}
    n_cells = 0
    if study is None:
        found = [results_study(folder) for folder in (results, *also)]
        study = next((s for s in found if s is not NO_STUDY), NO_STUDY)
    for folder in also:
        doc.para(f"Compared with the rows of {folder} (read, not rerun); a cell of both counts once, "
                 f"from {results}.")
    if not frame.empty:
        if not duplicates.empty:
            print(f"analysis.report: {len(duplicates)} cell(s) stored twice with identical rows are counted "
                  "once (the report's Provenance lists them)", file=sys.stderr)
        n_cells = _bo_part(doc, results, out, frame, metas, floor, paths, duplicates, study)
    if not timings.empty:
        n_cells += complexity_section(doc, timings, out, paths, study.complexity or NO_COMPLEXITY)
    paths["report.md"], paths["report.html"] = doc.write(out)
    elapsed = time.perf_counter() - started
    print(f"analysis.report: {n_cells} cells, {len(frame) + len(timings)} rows read in "
          f"{t_read:.1f} s; report written to {out} in {elapsed:.1f} s", file=sys.stderr)
    return paths


def read_frame(results: Path, floor: float = DEFAULT_FLOOR, also: tuple[Path, ...] = ()
               ) -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    """The BO rows of ``results`` as the report uses them (one file per cell, regret against the best
    found where no optimum is known, checked, with ``log10_regret``), the cells' metadata by spec
    hash, and the cells stored twice with identical rows (counted once).

    ``also``: folders whose rows join the comparison without being part of ``results`` (published
    rows, read, not rerun); a cell they share with ``results`` (same spec hash) counts once, from
    ``results``. The metadata returned is ``results``' own."""
    frame, metas = load_results(results)
    every = dict(metas)
    for folder in also:
        other, other_metas = load_results(folder)
        if not other.empty:
            other = other.loc[~other["spec_hash"].isin(set(frame.get("spec_hash", ())))]
            frame = pd.concat([f for f in (frame, other) if not f.empty], ignore_index=True)
        every = {**other_metas, **every}
    duplicates = pd.DataFrame()
    if not frame.empty:
        frame, duplicates = drop_duplicate_cells(frame, every)
        frame = regret_against_best_found(normalise(frame))
        check_regret(frame)
        frame = with_log_regret(frame, floor)
    return frame, metas, duplicates


def results_study(results: Path) -> Study:
    """The study a results folder belongs to: the one its grid record names (``_grid.json``'s
    ``study``), else the installed study that declares a grid of its grid's name, else none
    (:data:`~harness.study.NO_STUDY`: no claims)."""
    grid = read_grid_record(results)
    if grid.get("study"):
        return load_study(grid["study"])
    return (study_of_grid(grid["grid"]) if grid.get("grid") else None) or NO_STUDY


def planned_series(grid: dict) -> frozenset[tuple[str, str, str]] | None:
    """The (problem, algorithm, target) of the cells of a grid record (:func:`read_grid_record`),
    None without one (or with a damaged one): what a figure's panel may say it lacks. A cell at an
    explicit alpha may be scored on the worst case (alpha below the smallest mass) as well as on its
    risk measure; a cell at the default alpha on its risk measure only."""
    cells = grid.get("cells")
    if not isinstance(cells, list):
        return None
    out = set()
    for c in cells:
        if isinstance(c, dict) and "problem" in c and "algorithm" in c:
            risk = c.get("risk") or DEFAULT_RISK
            targets = (risk, WORST_CASE.name) if c.get("alpha") is not None else (risk,)
            out.update((c["problem"], c["algorithm"], target) for target in targets)
    return frozenset(out)


def read_grid_record(results: Path) -> dict:
    """The folder's ``_grid.json`` (its grid's name and cells), {} when missing, unreadable or not a
    record (a damaged one is named by the report's provenance, not here)."""
    try:
        record = json.loads((results / "_grid.json").read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict):  # damaged: the report's provenance says so
        return {}
    return {k: v for k, v in record.items() if k not in ("grid", "study") or isinstance(v, str)}


def report_tables(frame: pd.DataFrame, study: Study) -> dict[str, pd.DataFrame]:
    """Every table of the report's BO part, by the name of its CSV (and ``panels``, the figures'
    layout, which is no CSV): what the figures are drawn from and the claims of ``study`` decided
    on."""
    bands = band_table(frame)
    panels = assign_figures(bands, study.figures)
    bands = bands.merge(panels[["problem", "alpha", "target", "figure"]], on=["problem", "alpha", "target"])
    claims = claims_table(frame, study)
    timing = timing_table(frame)
    finals = final_rows(frame)
    return {
        "panels": panels,
        "bands": bands[["figure", *[c for c in bands.columns if c != "figure"]]],
        "final_table": final_summary(bands, timing), "timing": timing,
        "timing_ratio": ratio_table(timing, study),
        "claims": claims, "claims_overall": overall(claims, study), "lower_bounds": beaten_bounds(frame),
        **aggregate_tables(frame, study),
        "final_regret": finals[["problem", "algorithm", "options", "alpha", "target", "iterations", "seed",
                                "iteration", "regret", "regret_basis", "at_floor", "log10_regret"]],
    }


def _csv_ready(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its float values rounded to :data:`CSV_DIGITS` significant digits, except the
    keys (``alpha``: an alpha -> 0 level such as 2.6e-17 must join back exactly)."""
    out = table.copy()
    for column in out.columns:
        if column not in CELL_KEYS and pd.api.types.is_float_dtype(out[column]):
            out[column] = out[column].map(lambda v: float(f"{v:.{CSV_DIGITS}g}"))
    return out


def _bo_part(doc: Document, results: Path, out: Path, frame: pd.DataFrame, metas: dict, floor: float,
             paths: dict[str, Path], duplicates: pd.DataFrame, study: Study) -> int:
    """Figures, tables and the report's sections for the BO cells; returns the number of cells."""
    tables = report_tables(frame, study)
    panels, bands = tables.pop("panels"), tables["bands"]
    status = cell_status(results, metas)
    status["duplicates"] = duplicates
    for name, table in tables.items():
        paths[f"{name}.csv"] = out / f"{name}.csv"
        _csv_ready(table).to_csv(paths[f"{name}.csv"], index=False)
    paths["bands.parquet"] = out / "bands.parquet"
    bands.to_parquet(paths["bands.parquet"], index=False)

    # a study that reads some options as its default (a reduced effort, a problem's own options)
    # labels its series by what it reads: the reduced effort plain, the full one as effort=full
    shown = (shown_options(claims_module.study_cells(frame, study))
             if study.reduced_effort or study.problem_options else None)
    styles = series_styles(list(zip(frame["algorithm"], frame["options"], strict=True)), study.colours, shown)
    unknown = frame.loc[frame["regret_basis"] == BEST_FOUND]
    best_found = frozenset(unknown[["problem", "alpha", "target"]].itertuples(index=False, name=None))
    figures = regret_figures(bands, panels, styles, out, best_found, study.figures,
                             planned_series(read_grid_record(results)))
    if not unknown.empty:  # their true values, which do not depend on what else is in the folder
        values = unknown.assign(achieved=achieved(unknown))
        figures.append(value_figure(band_table(values, value="achieved"), styles, out))
    figures.append(timing_figure(tables["timing"], styles, out))
    for name, _, fig_paths in figures:
        paths[f"{name}.png"], paths[f"{name}.pdf"] = fig_paths["png"], fig_paths["pdf"]
    _document(doc, results, frame, tables["final_table"], panels, tables["claims"], tables["claims_overall"],
              tables["timing"], tables["timing_ratio"], status, figures, floor, tables["lower_bounds"], study)
    aggregate_section(doc, tables, study.baseline)
    if study.across_problems:
        across_part(doc, frame, study, out, paths)
    if study.reduced_effort:
        effort_part(doc, frame, study, out, paths)
    return int(status["n_done"])


def effort_part(doc: Document, frame: pd.DataFrame, study: Study, out: Path, paths: dict[str, Path]) -> None:
    """What the study's reduced effort changes (:mod:`analysis.effort`): its CSV and section."""
    cells = claims_module.study_cells(frame, study)
    table = effort_table(frame, cells)
    paths["effort.csv"] = out / "effort.csv"
    _csv_ready(table).to_csv(paths["effort.csv"], index=False)
    doc.heading("Effect of the reduced effort")
    doc.para(f"This study runs {', '.join(study.reduced_effort)} at their declared reduced effort (their "
             "cells at it are the default configuration above); a sample of cells ran at full effort too "
             "(the variant effort=full). Per problem: the paired difference of final log10 regret, full - "
             "reduced (negative: the full effort ends lower), a two-sided Wilcoxon signed-rank test of no "
             f"difference, equivalence within +-{claims_module.EQUIVALENCE_MARGIN} log10 by TOST, and the "
             "median ratio of seconds per iteration, full / reduced.")
    doc.table(table, empty="No cell ran at both efforts.")


def across_part(doc: Document, frame: pd.DataFrame, study: Study, out: Path, paths: dict[str, Path]) -> None:
    """The views across problems (:mod:`analysis.across`): their CSVs, figures and section."""
    cells = claims_module.study_cells(frame, study)
    ranks, friedman, pairs = across.rank_tables(cells)
    tables = {"across_profiles": across.profile_table(cells, study.baseline), "across_ranks": ranks,
              "across_friedman": friedman, "across_pairs": pairs,
              "across_cost_quality": across.cost_quality_table(frame, cells)}
    for name, table in tables.items():
        paths[f"{name}.csv"] = out / f"{name}.csv"
        _csv_ready(table).to_csv(paths[f"{name}.csv"], index=False)
    colour = colours(sorted(frame["algorithm"].unique()), study.colours)
    figures = []
    if not tables["across_profiles"].empty:
        figures.append(across_figures.profile_figure(tables["across_profiles"], colour, study.baseline, out))
    if not friedman.empty:
        figures.append(across_figures.cd_figure(ranks, friedman, pairs, colour, out))
    if not tables["across_cost_quality"].empty:
        figures.append(across_figures.cost_quality_figure(tables["across_cost_quality"], colour, out))
    doc.heading("Across problems")
    doc.para(across.__doc__.split("\n\n", 1)[0].replace("\n", " "))
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
    """The aggregate views of :mod:`analysis.aggregate`, by the name of their CSV (against the
    study's baseline where it names one)."""
    cells = claims_module.study_cells(frame, study)
    return {"aggregate_iqm": iqm_table(cells), "aggregate_improvement": improvement_table(cells),
            "aggregate_relative": relative_iqm_table(cells, study.baseline)}


def aggregate_section(doc: Document, tables: dict[str, pd.DataFrame], baseline: str) -> None:
    """The report's aggregate section: probability of ending lower, IQM against random search, IQM per
    problem."""
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
    """The complexity study of the timing cells (``--grid complexity``): the log-log figure, the
    fitted slopes next to the exponents of the study's formulas (``complexity``), the median times;
    ``complexity_slopes.csv`` and ``complexity_times.csv``. Returns the number of timing cells."""
    points = timing_points(timings, complexity=complexity)
    slopes = slope_table(points, complexity=complexity)
    medians = median_table(timings, complexity=complexity)
    for name, table in (("complexity_slopes", slopes), ("complexity_times", medians)):
        paths[f"{name}.csv"] = out / f"{name}.csv"
        _csv_ready(table).to_csv(paths[f"{name}.csv"], index=False)
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
        f"{n_cells} timing cells (python -m harness.run --grid complexity): process CPU seconds of one "
        "proposal, of one evaluation of the acquisition function on a fixed batch of candidates "
        f"(methods labelled '{EVALUATION_SUFFIX.strip(': ')}'; as many as the algorithm declares) and of "
        "one maximum-likelihood GP fit on a GP conditioned on |D| noisy "
        "observations, each timed after one untimed warm-up, on one torch thread. A proposal makes as "
        "many evaluations as its optimizer needs, which depends on the state, so its curves are not "
        "clean power laws; an evaluation is fixed work. For a discrete Z, |Dz| is the size "
        "of the support; for a continuous Z, the number of Z samples per estimate. 'slope' is the "
        "least-squares slope of log10 time on log10 size with its 95% t interval (every repeat is a "
        "point); 'formula_slope' is the slope of the study's cost formula for the method over the same "
        "sizes, i.e. the exponent it predicts in the regime measured; 'paper_exponent' the exponent of "
        "its leading term (empty where the study declares none). Cells "
        "whose estimated proposal time exceeds the grid's cap are not run, so some curves stop early.")
    if complexity.note:
        doc.para(complexity.note)
    for _, title, fig_paths in figures:
        doc.figure(title, fig_paths["png"], fig_paths["pdf"])
    doc.heading("Fitted slopes", 3)
    doc.table(slopes.drop(columns=["paper_term"]))
    doc.heading("Median times", 3)
    doc.table(medians)
    return n_cells


def _document(doc: Document, results: Path, frame: pd.DataFrame, summary: pd.DataFrame, panels: pd.DataFrame,
              claims: pd.DataFrame, verdicts: pd.DataFrame, timing: pd.DataFrame, ratios: pd.DataFrame,
              status: dict, figures: list, floor: float, bounds: pd.DataFrame, study: Study) -> None:
    """The report's BO sections, in order: what the folder holds, the regret curves, the final
    iteration, the claims, the timing, the claims in detail, the provenance."""
    _overview(doc, results, frame, status)
    _regret_section(doc, panels, figures, floor, study)
    _final_section(doc, frame, summary, bounds)
    _claims_section(doc, verdicts, study)
    _timing_section(doc, timing, ratios, figures)
    _claims_detail_section(doc, claims, verdicts, floor)
    _provenance_section(doc, results, frame, status)


def _overview(doc: Document, results: Path, frame: pd.DataFrame, status: dict) -> None:
    """The cells and rows read, the grid's counts, the table of contents."""
    # CELL_KEYS has the target: a CVaR cell and its VaR twin (same options and seed) are two cells
    n_cells = frame.groupby(CELL_KEYS, dropna=False).ngroups
    grid = status["grid"] or status.get("grid_damaged") or "no _grid.json"
    doc.para(f"{n_cells} cells ({len(frame)} rows) from {results}. Grid: {grid}"
             f" ({status['n_grid_cells']} cells listed); completed {status['n_done']}, "
             f"failed {status['n_failed']}, missing {status['n_missing']}.")
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
            "here is against the best true value any recommendation in this folder reached (as the "
            "paper did for robot pushing), and their panels say 'vs best found in folder': it changes "
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
             f"{claims_module.LAST_ITERATIONS} iterations ('verdict_last10'); 'flipped': whether a variant "
             "in the folder (another GP, beta, rho-KG^apx as released, ...) turns a verdict around. How "
             "each is tested, the variants and every sub-claim: 'Claims in detail' below.")
    doc.table(verdicts[["claim", "statement", "verdict", "verdict_last10", "sub-claims", "flipped"]])
    doc.heading("What the verdicts say", 3)
    doc.bullets(conclusions(verdicts))


def _timing_section(doc: Document, timing: pd.DataFrame, ratios: pd.DataFrame, figures: list) -> None:
    """The per-iteration times, their figure (the last of ``figures``) and the costlier / cheaper
    ratios of the pairs the study's "cheaper" claims name (:func:`analysis.timing.ratio_table`)."""
    doc.heading("Timing")
    doc.para("Per-iteration times over iterations >= 1 (median and interquartile range, seconds); total "
             "cell time = the sum of t_fit_s, t_acq_s, t_rec_s and t_eval_s over a cell's rows (median and "
             "IQR over cells). Ratios: for each pair a 'cheaper' claim of the study names, the costlier "
             "series' median / the cheaper series' median.")
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
        f"iteration's (the paper's), and 'last10', the mean over the last {claims_module.LAST_ITERATIONS} "
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
        f"paper's configuration ('default': no algorithm option, the paper's GP); every other "
        f"configuration found in the folder is a variant (its non-default settings, e.g. gp=borisk, "
        f"beta=authors, rhokg-apx-released), tested the same way; 'changes' lists where a variant or "
        f"the second statistic gives another verdict on the sub-claims it covers, 'flipped' whether one "
        f"turns reproduced into not reproduced or back.")
    changed = [(row.claim, change) for row in verdicts.itertuples(index=False) if row.changes
               for change in row.changes.split("; ")]
    if changed:
        doc.heading("Where variants change a verdict", 3)
        doc.table(pd.DataFrame(changed, columns=["claim", "variant on problem: verdict changes"]))
    sensitivity = claims_module.sensitivity_table(claims)
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
    """One plain sentence per claim that ran: its default verdict, its second statistic's, and what
    the variants change."""
    lines = []
    for row in verdicts.itertuples(index=False):
        if row.verdict == claims_module.NOT_RUN and not row.changes and not row.where_default_not_run:
            continue
        text = f"{row.claim} ({row.statement}): {row.verdict} in the paper's configuration"
        if row.verdict_last10 and row.verdict_last10 != row.verdict:
            text += f" ({row.verdict_last10} by the mean of the last iterations)"
        if row.changes:
            n = len(row.changes.split("; "))
            text += (f"; {n} variant(s) change it" + (", and one FLIPS it" if row.flipped else "")
                     + " (Claims in detail: where variants change a verdict)")
        elif row.verdict != claims_module.NOT_RUN:
            text += "; no variant in the folder changes it"
        if row.where_default_not_run:
            text += (f"; where only variants ran, their verdicts are {row.where_default_not_run} "
                     "(see the sensitivity table)")
        lines.append(text + ".")
    return lines or ["No claim has paired cells in this folder."]


def _seeds_by_problem(frame: pd.DataFrame) -> dict[str, str]:
    seeds = frame.groupby("problem")["seed"].unique()
    return {p: claims_module._seeds_text(s) for p, s in seeds.items()}


# ---------------------------------------------------------------------------------------------------
# command line


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m analysis.report`` (also the documentation's CLI reference)."""
    parser = argparse.ArgumentParser(
        prog="python -m analysis.report",
        description="Turn a results folder (finished or not) into figures with 70% bands, the timing "
                    "comparison and the claims table of its study, as Markdown and self-contained HTML.")
    parser.add_argument("results", help="a results folder or URI (python -m harness.run --out)")
    parser.add_argument("--out", type=Path, default=None,
                        help="report folder (default RESULTS/_report; for a URI, ./<name>-report)")
    parser.add_argument("--floor", type=float, default=DEFAULT_FLOOR,
                        help=f"regret at or below this is drawn and tested at it (default {DEFAULT_FLOOR:g})")
    parser.add_argument("--with", dest="also", action="append", default=[], metavar="FOLDER",
                        help="compare with the rows of another results folder (a published one: read, "
                             "not rerun); repeatable; its study is used when RESULTS has none")
    parser.add_argument("--study", default=None, metavar="NAME",
                        help="the study whose claims are tested: an installed study's name or an import "
                             "path MODULE:ATTR (default: the one the folder's grid belongs to, if any)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.results = location(args.results)
    except ValueError as error:
        print(f"analysis.report: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        args.also = tuple(location(folder) for folder in args.also)
    except ValueError as error:
        print(f"analysis.report: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    for folder in (args.results, *args.also):
        if not folder.is_dir():
            print(f"analysis.report: error: {folder} is not a folder", file=sys.stderr)
            return EXIT_USAGE
    if not args.floor > 0:
        print(f"analysis.report: error: --floor must be positive, got {args.floor}", file=sys.stderr)
        return EXIT_USAGE
    try:
        study = load_study(args.study) if args.study is not None else None
    except ValueError as error:
        print(f"analysis.report: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    local = isinstance(args.results, Path) and type(args.results).__module__ == "pathlib"
    default = args.results / "_report" if local else Path(f"{args.results.name}-report")
    out = args.out if args.out is not None else default
    try:  # a folder the report cannot write into: one line before anything is read or drawn
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-"):
            pass
    except OSError as error:
        hint = "" if args.out is not None else "; write it elsewhere with --out DIR"
        print(f"analysis.report: error: cannot write the report to {out}: {error.strerror or error}{hint}",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        build_report(args.results, out, args.floor, study, args.also)
    except (NegativeRegretError, DuplicateCellError) as error:  # the folder's data, not the command
        print(f"analysis.report: error: {error}", file=sys.stderr)
        return EXIT_NEGATIVE_REGRET
    except ValueError as error:
        print(f"analysis.report: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(out / "report.html")
    return 0


if __name__ == "__main__":
    exit_with(main)
