"""``python -m harness.status DIR``: done / missing / failed / not available per (problem, algorithm,
risk measure, alpha).

The cells expected are those of the last grid run into DIR (``DIR/_grid.json``), or of ``--grid``.
Cells found in DIR but not in that grid (e.g. from an earlier ``--iterations``) are counted as
``other``. ``--failures`` prints each failure's message (the traceback is in its JSON record).
While cells are missing, a line says what they will cost, as ``harness.run --dry-run`` estimates it
(the seconds per iteration measured on the finished cells, else the cost model). The done cells'
kernels and CPUs follow (:func:`harness.kernels.host_summary`), and those resumed from a checkpoint,
by label. While a grid runs into DIR, its running cells are listed with their iterations
(``DIR/_progress.json``, rewritten by the grid's driver every few seconds). A damaged file (a cell
file or pack whose bytes are not those written: its values fail the checksum recorded with them, or
it does not read) is named on a line ``DAMAGED ...`` with its remedy, and is not counted.

Exit codes: 0 read; 1 a file is damaged; 2 bad input.
"""

from __future__ import annotations

import socket
import sys
import time
from collections import Counter
from pathlib import Path

from harness.cli import EXIT_USAGE, Parser, UsageError, exit_with, out_location
from harness.dry_run import duration_text
from harness.estimates import estimate_seconds
from harness.grid import named_grids, resolve_grid
from harness.grid_cells import GridError, cell_label
from harness.grid_cli import classify, measured_rates, resumed_iterations
from harness.kernels import cpu_vendor, host_summary
from harness.procs import process_alive
from harness.results import (
    DamagedFileError,
    cell_files,
    damaged,
    failure_files,
    file_hash,
    invalid_files,
    is_damage,
    read_failure,
    read_manifest,
    read_progress,
    result_files,
    spec_from_dict,
    spec_hash,
)
from harness.spec import CellSpec

#: A file of the folder is damaged (each named on a line of its own): its rows are not the rows written.
EXIT_DAMAGED = 1


def _manifest(out: Path) -> tuple[str, list] | None:
    """The recorded grid, or None when there is none or it is damaged (said once by :func:`main`)."""
    try:
        return read_manifest(out)
    except DamagedFileError:
        return None


def expected_cells(out: Path, grid: str | None = None) -> list[CellSpec]:
    """The cells ``out`` should hold.

    Args:
        out: the results folder.
        grid: a grid's name or file (``--grid``), or None.

    Returns:
        ``grid``'s cells, else those of the last grid run into ``out`` (its manifest; none when no grid was).
    """
    if grid is not None:
        return list(resolve_grid(grid).cells)
    manifest = _manifest(out)
    return manifest[1] if manifest else []


def status_table(out: Path, grid: str | None = None,
                 states: dict[CellSpec, str] | None = None) -> list[dict]:
    """The counts of the cells' states per (problem, algorithm, risk, alpha).

    Cells in ``out`` outside the grid count as ``other``; their risk measure and alpha are not read (``?``).

    Args:
        out: the results folder.
        grid: a grid's name or file (``--grid``), or None for the last grid run into ``out``.
        states: the expected cells' states when already read (:func:`harness.grid_cli.classify`).

    Returns:
        One dict per (problem, algorithm, risk, alpha), in the order first met, with those keys (``alpha`` as
        text, ``default`` for the problem's own) and the counts ``done``, ``missing``, ``failed``,
        ``not available`` and ``other``.
    """
    if states is None:
        states = classify(expected_cells(out, grid), out)
    specs = list(states)
    rows: dict[tuple, Counter] = {}
    for spec, state in states.items():
        alpha = "default" if spec.alpha is None else f"{spec.alpha:.4g}"
        rows.setdefault((spec.problem, spec.algorithm, spec.risk, alpha), Counter())[state] += 1
    known = {spec_hash(s) for s in specs}
    for path in result_files(out):
        problem, algorithm = path.parent.parent.name, path.parent.name
        if file_hash(path) not in known:
            rows.setdefault((problem, algorithm, "?", "?"), Counter())["other"] += 1
    return [{"problem": p, "algorithm": a, "risk": r, "alpha": al, "done": c["done"], "missing": c["missing"],
             "failed": c["failed"], "not available": c["not available"], "other": c["other"]}
            for (p, a, r, al), c in rows.items()]


