"""``python -m harness.verify FOLDER``: rerun cells of a results folder here and say whether their
rows are bit-identical to the stored ones.

    python -m harness.verify FOLDER [--sample N] [--cell LABEL_OR_PATTERN ...] [--seed S]

It picks ``--sample N`` BO cells of FOLDER at random (seeded by ``--seed`` through
:func:`problems.seeding.generator`, so the same folder gives the same sample), or the cells whose
label matches a ``--cell`` (the syntax of ``harness.run --only``: a glob if it has ``*?[``, else a
substring; with ``--sample`` too, N of those), reruns each with :func:`harness.cell.run_cell` in this
process on one torch thread, as the grid does, and compares the columns x, z, y, x_rec and regret of
every row exactly (floats bit for bit, lists element-wise). Timing cells are left out: their rows
are times.

First it compares versions: those pinned in ``FOLDER/constraints.txt`` (pip constraints) with what
is installed here, or, without that file, those each cell recorded in its provenance. Rows are
bit-identical only under the same versions; a difference is a warning, not an error. Then the
hosts: the kernels (pinned or native), torch's CPU kernels, the instruction-set level and the CPU
model each cell recorded, against this process's (:func:`harness.kernels.host_record`). The command
pins its own numerical libraries as the grid does (``--native-kernels`` opts out): pinned runs give
the same bits on any Intel x86-64 host with AVX2 (on another vendor's CPU it warns:
:func:`harness.kernels.pin_holds`).

On a CPU the pin does not cover (another vendor's than Intel's) differing bits are expected, not a
fault: the last line says so and names the statistical check, ``python -m analysis.recheck FOLDER
--problem P`` (which lists the claims decided on that problem), and the exit code is 3.

Exit codes: 0 every cell identical; 1 a cell differs (on a CPU the pin covers) or could not be
rerun; 2 bad input (one line on stderr); 3 cells differ where bits are not expected to match (a CPU
the pin does not cover), every other cell identical; 130 interrupted.
"""

from __future__ import annotations

import os
import signal
import sys


def _interrupted(*_: object) -> None:
    """Ctrl-C while torch loads: one line and exit 130 (as ``harness.run``; nothing is open)."""
    print("harness.verify: interrupted", file=sys.stderr, flush=True)
    os._exit(130)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, _interrupted)
    import harness.kernels

    # the rerun takes the publication's code path (harness.kernels), unless --native-kernels
    harness.kernels.pin_process(sys.argv[1:])

import math
import struct
import time
from dataclasses import dataclass

import torch

from harness.cell import run_cell
from harness.cli import EXIT_USAGE, Parser, UsageError, add_kernels_argument, exit_with, out_location
from harness.grid_cells import select
from harness.kernels import other_vendor
from harness.results import DamagedFileError, Location, cell_files, damaged, read_cell, spec_from_dict
from harness.spec import CellSpec
from harness.verify_env import Cell, host_report, version_report
from problems.seeding import generator

PROG = "python -m harness.verify"
EXIT_DIFFERS = 1
#: Cells differ on a CPU the pin does not cover (:func:`harness.kernels.pin_holds`): expected.
EXIT_NOT_COVERED = 3
EXIT_INTERRUPTED = 130
#: The columns compared, bit for bit.
COLUMNS = ("x", "z", "y", "x_rec", "regret")
#: Cells rerun when neither --sample nor --cell is given.
DEFAULT_SAMPLE = 3


@dataclass(frozen=True)
class Outcome:
    """A rerun cell's verdict: identical or not, its line, and where it first differs."""

    cell: Cell
    identical: bool
    line: str
    where: str = ""
    failed: bool = False  # could not be rerun (an error), as opposed to rows that differ


@dataclass(frozen=True)
class Difference:
    """The first value that differs: its iteration (row), column, stored and rerun values."""

    iteration: object
    column: str
    stored: object
    rerun: object


# ---------------------------------------------------------------------------------------------------
# the folder's cells and the choice among them


def folder_cells(folder: Location) -> list[Cell]:
    """Every cell file of ``folder``.

    Args:
        folder: the results folder.

    Returns:
        One :class:`Cell` per cell file, sorted by label (then path).

    Raises:
        UsageError: ``folder`` is not a folder or holds no cell files.
        DamagedFileError: a ``*.parquet`` file in it is not a readable cell file.
    """
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder")
    good, bad = cell_files(folder)
    if bad:  # verify reruns what a folder holds: any file that is not a readable cell of it is refused
        raise damaged(bad)
    if not good:
        raise UsageError(f"{folder} holds no cell files (python -m harness.run --grid NAME --out FOLDER "
                         "writes them)")
    cells = [Cell(path, spec_from_dict(meta["spec"]), meta) for path, meta in good]
    return sorted(cells, key=lambda c: (c.label, str(c.path)))


