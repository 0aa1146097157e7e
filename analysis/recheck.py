"""``python -m analysis.recheck FOLDER --claim C --problem P``: rerun every seed of the cells behind
one sub-claim of a published folder and say whether the rerun agrees with the publication, as
statistics: the check for a host where bits cannot match (another architecture, ``--native-kernels``).

    python -m analysis.recheck docs/reproduction/paper --claim C3 --problem hartmann-1-2-discrete

``harness.verify`` compares rows bit for bit, which holds on x86-64 hosts with AVX2 in the pinned
mode (:mod:`harness.kernels`). Elsewhere a run is another draw of the same random experiment, and
the contract is statistical: the rerun agrees when

* the sub-claim's verdict is the published one, decided by the same rules (:mod:`analysis.claims`:
  seed-paired tests, Holm within the claim, the claim's other problems as published), and
* each of its two series' mean final log10 regret over the rerun seeds lies within the published
  70 % band of that mean at the final iteration (:mod:`analysis.bands`).

The cells are the default configuration's (no algorithm option, the default GP profile, the
problem's own alpha) of the two algorithms the claim compares on that problem, every seed the
folder holds. It prints first how long they took when published (the sum of their recorded compute
times) and how long that is spread over ``--jobs`` processes, then reruns them one process each
(pinned as ``harness.run`` is, unless ``--native-kernels``), writing each finished cell under
``--out``: an interrupted recheck resumes where it stopped. ``--dry-run`` stops after the estimate.

This lives in ``analysis`` and not in ``harness.verify`` because it decides claims, which the engine
never does (the engine does not import the analysis).

Exit codes: 0 the rerun agrees; 1 it does not (or a cell failed); 2 bad input; 130 interrupted.
"""

from __future__ import annotations

import os
import signal
import sys

if __name__ == "__main__":
    signal.signal(signal.SIGINT, lambda *_: os._exit(130))  # while torch loads: nothing is open yet
    import harness.kernels

    harness.kernels.pin_process(sys.argv[1:])  # before numpy and torch load, as harness.run does

import dataclasses
import math
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import pandas as pd

from algorithms.gp import DEFAULT_GP
from analysis.bands import band_table
from analysis.claim_cells import DEFAULT_VARIANT
from analysis.claims import claims_table
from analysis.data import SERIES_KEYS, final_rows
from analysis.report import read_frame, results_study
from harness.cell import CellResult, run_cell
from harness.cli import EXIT_USAGE, Parser, UsageError, add_kernels_argument, exit_with, kernels_line
from harness.dry_run import duration_text
from harness.grid_cells import cell_label
from harness.results import cell_files, cell_path, check_cell_file, read_cell, spec_from_dict, spec_hash
from harness.spec import CellSpec
from harness.store import write_cell
from harness.study import Claim, PairComparison, Study

PROG = "python -m analysis.recheck"
EXIT_DISAGREES = 1
#: The columns of a cell's compute time in its rows.
TIMES = ("t_fit_s", "t_acq_s", "t_rec_s", "t_eval_s")


def _claim(study: Study, claim_id: str, problem: str) -> tuple[Claim, PairComparison]:
    """The claim and its comparison on ``problem``; :class:`UsageError` naming what exists."""
    claims = {c.id: c for c in study.claims}
    if claim_id not in claims:
        raise UsageError(f"no claim {claim_id!r} in study {study.name!r}; its claims: {', '.join(claims)}")
    claim = claims[claim_id]
    pairs = [c for c in claim.comparisons if isinstance(c, PairComparison) and c.kind in ("beats", "on_par")]
    if not pairs:
        raise UsageError(f"{claim_id} is not decided on regrets (it compares queries or times): "
                         "harness.verify reruns its cells bit for bit")
    on = [c for c in pairs if problem in c.problems]
    if not on:
        problems = sorted({p for c in pairs for p in c.problems})
        raise UsageError(f"{claim_id} has no sub-claim on {problem!r}; its problems: {', '.join(problems)}")
    if len(on) > 1:
        raise UsageError(f"{claim_id} compares {len(on)} pairs on {problem}; this command takes claims "
                         "with one pair per problem")
    return claim, on[0]


