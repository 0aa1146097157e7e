"""The grid form of ``python -m harness.run``: ``--grid NAME|FILE`` and ``--list``.

Bad input (an unknown grid or name, a malformed grid file, a bad option, an ``--only`` that matches
nothing, an ``--out`` that cannot be written) prints one line on stderr and exits with code 2 before
Ray starts or anything is written. Exit codes otherwise: 0 when every available cell of the grid is
finished, 1 when some cell of the grid has a failure record or some cell of this run ended neither
written nor recorded as failed (counted from what happened, not only from the files), or a local Ray
cannot start, or the local Ray stops while the grid runs (its GCS or raylet dies: noticed within
seconds, one line, the cells written so far are kept and the same command resumes); 130 after Ctrl-C
and 143 after SIGTERM, at any moment until the end of the shutdown (:mod:`harness.interrupts`).
The local Ray goes away with the driver, even one killed with SIGKILL (:mod:`harness.local_ray`).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import socket
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import harness.interrupts as interrupts
from algorithms.gp import GP_PROFILES
from harness.catalog import algorithm_lines
from harness.cell import CHECKPOINT_EVERY_S, CellSpec, run_cell
from harness.cli import (
    EXIT_USAGE,
    Parser,
    UsageError,
    add_kernels_argument,
    check_writable,
    kernels_line,
    out_location,
)
from harness.grid import (
    BELOW_MIN_MASS,
    Grid,
    GridError,
    alpha_below_min_mass,
    cell_label,
    estimate_seconds,
    named_grids,
    resolve_grid,
    select,
    unavailable_reason,
    with_overrides,
)
from harness.packed import PackedCell
from harness.procs import process_alive, process_start
from harness.results import (
    Location,
    cell_path,
    check_cell_file,
    failure_path,
    invalid_files,
    packs,
    read_metadata,
    result_files,
    spec_hash,
)
from harness.spec import RISKS
from harness.store import clear_checkpoint, remove_stale_temporaries, write_manifest
from problems import build_problem

EXIT_FAILED = 1
EXIT_INTERRUPTED = interrupts.EXIT_SIGINT  # Ctrl-C
EXIT_TERMINATED = interrupts.EXIT_SIGTERM  # SIGTERM
LOCK = "_running.lock"


def grid_help() -> str:
    """The help of ``--grid``: the named grids (the engine's and the installed studies')."""
    return f"a named grid ({', '.join(named_grids())}) or a TOML grid file"
LIST_HELP = ("print the named grids and their sizes, and the registered algorithms with the kinds of Z "
             "they handle and their options")


def seeds_argument(text: str) -> int | list[int]:
    """``--seeds``: a count (``10``) or a comma-separated list of seeds (``0,3,7``)."""
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count or a list such as 0,3,7, got {text!r}") from None
    return values[0] if "," not in text else values


def positive_seconds(text: str) -> float:
    """``--checkpoint-every-s``: a positive, finite number of seconds."""
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
    parser = Parser(prog="python -m harness.run --grid", description="Run a grid of cells on Ray.",
                    epilog="python -m harness.run --help: both modes, one cell and a grid.")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--grid", metavar="NAME|FILE", help=grid_help())
    what.add_argument("--list", action="store_true", help=LIST_HELP)
    add_grid_options(parser)
    return parser


def _grid(args: argparse.Namespace) -> tuple[Grid, list[CellSpec]]:
    """The grid (after --seeds, --iterations, --gp, --risk) and its selected cells (after --only)."""
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


def measured_rates(out: Path) -> dict[tuple, float]:
    """Seconds per iteration by (problem, algorithm, options), from the finished cells in ``out``
    (options as a cell spec holds them: sorted (name, value) pairs)."""
    totals: dict[tuple, list[float]] = {}
    for path in result_files(out):
        try:
            meta = read_metadata(path)
        except Exception:
            continue
        if meta.get("kind") == "timing":  # timing cells have their own cost model
            continue
        spec, iterations = meta["spec"], max(1, meta.get("iterations") or 1)
        options = tuple((name, tuple(v) if isinstance(v, list) else v) for name, v in spec.get("options", []))
        totals.setdefault((spec["problem"], spec["algorithm"], options), []).append(
            max(0.0, meta["wall_time_s"] - 1.0) / iterations)
    return {key: sum(v) / len(v) for key, v in totals.items()}


def classify(cells: list[CellSpec], out: Path) -> dict[CellSpec, str]:
    """Each cell's state: ``done``, ``failed``, ``missing`` or ``not available`` (a packed folder's
    cells, :mod:`harness.packed`, are done as its own files would be)."""
    states = {}
    in_packs = ({path.stem.rsplit("-", 1)[-1] for path in result_files(out)
                 if isinstance(path, PackedCell)} if packs(out) else set())
    for spec in cells:
        if unavailable_reason(spec):
            states[spec] = "not available"
        elif spec_hash(spec) in in_packs or (cell_path(out, spec).is_file()
                                             and check_cell_file(cell_path(out, spec)) is None):
            states[spec] = "done"
        elif failure_path(out, spec).is_file():
            states[spec] = "failed"
        else:
            states[spec] = "missing"
    return states


def _print_unavailable(cells: list[CellSpec]) -> None:
    groups = Counter((c.problem, c.algorithm, unavailable_reason(c)) for c in cells)
    print(f"not available ({len(cells)} cells; they run once registered):")
    for (problem, algorithm, reason), n in groups.items():
        print(f"  {problem} x {algorithm}: {n} cells ({reason})")


#: The columns of the dry run's table of groups: (heading, state counted), in order.
STATE_COLUMNS = (("done", "done"), ("to run", "to run"), ("failed", "failed"),
                 ("missing", "missing"), ("n/a", "not available"))


def group_key(spec: CellSpec) -> tuple:
    """The cells of one line of the dry run: all but the seed in common."""
    return (spec.problem, spec.algorithm, spec.alpha, spec.options, spec.gp, spec.risk, spec.iterations,
            spec.kind)


def problem_defaults(name: str) -> tuple[float, int] | None:
    """The problem's default alpha and iterations, or None where it does not build here."""
    try:
        problem = build_problem(name, with_optimum=False)
    except (KeyError, ValueError):
        return None
    return problem.alpha, problem.iterations


