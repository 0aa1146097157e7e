"""``python -m harness.run``: run BO cells and store their rows as Parquet.

One cell, without Ray:

    python -m harness.run --problem PROBLEM --algorithm ALGORITHM --seed 0 --out results/demo

A grid, on Ray (see :mod:`harness.grid_cli` and docs/reference/grids.md):

    python -m harness.run --grid NAME [--out DIR] [--seeds N] [--iterations T] [--only PATTERN]
        [--address ADDR] [--num-cpus N] [--dry-run [--verbose]] [--retry-failed] [--force]

What exists, running nothing: ``--list`` (the named grids, the algorithms and their options),
``--describe ALGORITHM`` (its options' defaults and meanings), ``--help`` (both modes' options).

Bad input (unknown names, alpha outside (0, 1), negative seed or iterations, bad algorithm options,
an --out that cannot be written) gives a one-line error and exit code 2, before anything is
computed or written. A cell that raises while it runs gives a one-line error and exit code 1, and
writes nothing. A grid whose disk is full or over quota stops at the first write it refuses, with
exit code 75 and a paragraph on what is written, what is lost and the command that resumes
(:mod:`harness.grid_cli`). Ctrl-C gives exit code 130 and SIGTERM 143, at any moment from the first
line (the handlers are in place before the slow imports) to the end of the shutdown, with one
"interrupted" line and never a traceback (:mod:`harness.interrupts`).
"""

from __future__ import annotations

import os
import sys

import harness.interrupts as interrupts
import harness.kernels as kernels

if __name__ == "__main__":
    # Ctrl-C or SIGTERM while torch, BoTorch and Ray load (seconds): one line and exit 130 or 143 at
    # once (``os._exit``: an exception raised inside an extension's import, numpy's, is turned into
    # an ImportError with a traceback; nothing is open or written yet)
    interrupts.set_handlers(interrupts.exit_at_once)
    # the numerical libraries pinned to one code path before any of them loads (harness.kernels),
    # unless --native-kernels or VARBO_NATIVE_KERNELS; Ray's workers inherit the choice
    kernels.pin_process(sys.argv[1:])

import argparse
import math
import textwrap
import time

from algorithms import ALGORITHMS, algorithm_factory, build_algorithm
from algorithms.gp import DEFAULT_GP, GP_PROFILES
from algorithms.options import OptionError, validate_options
from harness.catalog import describe
from harness.catalog import width as catalog_width
from harness.cell import CellSpec, run_cell
from harness.cli import (
    EXIT_CELL_FAILED,
    EXIT_CLOSED_PIPE,
    EXIT_USAGE,
    Parser,
    UsageError,
    add_kernels_argument,
    check_writable,
    out_location,
    parse_option,
    quiet_stdout,
)
from harness.store import write_cell
from problems import PROBLEMS, build_problem, get_problem
from problems.measures import DEFAULT_RISK, RISK_MEASURES, RISKS, risk_measure

PROG = "python -m harness.run"

OVERVIEW = f"""\
usage: {PROG} --problem NAME --algorithm NAME [cell options]
       {PROG} --grid NAME|FILE [grid options]
       {PROG} --list | --describe ALGORITHM | --help

Run risk-averse Bayesian optimization cells (a problem, an algorithm, a
seed) and store each cell's rows as Parquet. Two modes:
  one cell  --problem and --algorithm: one run, in this process, no Ray;
  a grid    --grid: many cells as Ray tasks, one CPU each, each written as
            it finishes; the same command resumes after an interruption,
            and --dry-run shows what would run.
"""

EPILOG = """\
Exit codes: 0 done (a grid: every available cell); 1 a cell failed (a
grid: or its local Ray stopped); 2 bad input (one line on stderr, before
anything is computed or written); 75 a grid's disk full or over quota: it
stopped at the first refused write, and the same command resumes once
there is room; 130 interrupted by Ctrl-C, 143 by SIGTERM.
"""

#: The column at which every section of ``--help`` starts its options' help.
HELP_COLUMN = 24


