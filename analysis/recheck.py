"""``python -m analysis.recheck FOLDER --claim C --problem P``: rerun every seed of the cells behind
one sub-claim of a published folder and say whether the rerun agrees with the publication, as
statistics: the check for a host where bits cannot match (another architecture, ``--native-kernels``).

    python -m analysis.recheck docs/reproduction/FOLDER --claim CLAIM --problem PROBLEM

Without ``--claim`` it lists the claims decided on ``PROBLEM`` and runs nothing.

``harness.verify`` compares rows bit for bit, which holds on x86-64 hosts with AVX2 in the pinned
mode (:mod:`harness.kernels`). Elsewhere a run is another draw of the same random experiment, and
the contract is statistical: the rerun agrees when

* every sub-claim of the claim on that problem (each pair it compares there, of any kind: regrets,
  queries, times) has its published verdict, decided by the same rules (:mod:`analysis.claims`:
  seed-paired tests, Holm within the claim, the claim's other problems as published), and
* where a sub-claim compares regrets, each of its series' mean final log10 regret over the rerun
  seeds lies within the published 70 % band of that mean at the final iteration
  (:mod:`analysis.bands`).

The cells are those the sub-claims are decided on: their algorithms on that problem and risk
measure in the study's configuration (the options a study sets on the problem and the reduced
effort it runs an algorithm at count as its configuration; the default GP profile; the problem's own
alpha, or for a comparison of queries the alpha below the smallest mass), every seed the folder
holds. It prints first how long they took when published (the sum of their recorded compute
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
from analysis.claim_cells import DEFAULT_OPTIONS, DEFAULT_VARIANT, cell_settings
from analysis.claims import claims_table
from analysis.data import SERIES_KEYS, final_rows
from analysis.report import read_frame, results_study
from harness.cell import CellResult, run_cell
from harness.cli import EXIT_USAGE, Parser, UsageError, add_kernels_argument, exit_with, kernels_line
from harness.dry_run import duration_text
from harness.grid_cells import alpha_below_min_mass, cell_label
from harness.results import cell_files, cell_path, check_cell_file, read_cell, spec_from_dict, spec_hash
from harness.spec import CellSpec
from harness.store import write_cell
from harness.study import Claim, Comparison, Study
from problems.registry import PROBLEMS

PROG = "python -m analysis.recheck"
EXIT_DISAGREES = 1
#: The columns of a cell's compute time in its rows.
TIMES = ("t_fit_s", "t_acq_s", "t_rec_s", "t_eval_s")


def _claim(study: Study, claim_id: str, problem: str) -> tuple[Claim, list[Comparison]]:
    """The claim and its comparisons on ``problem``; :class:`UsageError` naming what exists."""
    claims = {c.id: c for c in study.claims}
    if claim_id not in claims:
        raise UsageError(f"no claim {claim_id!r} in study {study.name!r}; its claims: {', '.join(claims)}")
    claim = claims[claim_id]
    on = [c for c in claim.comparisons if problem in c.problems or (not c.problems and c.kind == "cheaper")]
    if not on:
        problems = sorted({p for c in claim.comparisons for p in c.problems})
        raise UsageError(f"{claim_id} has no sub-claim on {problem!r}; its problems: {', '.join(problems)}")
    return claim, on


def _list_claims(folder: Path, study: Study, problem: str) -> int:
    """Print the claims of ``study`` with a sub-claim on ``problem`` and the command that rechecks
    each; :class:`UsageError` where there is none.

    Returns:
        The exit code, 0.
    """
    named = {p for c in study.claims for k in c.comparisons for p in k.problems}
    if problem not in named and problem not in PROBLEMS:
        raise UsageError(f"no problem {problem!r}; the claims' problems: {', '.join(sorted(named))}")
    ids = [c.id for c in study.claims
           if any(problem in k.problems or (not k.problems and k.kind == "cheaper") for k in c.comparisons)]
    if not ids:
        raise UsageError(f"no claim of study {study.name!r} is decided on {problem!r}")
    print(f"the claims of {study.name} decided on {problem} (each: {PROG} {folder} --claim ID "
          f"--problem {problem}; add --dry-run for its cost first):")
    for claim in study.claims:
        if claim.id in ids:
            print(f"  {claim.id}: {claim.statement}")
    return 0


def _arms(comparison: Comparison) -> set[str]:
    """The algorithms a comparison's sub-claims are decided on."""
    return {*comparison.a, comparison.b} if isinstance(comparison.a, tuple) else {comparison.a, comparison.b}