#: A progress file older than this is said to be stale: its driver rewrites it at least every
#: :data:`harness.ray_runner.HEARTBEAT_S` (30 s) while it runs.
STALE_PROGRESS_S = 600.0


def _driver_state(progress: dict, age: float) -> str:
    """How the driver that wrote ``progress`` is: gone (its pid, with its start time, no longer runs on
    this host), or running; "stale" where nothing was written for :data:`STALE_PROGRESS_S` (a
    driver on another host, which cannot be checked from here, or a live one that hangs)."""
    pid, host = progress.get("pid"), progress.get("host")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(progress.get("updated", 0))))
    here = host == socket.gethostname() and isinstance(pid, int)
    if here and not process_alive(pid, progress.get("started")):
        return (f"stopped (driver gone: pid {pid} on {host} no longer runs; last progress at {when}, "
                f"{age:.0f} s ago); the same command resumes. These cells were running")
    head = (f"running ({len(progress['running'])} cells, as of {age:.0f} s ago; grid driver pid {pid} "
            f"on {host})")
    if age > STALE_PROGRESS_S:
        head += (f": stale, no progress since {when}: " + ("its driver is alive but may hang" if here else
                 "its grid may have stopped without cleaning up (the next grid run into this folder "
                 "rewrites it)"))
    return head


def running_lines(out: Path, now: float | None = None) -> list[str]:
    """The running cells of the grid writing into ``out`` (``_progress.json``), one line each.

    Args:
        out: the results folder.
        now: the time now in epoch seconds (default: the clock's).

    Returns:
        A line saying whether the grid's driver runs and how old the record is, then one line per running cell
        with its iterations (and seconds); empty when no grid is writing there.
    """
    progress = read_progress(out)
    if progress is None:
        return []
    now = time.time() if now is None else now
    age = max(0.0, now - float(progress.get("updated", now)))
    lines = [_driver_state(progress, age) + ":"]
    width = max((len(r["cell"]) for r in progress["running"]), default=0)
    for r in progress["running"]:
        done = "?" if r.get("iteration") is None else r["iteration"]
        line = f"  {r['cell'].ljust(width)}  it {done}/{r.get('iterations')}"
        if r.get("seconds") is not None:
            line += f"  ({r['seconds']:.0f} s)"
        lines.append(line)
    return lines


def remaining_line(out: Path, states: dict[CellSpec, str], grid: str) -> str:
    """What the missing cells will cost, as ``harness.run --dry-run`` estimates it.

    The estimate takes the seconds per iteration measured on ``out``'s finished cells where there are some,
    else the cost model's; a cell with a checkpoint that a run on this host resumes is priced for the
    iterations after it (:func:`harness.grid_cli.resumed_iterations`).

    Args:
        out: the results folder.
        states: grid ``grid``'s cells and their states.
        grid: the grid's name, for the dry-run command the line gives.

    Returns:
        The line, with the number of missing cells and their CPU time.
    """
    missing = [spec for spec, state in states.items() if state == "missing"]
    rates = measured_rates(out)
    resumed = resumed_iterations(out, missing, cpu_vendor())
    seconds = sum(estimate_seconds(spec, rates, resumed.get(spec, 0)) for spec in missing)
    basis = "the finished cells' measured rates where there are some" if rates else "the cost model"
    # a grid run from a file records the file's grid name, which --grid does not resolve: name the file
    named = grid in named_grids() or Path(grid).is_file()
    return (f"remaining: {len(missing)} cells, about {duration_text(seconds)} of CPU time (estimate from "
            f"{basis}; per group: python -m harness.run --grid {grid if named else 'GRID_FILE'} --out {out} "
            f"--dry-run{'' if named else f', GRID_FILE the file that defines grid {grid!r}'})")