class _HelpFormatter(argparse.HelpFormatter):
    """argparse aligns each parser's help on its own longest option; --help joins three parsers'
    (one per section), so all start at :data:`HELP_COLUMN` instead."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=HELP_COLUMN, width=min(80, catalog_width()) - 2)
        self._action_max_length = HELP_COLUMN  # the column is min(this + 2, max_help_position)

    def _split_lines(self, text: str, width: int) -> list[str]:  # hyphenated names stay whole
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def add_cell_arguments(container: argparse._ActionsContainer) -> None:
    """The options of one cell (a parser or an argument group)."""
    container.add_argument("--problem", required=True, metavar="NAME",
                           help=f"required: one of {', '.join(PROBLEMS)}; or your own, as MODULE:ATTR")
    container.add_argument("--algorithm", required=True, metavar="NAME",
                           help=f"required: one of {', '.join(ALGORITHMS)}; or your own, as MODULE:ATTR")
    container.add_argument("--seed", type=int, default=0, metavar="N", help="run index, >= 0 (default 0)")
    container.add_argument("--iterations", type=int, default=None, metavar="T",
                           help="BO iterations after the initial design (default: the problem's)")
    container.add_argument("--alpha", type=float, default=None,
                           help="risk level in (0, 1) (default: the problem's)")
    container.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                           help="algorithm option, repeatable (VALUE parsed as JSON if it can be); "
                                "--describe ALGORITHM lists them")
    container.add_argument("--gp", default=DEFAULT_GP, metavar="PROFILE",
                           help=f"GP profile: {', '.join(GP_PROFILES)} (default {DEFAULT_GP})")
    container.add_argument("--risk", default=DEFAULT_RISK, choices=RISKS,
                           help="risk measure to optimize and score: " + ", ".join(
                               f"{name} ({RISK_MEASURES[name].label})" for name in RISKS)
                           + f"; default {DEFAULT_RISK} (--list: which algorithms optimize which)")
    container.add_argument("--out", default="results/single", metavar="DIR",
                           help="results folder (default results/single)")
    container.add_argument("--threads", type=int, default=1, metavar="N",
                           help="torch threads (default 1, as in the grid; a cell's rows are defined at "
                                "1 thread, and another count can change them in the last bits)")
    add_kernels_argument(container)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m harness.run`` for one cell (its own ``--help`` is :func:`help_text`).

    Returns:
        The parser of the cell's arguments, without ``-h``.
    """
    parser = Parser(prog=PROG, description="Run a VaR BO cell.", add_help=False)
    add_cell_arguments(parser)
    return parser


def _section(title: str) -> tuple[Parser, argparse._ArgumentGroup]:
    parser = Parser(prog=PROG, usage=argparse.SUPPRESS, add_help=False, formatter_class=_HelpFormatter)
    return parser, parser.add_argument_group(title)


def cell_section() -> Parser:
    """The section of ``--help`` for one cell (also the documentation's CLI reference).

    Returns:
        A parser holding the cell's arguments in one group.
    """
    parser, group = _section("one cell (--problem, --algorithm), without Ray")
    add_cell_arguments(group)
    return parser


def grid_section() -> Parser:
    """The section of ``--help`` for a grid (also the documentation's CLI reference).

    Returns:
        A parser holding ``--grid`` and the grid options in one group.
    """
    from harness.grid_args import add_grid_options, grid_help  # no Ray

    parser, group = _section("a grid (--grid), on Ray")
    group.add_argument("--grid", metavar="NAME|FILE", help=grid_help())
    add_grid_options(group)
    return parser


def info_section() -> Parser:
    """The section of ``--help`` for the information options (also the documentation's CLI reference).

    Returns:
        A parser holding ``--list``, ``--describe`` and ``--help`` in one group.
    """
    from harness.grid_args import LIST_HELP

    parser, group = _section("information (runs nothing)")
    group.add_argument("--list", action="store_true", help=LIST_HELP)
    group.add_argument("--describe", metavar="ALGORITHM", help=DESCRIBE_HELP)
    group.add_argument("-h", "--help", action="store_true", help="this help (--grid X --help: the grid's)")
    return parser


def help_text() -> str:
    """The text of ``--help``.

    Returns:
        The overview, then the options of one cell, of a grid, and the information options, each with its
        help, then the exit codes.
    """
    sections = (cell_section(), grid_section(), info_section())
    return "\n".join([OVERVIEW, *(p.format_help() for p in sections), EPILOG])


DESCRIBE_HELP = ("print an algorithm's options (a registered name, or MODULE:ATTR): per kind of Z, each "
                 "with its default and meaning")


def _describe(argv: list[str]) -> int:
    """``--describe ALGORITHM``, alone."""
    parser = Parser(prog=PROG, add_help=False)
    parser.add_argument("--describe", required=True, metavar="ALGORITHM")
    args, others = parser.parse_known_args(argv)
    if others:
        raise UsageError(f"--describe takes no other arguments, got {' '.join(others)}")
    print(describe(args.describe))
    return 0


def validate(args: argparse.Namespace) -> CellSpec:
    """The cell spec of the parsed arguments, checked before any compute.

    The problem and the algorithm are built (the algorithm's options checked as it declares them, then by its
    constructor).

    Args:
        args: the parsed arguments of one cell.

    Returns:
        The cell's spec.

    Raises:
        UsageError: with the reason, for a name, a value or an option that is not valid.
    """
    try:  # a registry name, or an import path to the user's own (imported here)
        build_problem(args.problem, with_optimum=False)
        factory = algorithm_factory(args.algorithm)
    except KeyError as error:
        raise UsageError(error.args[0]) from None
    except ValueError as error:
        raise UsageError(str(error)) from None
    if args.seed < 0:
        raise UsageError(f"--seed must be >= 0, got {args.seed}")
    if args.iterations is not None and args.iterations < 0:
        raise UsageError(f"--iterations must be >= 0, got {args.iterations}")
    if args.alpha is not None and not (0.0 < args.alpha < 1.0 and math.isfinite(args.alpha)):
        raise UsageError(f"--alpha must lie in (0, 1), got {args.alpha}")
    if args.threads < 1:
        raise UsageError(f"--threads must be >= 1, got {args.threads}")
    if args.gp not in GP_PROFILES:
        raise UsageError(f"unknown GP profile {args.gp!r}; valid: {', '.join(GP_PROFILES)}")
    try:  # names, types and ranges as the algorithm declares them, then the constructor's own checks
        options = validate_options(args.algorithm, factory, dict(parse_option(o) for o in args.option))
    except OptionError as error:
        raise UsageError(str(error)) from None
    spec = CellSpec.make(args.problem, args.algorithm, args.seed, args.iterations, args.alpha,
                         options, gp=args.gp, risk=args.risk)
    problem = get_problem(args.problem, args.alpha)
    try:  # building the algorithm validates its options before any compute
        build_algorithm(args.algorithm, factory, problem, 0, risk=args.risk, **options)
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None
    return spec