def sample(cells: list[Cell], n: int, seed: int) -> list[Cell]:
    """``n`` of ``cells`` drawn with the generator of ("harness.verify", ``seed``).

    The same folder and seed give the same sample.

    Args:
        cells: the cells to draw from.
        n: how many to draw.
        seed: the seed of the draw.

    Returns:
        The cells drawn (all if there are ``n`` or fewer), kept in the order of ``cells``.
    """
    if n >= len(cells):
        return list(cells)
    order = torch.randperm(len(cells), generator=generator("harness.verify", seed))
    return [cells[i] for i in sorted(order[:n].tolist())]


def choose(folder: Location, cells: list[Cell], patterns: list[str], n: int | None,
           seed: int) -> tuple[list[Cell], list[Cell]]:
    """The BO cells of ``folder`` to rerun, and the timing cells asked for but left out.

    A timing cell is asked for by a pattern. ``n`` draws among the matches (all of them when ``n`` is None and
    patterns are given, :data:`DEFAULT_SAMPLE` without patterns).

    Args:
        folder: the results folder, named in the errors.
        cells: its cells (:func:`folder_cells`).
        patterns: the ``--cell`` patterns (:func:`harness.grid_cells.select`), each of which must match a
            cell.
        n: the ``--sample`` size, or None.
        seed: the seed of the draw (:func:`sample`).

    Returns:
        (the BO cells to rerun, the timing cells left out), each in label order.

    Raises:
        UsageError: a pattern that matches no cell, or no BO cell to rerun.
    """
    if patterns:
        by_spec = {c.spec: c for c in cells}
        chosen: dict[CellSpec, Cell] = {}
        for pattern in patterns:
            matches = select(list(by_spec), pattern)
            if not matches:
                raise UsageError(f"--cell {pattern!r} matches no cell in {folder}")
            chosen.update((spec, by_spec[spec]) for spec in matches)
        pool = sorted(chosen.values(), key=lambda c: (c.label, str(c.path)))
    else:
        pool = cells
    bo = [c for c in pool if c.spec.kind == "bo"]
    timing = [c for c in pool if c.spec.kind != "bo"] if patterns else []
    if not bo:
        raise UsageError("no BO cell to rerun: timing cells are not comparable (their rows are times)")
    if n is None:
        n = len(bo) if patterns else DEFAULT_SAMPLE
    return sample(bo, n, seed), timing


# ---------------------------------------------------------------------------------------------------
# comparing rows


def same(a: object, b: object) -> bool:
    """Whether two stored values are identical.

    Floats compare bit for bit (NaN equals NaN), lists element-wise, and None equals None only.

    Args:
        a: the stored value.
        b: the rerun value.

    Returns:
        True for identical values.
    """
    if isinstance(a, list | tuple) or isinstance(b, list | tuple):
        return (isinstance(a, list | tuple) and isinstance(b, list | tuple) and len(a) == len(b)
                and all(same(x, y) for x, y in zip(a, b, strict=True)))
    if a is None or b is None:
        return a is None and b is None
    a, b = float(a), float(b)
    return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))


def abs_difference(a: object, b: object) -> float:
    """The largest ``|a - b|`` over the finite numbers both hold at the same place.

    Args:
        a: the stored value (a number, a list, or None).
        b: the rerun value.

    Returns:
        The difference, 0 if no place holds finite numbers in both.
    """
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return max((abs_difference(x, y) for x, y in zip(a, b, strict=False)), default=0.0)
    if isinstance(a, int | float) and isinstance(b, int | float) and math.isfinite(a) and math.isfinite(b):
        return abs(float(a) - float(b))
    return 0.0


def compare_rows(stored: list[dict], rerun: list[dict]) -> tuple[Difference | None, float]:
    """The first difference between the stored and the rerun rows, and the largest absolute difference.

    Args:
        stored: the stored rows, one dict per iteration.
        rerun: the rerun rows.

    Returns:
        (difference, largest), where ``difference`` is the first value of :data:`COLUMNS` that is not
        identical (in row order), or a difference of the row counts, or None if every value is identical and
        the row counts agree; ``largest`` is the largest absolute difference (:func:`abs_difference`).
    """
    first, largest = None, 0.0
    for old, new in zip(stored, rerun, strict=False):
        for column in COLUMNS:
            largest = max(largest, abs_difference(old.get(column), new.get(column)))
            if first is None and not same(old.get(column), new.get(column)):
                first = Difference(old.get("iteration"), column, old.get(column), new.get(column))
    if first is None and len(stored) != len(rerun):
        first = Difference(min(len(stored), len(rerun)), "rows", len(stored), len(rerun))
    return first, largest