def _wanted(spec: CellSpec, comparison: Comparison, problem: str, study: Study) -> bool:
    """Whether ``spec`` is a cell a sub-claim of ``comparison`` on ``problem`` is decided on."""
    alpha = alpha_below_min_mass(problem) if comparison.kind == "same_queries" else None
    risk = "var" if comparison.kind == "same_queries" else comparison.target
    return (spec.kind == "bo" and spec.problem == problem and spec.algorithm in _arms(comparison)
            and spec.risk == risk and spec.alpha == alpha and spec.gp == DEFAULT_GP
            and cell_settings(dict(spec.options), spec.algorithm, problem, study) == DEFAULT_OPTIONS)


def chosen_cells(folder: Path, study: Study, comparisons: list[Comparison],
                 problem: str) -> list[tuple[CellSpec, float]]:
    """The cells the sub-claims of ``comparisons`` on ``problem`` are decided on, every seed.

    They are chosen as the module docstring says.

    Args:
        folder: the published results folder.
        study: the study whose configuration the cells are chosen in.
        comparisons: the claim's comparisons on ``problem``.
        problem: the problem the sub-claims are decided on.

    Returns:
        (spec, published compute seconds) of each cell, sorted by algorithm, then seed.

    Raises:
        UsageError: a damaged cell file in ``folder``, or no cell of the comparisons' algorithms on
            ``problem`` in the study's configuration.
    """
    good, bad = cell_files(folder)
    if bad:
        raise UsageError(f"{bad[0][0]}: {bad[0][1]}")
    out = []
    for path, meta in good:
        spec = spec_from_dict(meta["spec"])
        if any(_wanted(spec, c, problem, study) for c in comparisons):
            out.append((spec, _compute_seconds(path)))
    if not out:
        arms = sorted(set().union(*(_arms(c) for c in comparisons)))
        raise UsageError(f"{folder} holds no cells of {', '.join(arms)} on {problem} in the study's "
                         "configuration")
    return sorted(out, key=lambda c: (c[0].algorithm, c[0].seed))


def _compute_seconds(path: Path) -> float:
    _, table = read_cell(path)
    frame = table.select(list(TIMES)).to_pandas()
    return float(frame.fillna(0.0).to_numpy().sum())


def _rerun(spec: CellSpec) -> CellResult:
    """One cell, in a worker process, on one torch thread (as the grid runs it)."""
    return run_cell(spec, threads=1)


def rerun(cells: list[CellSpec], out: Path, jobs: int) -> list[str]:
    """Rerun the cells not yet finished under ``out``, ``jobs`` at a time, one fresh process each.

    Each finished cell is written under ``out`` as it ends; a cell that fails is reported in one line and the
    others go on.

    Args:
        cells: the cells to rerun.
        out: the folder the rerun cells are written to (a rerun resumes from the cells it holds).
        jobs: the number of processes at once.

    Returns:
        One line per failed cell (its label, the error's type and the first line of its message), empty where
        every cell finished.
    """
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


#: The statistic each kind of sub-claim is decided on (its headline).
HEADLINE = {"beats": "final", "on_par": "final", "queries": "queries", "cheaper": "time"}


def _measure_words(data: str) -> str:
    """``", CVaR"`` for a sub-claim on another measure than the study's first (its ``data`` ends
    "... log10 regret of CVaR"), else ``""``."""
    tail = str(data).rsplit(": ", 1)[-1]
    return f", {tail.rsplit(' of ', 1)[1]}" if " of " in tail else ""