def resumed_cells(good: list[tuple]) -> list[str]:
    """The labels of the done cells that were resumed from a checkpoint.

    A publication that wants none, or lists them, reads them here.

    Args:
        good: the done cells as ``(path, metadata)`` pairs (:func:`harness.results.cell_files`).

    Returns:
        Their labels (:func:`harness.grid_cells.cell_label`), in label order.
    """
    return sorted(cell_label(spec_from_dict(meta["spec"])) for _, meta in good
                  if (meta.get("provenance") or {}).get("resumed_at") is not None)


def build_parser() -> Parser:
    """The command line of ``python -m harness.status`` (also the documentation's CLI reference).

    Returns:
        The parser of ``out``, ``--grid`` and ``--failures``.
    """
    parser = Parser(prog="python -m harness.status", description=__doc__.splitlines()[0])
    parser.add_argument("out", help="a results folder or URI (s3://, gs://, file://)")
    parser.add_argument("--grid", default=None, help="count against this grid instead of DIR/_grid.json")
    parser.add_argument("--failures", action="store_true", help="print each failed cell's message")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m harness.status`` (module docstring): print the state of a results folder's cells.

    Args:
        argv: the command's arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit code, 0 read, :data:`EXIT_DAMAGED` where a file is damaged, :data:`harness.cli.EXIT_USAGE`
        for bad input.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        args.out = out_location(args.out)
        if not args.out.is_dir():
            raise UsageError(f"{args.out} is not a folder")
        try:
            states = classify(expected_cells(args.out, args.grid), args.out)
            rows = status_table(args.out, states=states)
        except GridError as error:
            raise UsageError(str(error)) from None
    except UsageError as error:
        print(f"harness.status: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    manifest = _manifest(args.out)
    source = args.grid or (manifest[0] if manifest else "none recorded")
    print(f"{args.out} (grid: {source})")
    try:
        read_manifest(args.out)
    except DamagedFileError as error:
        print(f"ignored {error} (cells counted without it; the next grid run rewrites it)")
    counts = ["done", "missing", "failed", "not available", "other"]
    columns = ["problem", "algorithm", "risk", "alpha", *counts]
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) if rows else len(c) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for row in rows:
        print("  ".join(str(row[c]).ljust(widths[c]) for c in columns))
    totals = {c: sum(r[c] for r in rows) for c in counts}
    print("total: " + ", ".join(f"{v} {k}" for k, v in totals.items()))
    if totals["missing"]:
        print(remaining_line(args.out, states, source))
    good, _ = cell_files(args.out)  # where the done cells ran, and on which kernels
    for line in host_summary([meta.get("provenance") or {} for _, meta in good]):
        print(f"kernels: {line}")
    resumed = resumed_cells(good)
    if resumed:
        print(f"resumed from a checkpoint (provenance.resumed_at): {len(resumed)} of {len(good)} done "
              f"cells: {', '.join(resumed)}")
    for line in running_lines(args.out):
        print(line)
    bad = invalid_files(args.out)
    for path, reason in bad:
        if is_damage(reason):
            print(f"DAMAGED {damaged([(path, reason)])}; not counted")
        else:
            print(f"ignored {path}: {reason} (not counted; a grid run recomputes its cell)")
    if args.failures:
        for path in failure_files(args.out):
            try:
                record = read_failure(path)
            except DamagedFileError as error:
                print(f"failed: unknown cell: {error}")
                continue
            label = cell_label(spec_from_dict(record["spec"]))
            print(f"failed: {label}: {record.get('message', '')} ({path})")
    return EXIT_DAMAGED if any(is_damage(reason) for _, reason in bad) else 0


if __name__ == "__main__":
    exit_with(main)