def alpha_text(problem: str, alpha: float | None) -> str:
    """A dry run's alpha: ``below-min-mass (3.957e-13)`` where it is the grid's alpha -> 0 setting
    (half the problem's smallest mass), the grid file's name for it, else the number."""
    if alpha is None:
        return "-"
    try:
        below = alpha == alpha_below_min_mass(problem)
    except (GridError, KeyError, ValueError):  # a continuous Z, or a problem that does not build here
        below = False
    return f"{BELOW_MIN_MASS} ({alpha:.4g})" if below else f"{alpha:.4g}"


def print_groups(cells: list[CellSpec], shown: dict[CellSpec, str], cost: dict[CellSpec, float]) -> None:
    """One line per :func:`group_key` group (in the grid's order): its problem, algorithm, alpha and
    iterations (the problem's where the grid sets none), GP profile, risk measure, the cells in each state and
    the estimated CPU minutes of those to run, and its options; then the totals. ``missing`` is a
    column only where some cell is neither done, failed, unavailable nor to run (``--retry-failed``
    leaves the missing ones)."""
    def minutes_text(seconds: float) -> str:  # two digits at least: a cell takes a second or more
        minutes = seconds / 60
        return "-" if not seconds else f"{minutes:.2f}" if minutes < 1 else f"{minutes:.1f}"

    groups: dict[tuple, list[CellSpec]] = {}
    for spec in cells:
        groups.setdefault(group_key(spec), []).append(spec)
    defaults = {name: problem_defaults(name) for name in {spec.problem for spec in cells}}
    states = [(heading, state) for heading, state in STATE_COLUMNS
              if state != "missing" or "missing" in shown.values()]
    rows = []
    for members in groups.values():
        spec = members[0]
        known = defaults[spec.problem]
        alpha = spec.alpha if spec.alpha is not None else known[0] if known else None
        iterations = spec.iterations if spec.iterations is not None else known[1] if known else None
        if spec.kind != "bo":  # a timing cell runs no BO iterations
            iterations = None
        counts = Counter(shown[c] for c in members)
        seconds = sum(cost.get(c, 0.0) for c in members)
        options = " ".join(f"{name}={value}" for name, value in spec.options)
        if spec.kind != "bo":
            options = f"[{spec.kind}] {options}".rstrip()
        rows.append([spec.problem, spec.algorithm, alpha_text(spec.problem, alpha),
                     "-" if iterations is None else str(iterations), spec.gp, spec.risk,
                     *(str(counts[state]) for _, state in states),
                     minutes_text(seconds), options])
    total = Counter(shown.values())
    rows.append(["total", f"{len(groups)} groups", "", "", "", "",
                 *(str(total[state]) for _, state in states),
                 minutes_text(sum(cost.values())), ""])
    header = ["problem", "algorithm", "alpha", "T", "gp", "risk", *(h for h, _ in states), "CPU min",
              "options"]
    right = {2, 3, *range(6, len(header) - 1)}  # numbers
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        cells_text = [text.rjust(width) if i in right else text.ljust(width)
                      for i, (text, width) in enumerate(zip(row, widths, strict=True))]
        print("  ".join(cells_text).rstrip())