def verify_cell(cell: Cell) -> Outcome:
    """Rerun ``cell`` and compare its rows with the stored ones.

    Args:
        cell: the cell.

    Returns:
        Its :class:`Outcome`, identical, differing (where first), or failed (could not be rerun), with its
        line.
    """
    _, table = read_cell(cell.path)
    start = time.perf_counter()
    try:
        result = run_cell(cell.spec)
    except Exception as error:  # the cell's own failure, one line (KeyboardInterrupt passes)
        text = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return Outcome(cell, False, f"{cell.label}: could not be rerun: {type(error).__name__}: {text}",
                       "could not be rerun", failed=True)
    seconds = time.perf_counter() - start
    difference, largest = compare_rows(table.to_pylist(), result.rows)
    if difference is None:
        return Outcome(cell, True, f"{cell.label}: identical ({len(result.rows)} rows, columns "
                       f"{', '.join(COLUMNS)}; max abs difference 0; rerun {seconds:.1f} s)")
    resumed = (cell.meta.get("provenance") or {}).get("resumed_at")
    note = f"; the stored run resumed after iteration {resumed}" if resumed is not None else ""
    where = f"at iteration {difference.iteration}, column {difference.column}"
    return Outcome(cell, False, f"{cell.label}: DIFFERS {where}: stored {difference.stored!r} vs rerun "
                   f"{difference.rerun!r} (max abs difference {largest:.3g} over the cell{note})", where)


# ---------------------------------------------------------------------------------------------------
# the command


def build_parser() -> Parser:
    """The command's arguments (:class:`harness.cli.Parser`: one-line errors, no abbreviations).

    Returns:
        The parser of ``FOLDER``, ``--sample``, ``--cell``, ``--seed``, ``--claim`` and ``--problem`` (which
        point to ``analysis.recheck``) and the kernels' option.
    """
    parser = Parser(prog=PROG, description="Rerun cells of a results folder and check that their rows "
                    "are bit-identical to the stored ones.", epilog="Exit codes: 0 every cell identical; "
                    "1 a cell differs or could not be rerun; 2 bad input; 130 interrupted.")
    parser.add_argument("folder", metavar="FOLDER", help="a results folder (harness.run --out)")
    parser.add_argument("--sample", type=int, default=None, metavar="N",
                        help=f"rerun N cells drawn at random (default {DEFAULT_SAMPLE}; with --cell: "
                        "N of the matching cells, default all of them)")
    parser.add_argument("--cell", action="append", default=[], metavar="LABEL_OR_PATTERN",
                        help="rerun the cells whose label 'problem/algorithm/seedN [..]' matches (a glob "
                        "if it has *?[, else a substring; as harness.run --only); repeatable")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the sample (default 0)")
    # the statistical check decides claims, which the engine never does: it is analysis.recheck, and
    # --claim here says so in one line rather than "unrecognized arguments"
    parser.add_argument("--claim", default=None, metavar="C", help="not here: the statistical check of "
                        "one sub-claim (for hosts where bits cannot match) is python -m analysis.recheck "
                        "FOLDER --claim C --problem P")
    parser.add_argument("--problem", default=None, metavar="P", help="with --claim: see --claim")
    add_kernels_argument(parser)
    return parser


def plan(argv: list[str] | None) -> tuple[Location, list[Cell], list[Cell], list[Cell]]:
    """The folder, its cells, the cells to rerun and the timing cells left out, from ``argv``.

    Args:
        argv: the command's arguments (default: ``sys.argv[1:]``).

    Returns:
        (folder, every cell of it, the cells to rerun, the timing cells left out).

    Raises:
        UsageError: bad input (``--claim`` or ``--problem``, a bad sample size or seed, a bad folder or
            pattern).
        DamagedFileError: a ``*.parquet`` file in the folder that is not a readable cell file.
    """
    args = build_parser().parse_args(argv)
    if args.claim is not None or args.problem is not None:
        raise UsageError(f"the statistical check of a claim is python -m analysis.recheck {args.folder} "
                         f"--claim {args.claim or 'C'} --problem {args.problem or 'PROBLEM'} "
                         "(harness.verify compares rows bit for bit)")
    if args.sample is not None and args.sample < 1:
        raise UsageError(f"--sample must be >= 1, got {args.sample}")
    if args.seed < 0:
        raise UsageError(f"--seed must be >= 0, got {args.seed}")
    folder = out_location(args.folder)
    cells = folder_cells(folder)
    chosen, timing = choose(folder, cells, args.cell, args.sample, args.seed)
    return folder, cells, chosen, timing


