"""The command-line arguments of a grid run (``python -m harness.run --grid NAME|FILE``, ``--list``):
the parser, its options (also ``python -m harness.run --help``'s grid section), and the grid and
cells they choose (:func:`grid_and_cells`), bad input raising a one-line
:class:`~harness.cli.UsageError`. It imports no Ray: ``--help`` reads it.
"""

from __future__ import annotations

import argparse
import math

from algorithms.gp import GP_PROFILES
from harness.cell import CHECKPOINT_EVERY_S, CellSpec
from harness.cli import Parser, UsageError, add_kernels_argument
from harness.grid import named_grids, resolve_grid, with_overrides
from harness.grid_cells import Grid, GridError, select
from harness.spec import RISKS


def grid_help() -> str:
    """The help of ``--grid``, naming the named grids (the engine's and the installed studies').

    Returns:
        The help text.
    """
    return f"a named grid ({', '.join(named_grids())}) or a TOML grid file"
LIST_HELP = ("print the named grids and their sizes, and the registered algorithms with the kinds of Z "
             "they handle and their options")


def seeds_argument(text: str) -> int | list[int]:
    """``--seeds``: a count (``10``) or a comma-separated list of seeds (``0,3,7``).

    Args:
        text: the argument.

    Returns:
        The count as an int, or the seeds as a list of ints.

    Raises:
        argparse.ArgumentTypeError: text that is neither.
    """
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count or a list such as 0,3,7, got {text!r}") from None
    return values[0] if "," not in text else values


def positive_seconds(text: str) -> float:
    """``--checkpoint-every-s``: a positive, finite number of seconds.

    Args:
        text: the argument.

    Returns:
        The seconds.

    Raises:
        argparse.ArgumentTypeError: text that is not a positive, finite number.
    """
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def add_grid_options(container: argparse._ActionsContainer) -> None:
    """The options of a grid run besides ``--grid`` (a parser or an argument group)."""
    container.add_argument("--study", default=None, metavar="NAME|MODULE:ATTR|FILE.toml",
                           help="a study whose grids --grid may name (an installed study's are named "
                                "already); recorded with the results, whose report tests its claims")
    container.add_argument("--out", default=None, metavar="DIR|URI",
                           help="results folder or URI: s3://, gs://, file:// (default results/<grid>)")
    container.add_argument("--seeds", type=seeds_argument, default=None, metavar="N|LIST",
                           help="seeds 0..N-1 for every cell group, or a comma-separated list of seeds "
                                "(0,3,7), as a grid file's seeds")
    container.add_argument("--iterations", type=int, default=None, metavar="T",
                           help="iterations of every cell")
    container.add_argument("--gp", default=None, metavar="PROFILE",
                           help=f"GP profile of every cell: {', '.join(GP_PROFILES)} (default: the grid's)")
    container.add_argument("--risk", default=None, choices=RISKS,
                           help="risk measure of every cell whose algorithm optimizes it; the grid "
                                "leaves out the others and says so (default: the grid's, var)")
    container.add_argument("--only", default=None, metavar="PATTERN",
                           help="run only cells whose label 'problem/algorithm/seedN [risk=..] [alpha=..] "
                                "[T=..]' matches (glob if it has *?[, else substring)")
    container.add_argument("--address", default=None, metavar="ADDR",
                           help="join this Ray cluster (default: a local Ray)")
    container.add_argument("--num-cpus", type=int, default=None, metavar="N",
                           help="CPUs of the local Ray (default: all of this machine's)")
    container.add_argument("--max-in-flight", type=int, default=None, metavar="N",
                           help="tasks submitted at once (default: twice the cluster's CPUs)")
    container.add_argument("--dry-run", action="store_true",
                           help="run nothing, write nothing: print per group of cells (problem, algorithm, "
                                "alpha, T, gp, risk, options) how many are done / to run / failed / not "
                                "available and their estimated CPU minutes, then a cost estimate")
    container.add_argument("--verbose", action="store_true",
                           help="with --dry-run: also list every cell, its state and its estimate")
    container.add_argument("--json", action="store_true",
                           help="with --dry-run: print the plan as one JSON object on stdout (every cell "
                                "with its spec, hash, state and estimated seconds), for other schedulers")
    container.add_argument("--retry-failed", action="store_true", help="rerun only the failed cells")
    container.add_argument("--force", action="store_true", help="recompute finished cells too")
    container.add_argument("--no-progress", action="store_true", help="no progress bar")
    container.add_argument("--no-checkpoints", action="store_true",
                           help="keep no checkpoints: an interrupted cell reruns from its start, so that "
                                "no row depends on where a run was interrupted (a published run)")
    container.add_argument("--checkpoint-every-s", type=positive_seconds, default=CHECKPOINT_EVERY_S,
                           metavar="S", help=f"a running cell's checkpoint at most every S seconds (default "
                           f"{CHECKPOINT_EVERY_S:g}): a fault then costs at most S seconds of the cell's "
                           "work; each checkpoint costs a write (rows do not depend on S; no effect with "
                           "--no-checkpoints)")
    add_kernels_argument(container)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m harness.run --grid``.

    Returns:
        The parser of ``--grid`` or ``--list`` and the grid options (:func:`add_grid_options`).
    """
    parser = Parser(prog="python -m harness.run --grid", description="Run a grid of cells on Ray.",
                    epilog="python -m harness.run --help: both modes, one cell and a grid.")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--grid", metavar="NAME|FILE", help=grid_help())
    what.add_argument("--list", action="store_true", help=LIST_HELP)
    add_grid_options(parser)
    return parser


def grid_and_cells(args: argparse.Namespace) -> tuple[Grid, list[CellSpec]]:
    """The grid after ``--seeds``, ``--iterations``, ``--gp``, ``--risk``, and its cells after ``--only``.

    Args:
        args: the parsed arguments.

    Returns:
        (grid, cells), the cells in the grid's order.

    Raises:
        UsageError: a bad value or a bad combination of options, a bad grid, or an ``--only`` that matches no
            cell.
    """
    if isinstance(args.seeds, int) and args.seeds < 1:
        raise UsageError(f"--seeds must be >= 1, got {args.seeds}")
    if args.iterations is not None and args.iterations < 0:
        raise UsageError(f"--iterations must be >= 0, got {args.iterations}")
    if args.gp is not None and args.gp not in GP_PROFILES:
        raise UsageError(f"unknown GP profile {args.gp!r}; valid: {', '.join(GP_PROFILES)}")
    if args.num_cpus is not None and args.num_cpus < 1:
        raise UsageError(f"--num-cpus must be >= 1, got {args.num_cpus}")
    if args.max_in_flight is not None and args.max_in_flight < 1:
        raise UsageError(f"--max-in-flight must be >= 1, got {args.max_in_flight}")
    if args.address and args.num_cpus:
        raise UsageError("--num-cpus sizes a local Ray; it cannot be combined with --address")
    if args.force and args.retry_failed:
        raise UsageError("--force and --retry-failed exclude each other")
    if args.verbose and not args.dry_run:
        raise UsageError("--verbose lists the cells of a --dry-run; add --dry-run")
    if args.json and not args.dry_run:
        raise UsageError("--json prints the plan of a --dry-run; add --dry-run")
    try:
        grid = with_overrides(resolve_grid(args.grid, args.study), args.seeds, args.iterations, args.gp,
                              args.risk)
    except GridError as error:
        raise UsageError(str(error)) from None
    cells = list(grid.cells)
    if args.only is not None:
        cells = select(cells, args.only)
        if not cells:
            raise UsageError(f"--only {args.only!r} matches no cell of grid {grid.name}")
    return grid, cells