def duration_text(seconds: float) -> str:
    """Seconds as people read a cost: ``42 s``, ``11.2 min``, ``5.9 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _list() -> int:
    grids = named_grids()
    width = max(len(name) for name in grids)
    print("named grids (--grid NAME; --grid FILE.toml for your own):")
    for name, factory in grids.items():
        grid = factory()
        available = sum(unavailable_reason(c) is None for c in grid.cells)
        print(f"  {name:{width}s} {len(grid.cells):4d} cells ({available} available now): {grid.description}")
    print()
    print("\n".join(algorithm_lines()))
    return 0


@contextlib.contextmanager
def _lock(out: Location) -> Iterator[None]:
    """One driver per results folder: a second one would run the same cells twice. The lock is
    created exclusively (two drivers starting together cannot both take it) and names the host, pid
    and process start time of its driver; a lock whose driver is gone from this host is stale and
    replaced. A lock from another host cannot be checked from here (a shared or remote store): it is
    refused."""
    path = out / LOCK
    host = socket.gethostname()
    mine = f"{host} {os.getpid()} {process_start(os.getpid()) or '-'}"
    local = isinstance(path, Path) and type(path).__module__.startswith("pathlib")
    for _ in range(3):
        if local:
            try:
                descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                pass
            else:
                with os.fdopen(descriptor, "w") as handle:
                    handle.write(mine)
                break
        elif not path.exists():  # an object store has no exclusive create: as close as it gets
            path.write_text(mine)
            break
        try:
            fields = path.read_text().split()
            if len(fields) == 1:  # written by an older version: the pid only
                fields = [host, *fields]
            other_host, pid = fields[0], int(fields[1])
            started = fields[2] if len(fields) > 2 and fields[2] != "-" else None
        except (OSError, ValueError, IndexError):
            other_host, pid, started = host, -1, None  # unreadable or vanished: stale
        if other_host != host:
            raise UsageError(f"a grid run on host {other_host} (pid {pid}) holds {out}; remove {path} "
                             "if it has ended")
        if pid > 0 and pid != os.getpid() and process_alive(pid, started):
            raise UsageError(f"another grid run (pid {pid}) is writing to {out}; remove {path} if not")
        with contextlib.suppress(OSError):  # stale: its driver died
            path.unlink()
    else:
        raise UsageError(f"cannot take the lock {path}: another run keeps taking it")
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()


def main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.list:
            return _list()
        grid, cells = _grid(args)
        out = out_location(args.out) if args.out is not None else Path("results") / grid.name
        if not args.dry_run:
            check_writable(out)
    except UsageError as error:
        print(f"harness.run: error: {error}", file=sys.stderr)
        return EXIT_USAGE

    if args.dry_run:  # reads only: no lock
        if args.json:  # stdout holds the JSON alone; the plan's head lines go to stderr
            with contextlib.redirect_stdout(sys.stderr):
                plan = _plan(args, grid, cells, out)
            print(json.dumps(plan_json(grid, cells, out, plan), indent=1))
        else:
            _dry_run(args, cells, out, _plan(args, grid, cells, out))
        return 0
    # nothing is open yet: a signal while Ray's modules load ends the process at once (raised inside an
    # extension's import, it could come out as an ImportError with a traceback)
    interrupts.set_handlers(interrupts.exit_at_once)
    import harness.ray_runner  # noqa: F401 (Ray, imported only to run cells)

    interrupts.install()
    return _run_and_stop(args, grid, cells, out)


def _run_and_stop(args: argparse.Namespace, grid: Grid, cells: list[CellSpec], out: Location) -> int:
    """Plan and run under the lock, then stop the Ray the run started (:func:`stop_ray`, whatever
    happened); the exit code."""
    from harness.ray_runner import RayLostError, stop_ray

    code, lost = EXIT_FAILED, False
    try:
        # the plan is made under the lock: a driver that is finishing as this one starts has written
        # its last cells by the time this one holds the lock, so they are not run twice
        with _lock(out):
            plan = _plan(args, grid, cells, out)
            code = _run(args, grid, cells, plan.to_run, plan.costs, out, plan.estimate)
    except UsageError as error:
        print(f"harness.run: error: {error}", file=sys.stderr)
        code = EXIT_USAGE
    except KeyboardInterrupt as error:  # before or after the task loop (which handles its own)
        code = interrupts.exit_code(error)
        interrupts.report("interrupted; the same command resumes")
    except RayLostError as error:
        code, lost = EXIT_FAILED, True
        print(f"harness.run: error: {error}", file=sys.stderr)
        print("the cells written so far are kept; the same command resumes", file=sys.stderr)
    except OSError as error:  # the folder refused the driver's own files (the grid record, a
        # temporary, the lock) mid-run, e.g. made read-only: one line, not a traceback (a cell's own
        # files failing fail that cell alone, inside the task loop)
        code = EXIT_FAILED
        where = f" ({error.filename})" if error.filename else ""
        print(f"harness.run: error: cannot write to {out}: {error.strerror or error}{where}", file=sys.stderr)
        print("the cells written so far are kept; the same command resumes", file=sys.stderr)
    finally:
        code = stop_ray(code, lost=lost)
    return code


@dataclass
class Plan:
    """What a grid run will do: each cell's state on disk, the cells to run and their estimated
    seconds, and the estimate as text."""

    states: dict[CellSpec, str]
    to_run: list[CellSpec]
    costs: list[float]
    estimate: str
    rates: dict


def _plan(args: argparse.Namespace, grid: Grid, cells: list[CellSpec], out: Location) -> Plan:
    """Classify the cells on disk, choose those to run (missing; failed with --retry-failed; all
    available with --force), estimate their cost, and print the grid's head lines."""
    states = classify(cells, out)
    if args.retry_failed:
        to_run = [c for c in cells if states[c] == "failed"]
    elif args.force:
        to_run = [c for c in cells if states[c] != "not available"]
    else:
        to_run = [c for c in cells if states[c] == "missing"]
    rates = measured_rates(out)
    costs = [estimate_seconds(c, rates) for c in to_run]
    counts = Counter(states.values())
    unavailable = [c for c in cells if states[c] == "not available"]
    print(f"grid {grid.name} -> {out}: {len(cells)} cells: {counts['done']} done, {len(to_run)} to run, "
          f"{counts['failed']} failed, {len(unavailable)} not available")
    if unavailable:
        _print_unavailable(unavailable)
    for path, reason in invalid_files(out):  # never read as results; a cell of the grid is rerun
        print(f"ignored {path}: {reason}")
    estimate = f"about {duration_text(sum(costs))} of CPU time"
    if not args.address:  # a cluster's size is known only once joined
        cpus = args.num_cpus or os.cpu_count() or 1
        estimate += f", {duration_text(sum(costs) / cpus)} on {cpus} CPUs"
    if counts["failed"] and not args.retry_failed and not args.force and not args.dry_run:
        print(f"{counts['failed']} failed cells are skipped (--retry-failed reruns them; "
              f"python -m harness.status {out} shows why)")
    return Plan(states, to_run, costs, estimate, rates)