def compare(published: pd.DataFrame, rerun_frame: pd.DataFrame, hashes: set[str], study: Study,
            claim: Claim, problem: str) -> tuple[bool, list[str]]:
    """Whether the rerun agrees with the publication (see the module docstring), and the lines that say why.

    Args:
        published: the folder's frame (:func:`analysis.report.read_frame`).
        rerun_frame: the rerun cells' frame, standing in for the cells of ``hashes``.
        hashes: the spec hashes of the rerun cells.
        study: the study whose claim is tested.
        claim: the claim.
        problem: the problem its sub-claims are decided on.

    Returns:
        (agrees, lines), where ``agrees`` says whether every sub-claim has its published verdict and every
        series' rerun mean final log10 regret lies within its published 70 % band, and ``lines`` has one line
        per sub-claim (both verdicts) then one per series (the mean against the band).
    """
    only = dataclasses.replace(study, claims=(claim,))
    swapped = pd.concat([published.loc[~published["spec_hash"].isin(hashes)], rerun_frame],
                        ignore_index=True)

    def rows(frame: pd.DataFrame) -> pd.DataFrame:
        table = claims_table(frame, only)
        mask = (table["problem"] == problem) & (table["variant"] == DEFAULT_VARIANT)
        mask &= table["statistic"] == table["kind"].map(HEADLINE)
        table = table.loc[mask]
        # one pair may be compared on two measures (a VaR and a CVaR sub-claim on one problem): both
        # rows carry the same label, so the k-th row of a label is matched with the k-th, the table
        # listing the claim's comparisons in their declared order either way
        occurrence = table.groupby(["comparison", "statistic"]).cumcount()
        return table.set_index([table["comparison"], table["statistic"], occurrence])

    before, after = rows(published), rows(swapped)
    lines, agrees = [], True
    for key, old in before.iterrows():
        new = after.loc[key] if key in after.index else None
        same = new is not None and new["verdict"] == old["verdict"]
        agrees &= same
        rerun = ("missing" if new is None
                 else f"{new['verdict']} (p {new['p_holm']:.3g}, {new['n_seeds']} seeds)")
        lines.append(f"{key[0]} ({old['statistic']}{_measure_words(old['data'])}): published "
                     f"{old['verdict']} (p {old['p_holm']:.3g} after Holm, {old['n_seeds']} seeds); "
                     f"rerun {rerun}")
    bands = band_table(final_rows(published.loc[published["spec_hash"].isin(hashes)]))
    means = final_rows(rerun_frame).groupby(SERIES_KEYS, dropna=False)["log10_regret"].mean()
    for series in bands.itertuples(index=False):
        if not math.isfinite(series.mean):  # a series without regrets (queries only)
            continue
        key = tuple(getattr(series, k) for k in SERIES_KEYS)
        mean = means.get(key, math.nan)
        inside = series.lower <= mean <= series.upper
        agrees &= bool(inside)
        lines.append(f"{series.algorithm}: rerun mean final log10 regret {mean:.3f}, published "
                     f"{series.mean:.3f} with 70 % band [{series.lower:.3f}, {series.upper:.3f}]: "
                     f"{'inside' if inside else 'OUTSIDE'}")
    return agrees, lines


def build_parser() -> Parser:
    """The command line of ``python -m analysis.recheck``.

    Returns:
        The parser of ``FOLDER``, ``--claim``, ``--problem``, ``--out``, ``--jobs``, ``--dry-run`` and the
        kernels' option (:func:`harness.cli.add_kernels_argument`).
    """
    parser = Parser(prog=PROG, description="Rerun the cells behind one sub-claim of a published folder "
                    "and say whether the rerun agrees with it as statistics (the same verdict, each "
                    "series' mean final log10 regret within the published 70 % band).",
                    epilog="Exit codes: 0 agrees; 1 disagrees or a cell failed; 2 bad input; "
                    "130 interrupted.")
    parser.add_argument("folder", metavar="FOLDER", help="a published results folder (packed or not)")
    parser.add_argument("--claim", default=None, metavar="ID",
                        help="the claim's id, as the study declares it (the 'claim' column of the "
                             "folder's claims table); without it, the claims decided on --problem "
                             "are listed and nothing runs")
    parser.add_argument("--problem", required=True, metavar="NAME",
                        help="one of the problems the claim compares on, by its registered name")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="where the rerun cells go (default results/recheck/CLAIM-PROBLEM; resumes)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="cells at once, one process each (default: every CPU)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the cells and the estimate, run nothing")
    add_kernels_argument(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m analysis.recheck`` (module docstring).

    Without ``--claim`` it lists the claims decided on ``--problem``; with it, it prints the cells' published
    cost, reruns them (not with ``--dry-run``) and compares the rerun with the publication.

    Args:
        argv: the command's arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit code, 0 the rerun agrees (or a listing, or a dry run), :data:`EXIT_DISAGREES` it does not or
        a cell failed, :data:`harness.cli.EXIT_USAGE` bad input, 130 interrupted.
    """
    try:
        args = build_parser().parse_args(argv)
        if args.jobs < 1:
            raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
        folder = Path(args.folder)
        if not folder.is_dir():
            raise UsageError(f"{folder} is not a folder")
        study = results_study(folder)
        if args.claim is None:
            return _list_claims(folder, study, args.problem)
        claim, comparisons = _claim(study, args.claim, args.problem)
        cells = chosen_cells(folder, study, comparisons, args.problem)
    except UsageError as error:
        print(f"analysis.recheck: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    out = Path(args.out) if args.out else Path("results") / "recheck" / f"{args.claim}-{args.problem}"
    seconds = sum(s for _, s in cells)
    seeds = sorted({spec.seed for spec, _ in cells})
    jobs = min(args.jobs, len(cells))
    arms = ", ".join(sorted({spec.algorithm for spec, _ in cells}))
    print(f"{args.claim} on {args.problem}: {arms}, {len(cells)} cells (seeds "
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