def chosen_cells(folder: Path, comparison: PairComparison, problem: str) -> list[tuple[CellSpec, float]]:
    """The default configuration's cells of the comparison's two algorithms on ``problem`` (every
    seed), each with its published compute seconds."""
    arms = {comparison.a, comparison.b}
    good, bad = cell_files(folder)
    if bad:
        raise UsageError(f"{bad[0][0]}: {bad[0][1]}")
    out = []
    for path, meta in good:
        spec = spec_from_dict(meta["spec"])
        if (spec.kind == "bo" and spec.problem == problem and spec.algorithm in arms and not spec.options
                and spec.alpha is None and spec.gp == DEFAULT_GP):
            out.append((spec, _compute_seconds(path)))
    if not out:
        raise UsageError(f"{folder} holds no default cells of {comparison.a} or {comparison.b} on {problem}")
    return sorted(out, key=lambda c: (c[0].algorithm, c[0].seed))


def _compute_seconds(path: Path) -> float:
    _, table = read_cell(path)
    frame = table.select(list(TIMES)).to_pandas()
    return float(frame.fillna(0.0).to_numpy().sum())


def _rerun(spec: CellSpec) -> CellResult:
    """One cell, in a worker process, on one torch thread (as the grid runs it)."""
    return run_cell(spec, threads=1)


def rerun(cells: list[CellSpec], out: Path, jobs: int) -> list[str]:
    """Rerun the cells not yet finished under ``out``, ``jobs`` at a time; returns the failures."""
    todo = [s for s in cells
            if not (cell_path(out, s).is_file() and check_cell_file(cell_path(out, s)) is None)]
    print(f"{len(cells) - len(todo)} of {len(cells)} already rerun in {out}; rerunning {len(todo)}",
          flush=True)
    failures = []
    context = multiprocessing.get_context("spawn")  # fresh processes: their libraries load pinned
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(todo) or 1)), mp_context=context) as pool:
        futures = {pool.submit(_rerun, spec): spec for spec in todo}
        try:
            for i, future in enumerate(as_completed(futures), start=1):
                spec = futures[future]
                try:
                    write_cell(out, spec, future.result())
                    print(f"[{i}/{len(todo)}] {cell_label(spec)}: done", flush=True)
                except Exception as error:  # a failed cell: one line, the others go on
                    failures.append(f"{cell_label(spec)}: {type(error).__name__}: {error}".splitlines()[0])
                    print(f"[{i}/{len(todo)}] failed: {failures[-1]}", flush=True)
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return failures


def compare(published: pd.DataFrame, rerun_frame: pd.DataFrame, hashes: set[str], study: Study,
            claim: Claim, problem: str) -> tuple[bool, list[str]]:
    """Whether the rerun agrees with the publication (see the module docstring), and the lines
    that say why. ``published``: the folder's frame (:func:`analysis.report.read_frame`);
    ``rerun_frame``: the rerun cells' frame, standing in for the cells of ``hashes``."""
    only = dataclasses.replace(study, claims=(claim,))
    swapped = pd.concat([published.loc[~published["spec_hash"].isin(hashes)], rerun_frame],
                        ignore_index=True)

    def row(frame: pd.DataFrame) -> pd.Series:
        table = claims_table(frame, only)
        mask = ((table["problem"] == problem) & (table["variant"] == DEFAULT_VARIANT)
                & (table["statistic"] == "final"))
        return table.loc[mask].iloc[0]

    before, after = row(published), row(swapped)
    lines = [f"verdict: published {before['verdict']} (p {before['p_holm']:.3g} after Holm, "
             f"{before['n_seeds']} seeds); rerun {after['verdict']} (p {after['p_holm']:.3g}, "
             f"{after['n_seeds']} seeds)"]
    agrees = before["verdict"] == after["verdict"]
    bands = band_table(final_rows(published.loc[published["spec_hash"].isin(hashes)]))
    means = final_rows(rerun_frame).groupby(SERIES_KEYS, dropna=False)["log10_regret"].mean()
    for series in bands.itertuples(index=False):
        key = tuple(getattr(series, k) for k in SERIES_KEYS)
        mean = means.get(key, math.nan)
        inside = series.lower <= mean <= series.upper
        agrees &= bool(inside)
        lines.append(f"{series.algorithm}: rerun mean final log10 regret {mean:.3f}, published "
                     f"{series.mean:.3f} with 70 % band [{series.lower:.3f}, {series.upper:.3f}]: "
                     f"{'inside' if inside else 'OUTSIDE'}")
    return agrees, lines