def plan_json(grid: Grid, cells: list[CellSpec], out: Location, plan: Plan) -> dict:
    """The plan as plain data: the grid, the folder, and per cell (in the grid's order) its label, spec
    (:meth:`CellSpec.to_dict`), spec hash, file, state ("to run", "done", "failed", "missing" when
    not chosen, "not available") and estimated seconds (null when it will not run)."""
    cost = dict(zip(plan.to_run, plan.costs, strict=True))
    return {"grid": grid.name, "out": str(out), "to_run": len(plan.to_run),
            "estimate_cpu_s": round(sum(plan.costs), 1),
            "cells": [{"label": cell_label(spec), "spec": spec.to_dict(), "hash": spec_hash(spec),
                       "path": str(cell_path(out, spec)),
                       "state": "to run" if spec in cost else plan.states[spec],
                       "estimate_s": round(cost[spec], 1) if spec in cost else None} for spec in cells]}


def _dry_run(args: argparse.Namespace, cells: list[CellSpec], out: Location, plan: Plan) -> None:
    """Print what a run would do: per group (and with --verbose per cell) the state and estimate."""
    cost = dict(zip(plan.to_run, plan.costs, strict=True))
    shown = {spec: "to run" if spec in cost else plan.states[spec] for spec in cells}
    if args.verbose:
        for spec in cells:
            seconds = f"  ~{cost[spec]:.0f} s" if spec in cost else ""
            print(f"  {shown[spec]:13s} {cell_label(spec)}{seconds}")
    print_groups(cells, shown, cost)
    if plan.rates:
        print(f"cost: the measured seconds per iteration of the finished cells in {out} for "
              f"{len(plan.rates)} (problem, algorithm, options) group(s) (scaled by the algorithm's "
              "declared cost model for other options of a pair), the declared model for the rest")
    print(f"to run: {len(plan.to_run)} cells, {plan.estimate} (estimate)")