def run(chosen: list[Cell]) -> list[Outcome]:
    """Rerun and compare each cell on one torch thread (the caller's count restored after).

    A progress line comes before each cell and its verdict after.

    Args:
        chosen: the cells to rerun.

    Returns:
        Their outcomes, in order.
    """
    outcomes = []
    previous = torch.get_num_threads()
    torch.set_num_threads(1)  # as the grid's workers: a cell's rows are defined at one thread
    try:
        for i, cell in enumerate(chosen, start=1):
            print(f"[{i}/{len(chosen)}] {cell.label}: rerunning {cell.meta.get('iterations')} "
                  f"iterations ...", flush=True)
            outcome = verify_cell(cell)
            print(f"[{i}/{len(chosen)}] {outcome.line}", flush=True)
            outcomes.append(outcome)
    finally:
        torch.set_num_threads(previous)
    return outcomes


def summary(outcomes: list[Outcome]) -> str:
    """The last line: how many cells are identical, and the first that is not, with where.

    Args:
        outcomes: the reruns' outcomes.

    Returns:
        The line.
    """
    bad = [o for o in outcomes if not o.identical]
    if not bad:
        return f"summary: all {len(outcomes)} cells identical"
    return (f"summary: {len(bad)} of {len(outcomes)} cells not identical; the first: {bad[0].cell.label} "
            f"{bad[0].where}")


def expected_here(folder: Location, outcomes: list[Outcome], vendor: str | None = None) -> str:
    """The last line where cells differ on a CPU the pin does not cover (``vendor``, default this
    host's: :func:`harness.kernels.other_vendor`), else ``""``: differing bits are expected there,
    and the claims' statistics are the check (``analysis.recheck``, given a differing cell's problem).

    Args:
        folder: the folder verified, as the command line gave it.
        outcomes: the reruns' verdicts.
        vendor: the CPU's vendor string (default: read from this host).

    Returns:
        The line, or ``""`` where every cell is identical, one failed to rerun, or the pin holds.
    """
    vendor = other_vendor(vendor)
    bad = [o for o in outcomes if not o.identical]
    if not vendor or not bad or any(o.failed for o in bad):
        return ""
    return (f"expected on this CPU ({vendor}): the pin gives the published bits on Intel CPUs only, so "
            f"rows that part here are not a fault; the check for this host is statistical: python -m "
            f"analysis.recheck {folder} --problem {bad[0].cell.spec.problem} lists the claims decided "
            "on that problem, and with --claim reruns one")


def main(argv: list[str] | None = None) -> int:
    """The command (see the module docstring).

    Args:
        argv: the command's arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit code, 0 every cell identical, :data:`EXIT_DIFFERS` a cell differs or could not be rerun,
        :data:`EXIT_NOT_COVERED` cells differ on a CPU the pin does not cover, :data:`harness.cli.EXIT_USAGE`
        bad input, :data:`EXIT_INTERRUPTED` interrupted.
    """
    try:
        folder, cells, chosen, timing = plan(argv)
    except (UsageError, DamagedFileError) as error:
        print(f"harness.verify: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    bo = [c for c in cells if c.spec.kind == "bo"]
    for line in [*version_report(folder, chosen), *host_report(chosen)]:
        print(line)
    print(f"{folder}: {len(bo)} BO cells, {len(cells) - len(bo)} timing cells; rerunning {len(chosen)}")
    for cell in timing:
        print(f"{cell.label}: left out: a timing cell, its rows are times and not comparable")
    try:
        outcomes = run(chosen)
    except KeyboardInterrupt:
        print("harness.verify: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except DamagedFileError as error:  # a file damaged since the folder was read
        print(f"harness.verify: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(summary(outcomes))
    if all(o.identical for o in outcomes):
        return 0
    expected = expected_here(folder, outcomes)
    if expected:
        print(expected)
        return EXIT_NOT_COVERED
    return EXIT_DIFFERS


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)  # from here on Ctrl-C is KeyboardInterrupt
    try:
        exit_with(main)
    except KeyboardInterrupt:
        print("harness.verify: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
