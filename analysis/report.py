"""``python -m analysis.report RESULTS_DIR [--out DIR]``: figures, timing comparison and claims table.

Reads the stored rows of a results folder (complete or not) and writes to DIR (default
``RESULTS_DIR/_report``, which the results readers skip):

* ``report.md`` and ``report.html`` (one self-contained file, figures embedded);
* one figure per figure the study declares (named by it), ``fig_other`` (when some setting is outside
  the study's figures), ``fig_timing``: PNG and PDF;
* ``bands.csv`` / ``bands.parquet`` (mean log10 regret and its 70 % band per series and iteration),
  ``final_regret.csv`` (one row per cell), ``timing.csv``, ``timing_ratio.csv``, ``claims.csv``,
  ``claims_overall.csv``;
* for timing cells (a complexity grid's): ``fig_complexity``, ``complexity_slopes.csv`` and
  ``complexity_times.csv``, and a "Computational complexity" section.

Exit codes: 0 on success, 1 when a stored regret is below -1e-9 (the cell's optimum is wrong; the
message names the cells), 2 for bad input.

The report's pieces live in modules of their own: how it is written (:mod:`analysis.report_output`),
its BO sections (:mod:`analysis.report_sections`) and its other parts: aggregate, across problems,
reduced effort, complexity (:mod:`analysis.report_parts`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from analysis.across_runs import across_runs_section
from analysis.bands import band_table
from analysis.claim_cells import study_cells
from analysis.claims import claims_table, overall
from analysis.complexity import NO_COMPLEXITY
from analysis.data import (
    BEST_FOUND,
    DEFAULT_FLOOR,
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
from analysis.figure_styles import series_styles, shown_options
from analysis.figures import assign_figures, regret_figures, timing_figure, value_figure
from analysis.provenance import cell_status
from analysis.report_output import Document, csv_ready
from analysis.report_parts import (
    across_part,
    aggregate_section,
    aggregate_tables,
    complexity_section,
    effort_part,
)
from analysis.report_sections import document
from analysis.summary import final_summary
from analysis.timing import ratio_table, timing_table
from harness.cli import exit_with
from harness.frames import read_timings
from harness.results import MANIFEST, DamagedFileError, location, read_manifest
from harness.study import NO_STUDY, Study, load_study, study_of_grid
from problems.measures import DEFAULT_RISK, WORST_CASE

EXIT_NEGATIVE_REGRET = 1
EXIT_USAGE = 2


# ---------------------------------------------------------------------------------------------------
# the report


def build_report(results: Path, out: Path, floor: float = DEFAULT_FLOOR, study: Study | None = None,
                 also: tuple[Path, ...] = ()) -> dict[str, Path]:
    """Write every output of the report for ``results`` into ``out``.

    Args:
        results: the results folder.
        out: the report folder (created if missing).
        floor: the least regret drawn and tested (:func:`analysis.data.with_log_regret`).
        study: the study whose claims are tested (default: :func:`results_study` of ``results``, else of the
            first folder of ``also`` that has one).
        also: folders compared with, not rerun (:func:`read_frame`).

    Returns:
        The paths of the report's files by name (``report.md``, ``report.html``, each table's CSV, each
        figure's PNG and PDF, ...).

    Raises:
        NegativeRegretError: a stored regret below -1e-9 (:class:`~analysis.data.NegativeRegretError`).
        DuplicateCellError: a cell stored twice with different rows
            (:class:`~analysis.data.DuplicateCellError`).
        ValueError: a folder that holds no finished cell.
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
    if not frame.empty:
        if not duplicates.empty:
            print(f"analysis.report: {len(duplicates)} cell(s) stored twice with identical rows are counted "
                  "once (the report's Provenance lists them)", file=sys.stderr)
        n_cells = _bo_part(doc, results, out, frame, metas, floor, paths, duplicates, study, also)
    if not timings.empty:
        n_cells += complexity_section(doc, timings, out, paths, study.complexity or NO_COMPLEXITY)
    if also:  # what each joined run is, and whether its rows compare with this one's
        across_runs_section(doc, results, also, out, paths)
    paths["report.md"], paths["report.html"] = doc.write(out)
    elapsed = time.perf_counter() - started
    others = "" if not also else f" (and the rows of {', '.join(map(str, also))}, compared with)"
    print(f"analysis.report: {n_cells} cells of {results}{others}, {len(frame) + len(timings)} rows read "
          f"in {t_read:.1f} s; report written to {out} in {elapsed:.1f} s", file=sys.stderr)
    return paths


def read_frame(results: Path, floor: float = DEFAULT_FLOOR, also: tuple[Path, ...] = ()
               ) -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    """The BO rows of ``results`` as the report uses them, the cells' metadata and the cells stored twice.

    The rows are one file per cell, regret against the best found where no optimum is known, checked, with
    ``log10_regret``.

    Args:
        results: the results folder.
        floor: the least regret drawn and tested (:func:`analysis.data.with_log_regret`).
        also: folders whose rows join the comparison without being part of ``results`` (published rows, read,
            not rerun); a cell they share with ``results`` (same spec hash) counts once, from ``results``.

    Returns:
        (frame, metas, duplicates), where ``frame`` has one row per stored iteration of a cell
        (:func:`analysis.data.load_results`'s columns, with ``regret_basis``, ``at_floor`` and
        ``log10_regret``), ``metas`` is ``results``' own metadata by spec hash, and ``duplicates`` lists the
        cells stored twice with identical rows, counted once (:func:`analysis.data.drop_duplicate_cells`; an
        empty frame without columns where there are no rows).

    Raises:
        NegativeRegretError: a stored regret below -1e-9 (:func:`analysis.data.check_regret`).
        DuplicateCellError: a cell stored twice with different rows.
    """
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
    """The study a results folder belongs to.

    Args:
        results: the results folder.

    Returns:
        The study its grid record names (``_grid.json``'s ``study``), else the installed study that declares a
        grid of its grid's name, else :data:`~harness.study.NO_STUDY` (no claims).
    """
    grid = read_grid_record(results)
    if grid.get("study"):
        return load_study(grid["study"])
    return (study_of_grid(grid["grid"]) if grid.get("grid") else None) or NO_STUDY