def _run(args: argparse.Namespace, grid: Grid, cells: list[CellSpec], to_run: list[CellSpec],
         costs: list[float], out: Path, estimate: str) -> int:
    ray_start = 0.0
    if to_run:  # Ray first: a cluster that cannot be joined is a one-line error, with nothing written
        from harness.ray_runner import start_ray  # Ray is imported only to run cells

        print(f"running {len(to_run)} cells, {estimate} (estimate), {kernels_line()}")
        try:
            ray_start = start_ray(args.address, args.num_cpus)
        except Exception as error:  # any reason (an OSError too): one line, nothing written
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            if args.address:  # the address the user gave answers nothing: bad input, exit 2
                raise UsageError(f"cannot join the Ray cluster at {args.address}: {reason}") from None
            print(f"harness.run: error: cannot start a local Ray: {reason}", file=sys.stderr)
            return EXIT_FAILED
        interrupts.install()  # again, in case ray.init put its own handler in place
        if args.address:  # joining takes no measurable time; what matters is what was joined
            print(f"joined the Ray cluster at {args.address} ({_cpus_used()} CPUs)")
        else:
            print(f"Ray ready in {ray_start:.1f} s")
    if args.force:  # recomputed from scratch, not from a checkpoint of an earlier run
        for spec in to_run:
            clear_checkpoint(out, spec)
    removed = remove_stale_temporaries(out)
    if removed:
        print(f"removed {removed} temporary file(s) left by an interrupted run")
    write_manifest(out, grid.name, list(grid.cells), grid.study)
    interrupted = False
    if to_run:
        from harness.ray_runner import run_cells

        # run_cell itself at the default: a partial only where the interval was asked for
        cell_fn = (run_cell if args.checkpoint_every_s == CHECKPOINT_EVERY_S
                   else functools.partial(run_cell, checkpoint_every_s=args.checkpoint_every_s))
        outcome = run_cells(to_run, out, costs, args.max_in_flight, cell_fn=cell_fn,
                            progress=not args.no_progress, checkpoints=not args.no_checkpoints)
        ran = len(outcome.done) + len(outcome.failed)
        cpus = _cpus_used()
        # CPU-seconds not spent inside cells (imports, scheduling, writing, idle tail), per cell
        per_cell = (cpus * outcome.wall_s - outcome.cell_s) / max(1, ran)
        # after Ctrl-C the wall time holds the unfinished cells' work too, and a resumed or retried
        # cell's time is only its last part: no overhead figure then
        overhead = (f", overhead per cell (CPUs x wall - cell times) / cells = {per_cell:.2f} s"
                    if not outcome.interrupted and not outcome.resumed and not outcome.retried else "")
        print(f"ran {ran} cells in {outcome.wall_s:.1f} s on {cpus} CPUs (sum of cell times "
              f"{outcome.cell_s:.1f} s, Ray start {ray_start:.1f} s{overhead}): {len(outcome.done)} "
              f"written, {len(outcome.failed)} failed")
        if outcome.resumed:
            print(f"{len(outcome.resumed)} cell(s) resumed from their checkpoints, "
                  f"{outcome.retried} task(s) resubmitted after a worker or node died")
        interrupted = outcome.interrupted
    states = classify(cells, out)  # from the files: exact even if Ctrl-C came between a write and its count
    failed = [c for c in cells if states[c] == "failed"]
    summary = Counter(states.values())
    print(f"grid {grid.name}: {summary['done']} done, {summary['missing']} missing, "
          f"{summary['failed']} failed, {summary['not available']} not available")
    if interrupted:
        interrupts.report("interrupted: the same command resumes", sys.stdout)
        return EXIT_TERMINATED if outcome.terminated else EXIT_INTERRUPTED
    # the exit code counts what happened as well as what is on disk: a cell that failed here but
    # whose failure record could not be written (a read-only folder) is on disk as merely missing,
    # and a cell done before the run whose file was damaged during it is missing now
    unaccounted = [c for c in to_run if states[c] not in ("done", "failed")]
    lost = [c for c in cells if states[c] == "missing" and c not in set(to_run)]
    if failed or unaccounted or lost or (to_run and outcome.failed):
        if unaccounted:
            print(f"{len(unaccounted)} cell(s) of this run are neither written nor recorded as failed "
                  f"(their files could not be written?); the same command reruns them")
        if lost:
            print(f"{len(lost)} cell(s) done before this run are missing now (a file removed or damaged "
                  f"during the run); the same command reruns them")
        if failed:
            print(f"failed cells: python -m harness.status {out} (details in {out / '_failed'})")
        return EXIT_FAILED
    return 0


def _cpus_used() -> int:
    from harness.ray_runner import cluster_cpus  # cached: never a blocking call to Ray's GCS

    return cluster_cpus()