def build_parser() -> Parser:
    parser = Parser(prog=PROG, description="Rerun the cells behind one sub-claim of a published folder "
                    "and say whether the rerun agrees with it as statistics (the same verdict, each "
                    "series' mean final log10 regret within the published 70 % band).",
                    epilog="Exit codes: 0 agrees; 1 disagrees or a cell failed; 2 bad input; "
                    "130 interrupted.")
    parser.add_argument("folder", metavar="FOLDER", help="a published results folder (packed or not)")
    parser.add_argument("--claim", required=True, metavar="ID", help="the claim, e.g. C3")
    parser.add_argument("--problem", required=True, metavar="NAME",
                        help="its problem, e.g. hartmann-1-2-discrete")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="where the rerun cells go (default results/recheck/CLAIM-PROBLEM; resumes)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="cells at once, one process each (default: every CPU)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the cells and the estimate, run nothing")
    add_kernels_argument(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.jobs < 1:
            raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
        folder = Path(args.folder)
        if not folder.is_dir():
            raise UsageError(f"{folder} is not a folder")
        study = results_study(folder)
        claim, comparison = _claim(study, args.claim, args.problem)
        cells = chosen_cells(folder, comparison, args.problem)
    except UsageError as error:
        print(f"analysis.recheck: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    out = Path(args.out) if args.out else Path("results") / "recheck" / f"{args.claim}-{args.problem}"
    seconds = sum(s for _, s in cells)
    seeds = sorted({spec.seed for spec, _ in cells})
    jobs = min(args.jobs, len(cells))
    print(f"{args.claim} on {args.problem}: {comparison.a} vs {comparison.b}, {len(cells)} cells (seeds "
          f"{seeds[0]}-{seeds[-1]}); published, they took {duration_text(seconds)} of CPU time: about "
          f"{duration_text(seconds / jobs)} with {jobs} processes here (and a few seconds each to start); "
          f"{kernels_line()}", flush=True)
    if args.dry_run:
        return 0
    try:
        failures = rerun([spec for spec, _ in cells], out, args.jobs)
    except KeyboardInterrupt:
        print("analysis.recheck: interrupted; the same command resumes", file=sys.stderr)
        return 130
    if failures:
        print(f"analysis.recheck: {len(failures)} cells failed; the first: {failures[0]}", file=sys.stderr)
        return EXIT_DISAGREES
    published, _, _ = read_frame(folder)
    rerun_frame, _, _ = read_frame(out)
    hashes = {spec_hash(spec) for spec, _ in cells}
    agrees, lines = compare(published, rerun_frame.loc[rerun_frame["spec_hash"].isin(hashes)], hashes,
                            study, claim, args.problem)
    for line in lines:
        print(line)
    print(f"summary: the rerun {'agrees' if agrees else 'DOES NOT agree'} with the publication on "
          f"{args.claim} / {args.problem}")
    return 0 if agrees else EXIT_DISAGREES


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    exit_with(main)