def planned_series(grid: dict) -> frozenset[tuple[str, str, str]] | None:
    """The (problem, algorithm, target) of the cells of a grid record: what a figure's panel may say it lacks.

    A cell at an explicit alpha may be scored on the worst case (alpha below the smallest mass) as well as on
    its risk measure; a cell at the default alpha on its risk measure only.

    Args:
        grid: a grid record (:func:`read_grid_record`).

    Returns:
        The triples of the record's cells; None without a list of cells (no record, or a damaged one).
    """
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
    """The folder's ``_grid.json``: its grid's name and cells.

    Args:
        results: the results folder.

    Returns:
        The record as a dict (a ``grid`` or ``study`` that is not a string left out); ``{}`` when missing,
        unreadable or not a record (a damaged one is named by the report's provenance, not here).
    """
    try:
        record = json.loads((results / "_grid.json").read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict):  # damaged: the report's provenance says so
        return {}
    return {k: v for k, v in record.items() if k not in ("grid", "study") or isinstance(v, str)}


def report_tables(frame: pd.DataFrame, study: Study) -> dict[str, pd.DataFrame]:
    """Every table of the report's BO part: what the figures are drawn from and the claims decided on.

    Args:
        frame: the BO rows (:func:`read_frame`).
        study: the study whose claims are tested.

    Returns:
        The tables by the name of their CSV, ``bands`` (with each panel's ``figure`` first), ``final_table``,
        ``timing``, ``timing_ratio``, ``claims``, ``claims_overall``, ``lower_bounds``, ``aggregate_iqm``,
        ``aggregate_improvement``, ``aggregate_relative`` and ``final_regret`` (one row per cell), and
        ``panels``, the figures' layout (:func:`analysis.figures.assign_figures`), which is no CSV.
    """
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


def _bo_part(doc: Document, results: Path, out: Path, frame: pd.DataFrame, metas: dict, floor: float,
             paths: dict[str, Path], duplicates: pd.DataFrame, study: Study, also: tuple[Path, ...] = ()
             ) -> int:
    """Figures, tables and the report's sections for the BO cells; returns the number of cells of
    ``results`` (those of ``also``, compared with, are counted apart in the overview)."""
    tables = report_tables(frame, study)
    panels, bands = tables.pop("panels"), tables["bands"]
    status = cell_status(results, metas)
    status["duplicates"] = duplicates
    status["own_hashes"], status["also"] = set(metas), also
    for name, table in tables.items():
        paths[f"{name}.csv"] = out / f"{name}.csv"
        csv_ready(table).to_csv(paths[f"{name}.csv"], index=False)
    paths["bands.parquet"] = out / "bands.parquet"
    bands.to_parquet(paths["bands.parquet"], index=False)

    # a study that reads some options as its default (a reduced effort, a problem's own options)
    # labels its series by what it reads: the reduced effort plain, the full one as effort=full
    shown = (shown_options(study_cells(frame, study))
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
    document(doc, results, frame, tables["final_table"], panels, tables["claims"], tables["claims_overall"],
              tables["timing"], tables["timing_ratio"], status, figures, floor, tables["lower_bounds"], study)
    aggregate_section(doc, tables, study.baseline)
    if study.across_problems:
        across_part(doc, frame, study, out, paths, joined=bool(also))
    if study.reduced_effort:
        effort_part(doc, frame, study, out, paths)
    return int(status["n_done"])


# ---------------------------------------------------------------------------------------------------
# command line


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m analysis.report`` (also the documentation's CLI reference).

    Returns:
        The parser of ``results``, ``--out``, ``--floor``, ``--with`` and ``--study``.
    """
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


def not_a_run(folder: Path) -> str:
    """Why ``folder`` is not the results folder of one grid run, as ``--with`` wants it (a
    publication such as ``docs/reproduction/NAME``), or ``""``: it must record its grid
    (``_grid.json``) and hold cells or packs one level down (``PROBLEM/ALGORITHM/...``); a report's
    folder or a folder of several publications are neither.

    Args:
        folder: the folder given to ``--with``.

    Returns:
        The reason in a few words with the folder expected, or ``""``.
    """
    expected = "the folder of one grid run is expected, e.g. a publication (docs/reproduction/NAME)"
    try:
        manifest = read_manifest(folder)
    except DamagedFileError as error:
        return f"{error}; {expected}"
    if manifest is None:
        return f"not the results folder of a grid run (no {MANIFEST}); {expected}"
    if not any(folder.glob("*/*.parquet")) and not any(folder.glob("*/*/*.parquet")):
        return f"records grid {manifest[0]!r} but holds no cells; {expected}"
    return ""


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m analysis.report``: check the arguments, build the report, print its HTML's path.

    Args:
        argv: the command's arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit code, 0 done, :data:`EXIT_NEGATIVE_REGRET` for a folder whose data are wrong (a negative
        regret, a cell stored twice with different rows), :data:`EXIT_USAGE` for bad input (a folder that is
        missing or not a run, a bad floor or study, an out folder that cannot be written, no finished cell).
    """
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
    for folder in args.also:
        problem = not_a_run(folder)
        if problem:
            print(f"analysis.report: error: --with {folder}: {problem}", file=sys.stderr)
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