def _is_grid_command(argv: list[str]) -> bool:
    return any(a in ("--grid", "--list") or a.startswith("--grid=") for a in argv)


def _has(argv: list[str], *options: str) -> bool:
    return any(a in options or a.split("=", 1)[0] in options for a in argv)


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m harness.run``: one cell, a grid, or an information option.

    A grid is :func:`harness.grid_cli.main`'s. One cell runs in this process and is written under ``--out``; a
    line says how it ended.

    Args:
        argv: the command's arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit code, 0 done, :data:`harness.cli.EXIT_CELL_FAILED` for a cell that failed,
        :data:`harness.cli.EXIT_USAGE` for bad input; a grid's as :func:`harness.grid_cli.main` gives it.
    """
    argv = sys.argv[1:] if argv is None else argv
    if _has(argv, "-h", "--help") and not _has(argv, "--grid"):  # --grid X --help: the grid's help
        print(help_text(), end="")
        return 0
    if _has(argv, "--describe"):
        try:
            return _describe(argv)
        except UsageError as error:
            print(f"harness.run: error: {error}", file=sys.stderr)
            return EXIT_USAGE
    if _is_grid_command(argv):
        from harness.grid_cli import main as grid_main  # imports Ray only for grids

        return grid_main(argv)
    try:
        args = build_parser().parse_args(argv)
        spec = validate(args)
        args.out = out_location(args.out)
        check_writable(args.out)
    except UsageError as error:
        print(f"harness.run: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    start = time.perf_counter()
    try:
        result = run_cell(spec, threads=args.threads)
    except Exception as error:  # a failed run: one line, nothing written (grids record tracebacks)
        text = str(error).splitlines()[0] if str(error) else ""
        print(f"harness.run: error: the cell failed: {type(error).__name__}: {text}", file=sys.stderr)
        return EXIT_CELL_FAILED
    path = write_cell(args.out, spec, result)
    last = result.rows[-1]
    acq = sorted(r["t_acq_s"] for r in result.rows if r.get("t_acq_s") is not None)
    median_acq = acq[len(acq) // 2] if acq else math.nan
    regret = last["regret"]
    if regret is None:  # the problem declares its optimum unknown
        measure = risk_measure(last["target"])
        outcome = (f"final true {measure.label} of the recommendation {last[measure.column]:.6g} "
                   "(optimum unknown: no regret)")
    else:
        log_regret = math.log10(regret) if regret > 0 else float("-inf")
        outcome = f"final regret {regret:.3e} (log10 {log_regret:.2f}, target {last['target']})"
    print(f"{spec.problem} / {spec.algorithm} / seed {spec.seed}: {last['iteration']} iterations, "
          f"{outcome}, median acquisition {median_acq:.3f} s, wall {time.perf_counter() - start:.1f} s")
    print(f"wrote {os.path.relpath(path)}")
    return 0


def cli() -> None:
    """The command: :func:`main` with Ctrl-C and SIGTERM honoured (130, 143; one line, never a
    traceback) and a reader that leaves a pipe early (141); exits."""
    interrupts.install()  # from here on Ctrl-C is KeyboardInterrupt, SIGTERM Terminated
    try:
        code = main()
        sys.stdout.flush()  # here, so that a reader that has left is caught below
    except KeyboardInterrupt as error:  # the grid handles its own; this is the single cell, or parsing
        interrupts.set_handlers(interrupts.exit_at_once)
        interrupts.report()
        interrupts.exit_now(interrupts.exit_code(error))  # not sys.exit: see exit_now
    except BrokenPipeError:  # the reader left (``--list | head``): stop quietly, as SIGPIPE would
        quiet_stdout()
        sys.exit(EXIT_CLOSED_PIPE)
    interrupts.set_handlers(interrupts.exit_at_once)  # all is closed: a signal now ends it at once
    if code in (interrupts.EXIT_SIGINT, interrupts.EXIT_SIGTERM):  # an interrupted grid, its Ray stopped
        interrupts.exit_now(code)
    sys.exit(code)


if __name__ == "__main__":
    cli()
