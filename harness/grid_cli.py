"""The grid form of ``python -m harness.run``: ``--grid NAME|FILE`` and ``--list``.

Bad input (an unknown grid or name, a malformed grid file, a bad option, an ``--only`` that matches
nothing, an ``--out`` that cannot be written) prints one line on stderr and exits with code 2 before
Ray starts or anything is written. Exit codes otherwise: 0 when every available cell of the grid is
finished, 1 when some cell of the grid has a failure record or some cell of this run ended neither
written nor recorded as failed (counted from what happened, not only from the files), or a local Ray
cannot start, or the local Ray stops while the grid runs (its GCS or raylet dies: noticed within
seconds, one line, the cells written so far are kept and the same command resumes); 75 when the
results folder's disk is full or its quota used up (``ENOSPC``, ``EDQUOT``): at the first write it
refuses, no cell is given out any more and the running ones are stopped (:mod:`harness.ray_runner`),
and a paragraph says how many cells are written, what is lost (the running cells' work since their
last checkpoint) and the command that resumes once there is room (:func:`full_disk_summary`); 130
after Ctrl-C and 143 after SIGTERM, at any moment until the end of the shutdown
(:mod:`harness.interrupts`).
The local Ray goes away with the driver, even one killed with SIGKILL (:mod:`harness.local_ray`).

The command's arguments are :mod:`harness.grid_args`'s, what ``--dry-run`` prints
:mod:`harness.dry_run`'s.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import shlex
import socket
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import harness.interrupts as interrupts
import harness.kernels as kernels
import harness.spill as spill
from harness.catalog import algorithm_lines
from harness.cell import CHECKPOINT_EVERY_S, CellSpec, resumed_iteration, run_cell
from harness.cli import EXIT_DISK_FULL, EXIT_USAGE, UsageError, check_writable, kernels_line, out_location
from harness.dry_run import Plan, duration_text, plan_json, print_dry_run, print_unavailable, resumed_line
from harness.estimates import estimate_seconds
from harness.grid import named_grids
from harness.grid_args import build_parser, grid_and_cells
from harness.grid_cells import Grid, cell_label, unavailable_reason
from harness.packed import PackedCell
from harness.procs import process_alive, process_record, record_holder
from harness.results import (
    RUNNING_LOCK,
    Location,
    cell_files,
    cell_path,
    check_cell_file,
    failure_path,
    file_hash,
    invalid_files,
    packs,
    read_metadata,
    result_files,
    spec_hash,
)
from harness.store import (
    DiskFullError,
    checkpoint_files,
    clear_checkpoint,
    clear_finished_checkpoints,
    clear_progress,
    disk_full,
    remove_stale_temporaries,
    write_manifest,
)
from problems.measures import DEFAULT_RISK

if TYPE_CHECKING:  # Ray is imported only to run cells
    from harness.ray_runner import Outcome

EXIT_FAILED = 1
EXIT_INTERRUPTED = interrupts.EXIT_SIGINT  # Ctrl-C
EXIT_TERMINATED = interrupts.EXIT_SIGTERM  # SIGTERM


def measured_rates(out: Path) -> dict[tuple, float]:
    """Seconds per iteration by (problem, algorithm, options, risk), from the finished cells in ``out``.

    A cell's rate is its wall time less a second, over its iterations; unreadable files and timing cells are
    skipped.

    Args:
        out: the results folder.

    Returns:
        (problem, algorithm, options, risk) -> the mean rate of its cells, options as a cell spec holds them
        (sorted (name, value) pairs), risk the cell's measure (:data:`problems.measures.DEFAULT_RISK` for a
        file older than the measures).
    """
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
        key = (spec["problem"], spec["algorithm"], options, spec.get("risk", DEFAULT_RISK))
        totals.setdefault(key, []).append(
            max(0.0, meta["wall_time_s"] - 1.0) / iterations)
    return {key: sum(v) / len(v) for key, v in totals.items()}


def resumed_iterations(out: Location, cells: list[CellSpec], vendor: str) -> dict[CellSpec, int]:
    """The iterations done by each of ``cells`` whose checkpoint in ``out`` a run here resumes.

    A checkpoint that the cell's task would drop on a CPU of ``vendor`` or could not use
    (:func:`harness.cell.resumed_iteration`) counts as none: the cell starts afresh.

    Args:
        out: the results folder.
        cells: the cells to run.
        vendor: the CPU vendor of the hosts that will run them; empty where unknown (a cluster's
            nodes), and then every readable checkpoint counts.

    Returns:
        Each cell that resumes -> the last iteration its checkpoint holds.
    """
    done: dict[CellSpec, int] = {}
    for spec, path in checkpoint_files(out, cells).items():
        try:
            iteration = resumed_iteration(path.read_bytes(), vendor, spec)
        except OSError:  # unreadable here: the run reports it when it resumes, the estimate prices it whole
            continue
        if iteration is not None:
            done[spec] = iteration
    return done


def classify(cells: list[CellSpec], out: Path) -> dict[CellSpec, str]:
    """Each cell's state in ``out``.

    A packed folder's cells (:mod:`harness.packed`) are done as its own files would be.

    Args:
        cells: the cells.
        out: the results folder.

    Returns:
        Each cell -> ``done``, ``failed``, ``missing`` or ``not available``.
    """
    states = {}
    in_packs = ({file_hash(path) for path in result_files(out)
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
    path = out / RUNNING_LOCK
    host = socket.gethostname()
    mine = process_record(os.getpid())
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
            holder = record_holder(path.read_text())
        except OSError:
            holder = None
        other_host, pid, started = holder or (host, -1, None)  # unreadable or vanished: stale
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
    """Run the grid form of ``python -m harness.run`` (module docstring).

    Args:
        argv: the command's arguments.

    Returns:
        The exit code, 0 done (or a listing, or a dry run); :data:`harness.cli.EXIT_USAGE` for bad input;
        otherwise that of the run (module docstring).
    """
    try:
        args = build_parser().parse_args(argv)
        args.argv = list(argv)  # the words of the command that resumes this run (full_disk_summary)
        if args.list:
            return _list()
        grid, cells = grid_and_cells(args)
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
            print_dry_run(args, cells, out, _plan(args, grid, cells, out))
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
    from harness.ray_session import RayLostError, stop_ray

    code, lost = EXIT_FAILED, False
    try:
        # the plan is made under the lock: a driver that is finishing as this one starts has written
        # its last cells by the time this one holds the lock, so they are not run twice
        with _lock(out):
            _recover_kept(out)
            plan = _plan(args, grid, cells, out)
            # a run that wrote a cell but could not remove its checkpoint (the folder read-only for
            # a moment) left it behind: gone now, not at the end (which a fault may cut short)
            stale = clear_finished_checkpoints(out, [c for c in cells if plan.states[c] == "done"])
            if stale:
                print(f"removed {stale} checkpoint(s) of cells already written")
            # so could its progress file: under the lock no other driver runs here, so any is stale
            # (a run with nothing to run would otherwise never remove it)
            with contextlib.suppress(Exception):  # advisory, as its writes are
                clear_progress(out)
            code = _run(args, grid, cells, plan.to_run, plan.whole_costs, out, plan.estimate)
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
        if disk_full(error):  # before or after the task loop: no cell was running, nothing is lost
            code = EXIT_DISK_FULL
            full = DiskFullError(error.filename or "the grid's own files", error)
            print(f"harness.run: error: {out} is full: {full}", file=sys.stderr)
            print(full_disk_summary(full, out, classify(cells, out), [], args.argv))
        else:
            code = EXIT_FAILED
            where = f" ({error.filename})" if error.filename else ""
            print(f"harness.run: error: cannot write to {out}: {error.strerror or error}{where}",
                  file=sys.stderr)
            print("the cells written so far are kept; the same command resumes", file=sys.stderr)
    finally:
        code = stop_ray(code, lost=lost)
    return code


def _kept_count(out: Location) -> int:
    """How many finished cells are kept on this machine for ``out`` (:mod:`harness.spill`)."""
    folder = spill.spill_folder(out)
    return len(cell_files(folder)[0]) if folder.is_dir() else 0


def _recover_kept(out: Location) -> None:
    """Write the finished cells a previous run kept on this machine because ``out`` refused them
    (:mod:`harness.spill`), before anything is planned: they count as done, not to run."""
    recovered = spill.recover(out)
    if recovered:
        print(f"wrote {len(recovered)} finished cell(s) that a previous run kept on this machine "
              f"({spill.spill_folder(out)}) because {out} refused them")


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
    vendor = "" if args.address else kernels.cpu_vendor()  # a cluster's nodes are not known here
    resumed = {} if args.force else resumed_iterations(out, to_run, vendor)
    costs = [estimate_seconds(c, rates, resumed.get(c, 0)) for c in to_run]
    counts = Counter(states.values())
    unavailable = [c for c in cells if states[c] == "not available"]
    print(f"grid {grid.name} -> {out}: {len(cells)} cells: {counts['done']} done, {len(to_run)} to run, "
          f"{counts['failed']} failed, {len(unavailable)} not available")
    if unavailable:
        print_unavailable(unavailable)
    for path, reason in invalid_files(out):  # never read as results; a cell of the grid is rerun
        print(f"ignored {path}: {reason}")
    if resumed:
        print(resumed_line(resumed))
    estimate = f"about {duration_text(sum(costs))} of CPU time"
    if not args.address:  # a cluster's size is known only once joined
        cpus = args.num_cpus or os.cpu_count() or 1
        estimate += f", {duration_text(sum(costs) / cpus)} on {cpus} CPUs"
    if counts["failed"] and not args.retry_failed and not args.force and not args.dry_run:
        print(f"{counts['failed']} failed cells are skipped (--retry-failed reruns them; "
              f"python -m harness.status {out} shows why)")
    # the runner's ETA takes whole cells' costs and discounts a resumed cell's by the share its checkpoint
    # holds when it submits it (harness.progress.Eta.resumes), as for a cell requeued mid-run
    whole = [estimate_seconds(c, rates) for c in to_run] if resumed else costs
    return Plan(states, to_run, costs, estimate, rates, resumed, whole)


def _run(args: argparse.Namespace, grid: Grid, cells: list[CellSpec], to_run: list[CellSpec],
         costs: list[float], out: Path, estimate: str) -> int:
    ray_start = 0.0
    if to_run:  # Ray first: a cluster that cannot be joined is a one-line error, with nothing written
        from harness.ray_session import start_ray  # Ray is imported only to run cells

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
        _report_ran(outcome, ray_start)
        interrupted = outcome.interrupted
    states = classify(cells, out)  # from the files: exact even if Ctrl-C came between a write and its count
    failed = [c for c in cells if states[c] == "failed"]
    summary = Counter(states.values())
    print(f"grid {grid.name}: {summary['done']} done, {summary['missing']} missing, "
          f"{summary['failed']} failed, {summary['not available']} not available")
    if to_run and outcome.disk_full is not None:
        print(full_disk_summary(outcome.disk_full, out, states, outcome.stopped, args.argv))
        return EXIT_DISK_FULL
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
        kept = _kept_count(out)
        if kept:  # finished, refused by the folder: the next run writes them, it does not rerun them
            print(f"{kept} finished cell(s) that {out} refused are kept on this machine "
                  f"({spill.spill_folder(out)}): the same command writes them first, without computing "
                  "them again")
        if failed:
            print(f"failed cells: python -m harness.status {out} (details in {out / '_failed'})")
        return EXIT_FAILED
    return 0


def _report_ran(outcome: Outcome, ray_start: float) -> None:
    """The line on the cells this run ran (their times, the overhead per cell) and the resumes."""
    ran = len(outcome.done) + len(outcome.failed)
    cpus = _cpus_used()
    # CPU-seconds not spent inside cells (imports, scheduling, writing, idle tail), per cell
    per_cell = (cpus * outcome.wall_s - outcome.cell_s) / max(1, ran)
    # after Ctrl-C or a full disk the wall time holds the unfinished cells' work too, and a resumed
    # or retried cell's time is only its last part: no overhead figure then
    whole = not (outcome.interrupted or outcome.disk_full or outcome.resumed or outcome.retried)
    overhead = f", overhead per cell (CPUs x wall - cell times) / cells = {per_cell:.2f} s" if whole else ""
    print(f"ran {ran} cells in {outcome.wall_s:.1f} s on {cpus} CPUs (sum of cell times "
          f"{outcome.cell_s:.1f} s, Ray start {ray_start:.1f} s{overhead}): {len(outcome.done)} "
          f"written, {len(outcome.failed)} failed")
    if outcome.resumed:
        print(f"{len(outcome.resumed)} cell(s) resumed from their checkpoints, "
              f"{outcome.retried} task(s) resubmitted after a worker or node died")


def full_disk_summary(error: DiskFullError, out: Location, states: dict[CellSpec, str],
                      stopped: list[CellSpec], argv: list[str]) -> str:
    """The paragraph that ends a grid stopped by a full disk or quota.

    Args:
        error: the write that found the disk full.
        out: the results folder.
        states: every cell of the grid's state on disk after the stop (:func:`classify`).
        stopped: the cells that were running, stopped.
        argv: the command's arguments.

    Returns:
        How many cells are written, what is lost, and the command that resumes: the same one, but
        without ``--force``, which would compute the cells written here once more.
    """
    counts = Counter(states.values())
    labels = ", ".join(cell_label(spec) for spec in stopped[:3]) + (", ..." if len(stopped) > 3 else "")
    lost = (f"the work of the {len(stopped)} cell(s) that were running ({labels}) since their last "
            "checkpoint" if stopped else "no running cell's work (none was running)")
    if error.cell is not None:
        lost += (f"; the finished cell {error.cell} is not lost: it is kept at {error.kept} and the "
                 "resume writes it" if error.kept is not None else
                 f", and the rows of {error.cell}, which had finished (they could not be kept on this "
                 "machine either)")
    command = shlex.join(["python", "-m", "harness.run", *(w for w in argv if w != "--force")])
    return (f"stopped: {out} is full ({error}). {counts['done']} of the grid's {len(states)} cells are "
            f"written, {counts['failed']} failed, {counts['missing']} left to run (none was given out "
            f"after the error). Lost: {lost}. Nothing partial is left. Free space on that disk (or "
            f"raise the quota), then the same command resumes: {command}")


def _cpus_used() -> int:
    from harness.ray_session import cluster_cpus  # cached: never a blocking call to Ray's GCS

    return cluster_cpus()

