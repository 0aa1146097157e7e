"""``python -m harness.stage RUN --to FOLDER``: keep what a grid run in progress has done, to commit it.

A grid of hours outlives the session, and sometimes the machine, that started it. A stage copies what it
has done so far to a folder that lasts (a repository's, committed at every stage), as three things:

- ``FOLDER``: the run's finished cells, packed (:mod:`harness.pack`); with ``--without PUBLISHED``, only
  those that the results folder ``PUBLISHED`` (packed or not) does not hold, by spec hash;
- ``FOLDER-checkpoints`` (``--checkpoints``): the run's checkpoints (``RUN/_checkpoints``), the cells in
  flight;
- ``FOLDER-runs.csv`` (``--ledger``): the run's ledger, a row per start of its driver
  (:data:`LEDGER_FIELDS`): the driver running into ``RUN`` now is added when it has no row yet. The grid
  records the host of each part of a resumed cell in the cell itself (``segments``); the ledger says the
  same of a run whose code predates that record, and lists every host a run ever had.

The first two are rebuilt beside their targets and swapped in whole. A stage never loses a staged cell:
where ``FOLDER`` holds a cell that neither ``RUN`` nor ``PUBLISHED`` holds (a run folder lost and started
again), nothing changes. ``FOLDER`` also keeps the run's grid manifest (``_grid.json``).

``--restore`` goes the other way, to resume on a machine that lacks the run's folder (or beside it):
into ``RUN`` (created where missing) go the staged cells, unpacked; with ``--without PUBLISHED``, the
publication's cells that are cells of the staged grid (by its manifest); and the staged checkpoints.
Nothing ``RUN`` holds is replaced, and a folder a driver is running into is refused. Then the same grid
command resumes into ``RUN`` (``docs/how-to/resume.md``); on the CPU vendor the checkpoints were made on,
the rows are a whole run's.

Exit codes: 0 staged or restored; 2 bad input, or a stage that would lose staged cells (one line;
nothing changed).
"""

from __future__ import annotations

import csv
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from harness.cli import EXIT_USAGE, Parser, UsageError, exit_with
from harness.kernels import cpu_model, cpu_vendor
from harness.pack import pack, unpack
from harness.procs import process_alive, record_holder
from harness.results import (
    CHECKPOINT_DIR,
    MANIFEST,
    RUNNING_LOCK,
    DamagedFileError,
    cell_files,
    file_hash,
    packs,
    read_manifest,
    spec_hash,
)

PROG = "python -m harness.stage"
#: The ledger's columns: when the driver started (UTC, to the minute), the commit of the checkout it runs
#: in, the CPU's model and vendor (:mod:`harness.kernels`), and where the row comes from.
LEDGER_FIELDS = ("seen_utc", "commit", "cpu", "vendor", "evidence")


@dataclass(frozen=True)
class Driver:
    """A grid's driver running on this host, as its lock names it.

    Attributes:
        pid: its process id.
        started: when it started (UTC).
        cwd: its working directory.
    """

    pid: int
    started: datetime
    cwd: Path


def _hashes(folder: Path) -> set[str]:
    """The spec hashes of ``folder``'s finished cells; :class:`UsageError` if a file is damaged."""
    good, bad = cell_files(folder)
    if bad:
        raise UsageError(f"{bad[0][0]}: {bad[0][1]}; nothing was staged")
    return {file_hash(path) for path, _ in good}


def new_cells(run: Path, without: Path | None, staged: Path) -> list[Path]:
    """The finished cell files of ``run`` that ``without`` does not hold, once no staged cell would be lost.

    Args:
        run: a grid's results folder of cell files (not packed).
        without: a results folder (packed or not) whose cells are left out, or None.
        staged: the folder staged before (may be missing).

    Returns:
        The cell files, sorted.

    Raises:
        UsageError: ``run`` is packed, a cell file of a folder is damaged, or ``staged`` holds a cell that
            neither ``run`` nor ``without`` holds.
    """
    if packs(run):
        raise UsageError(f"{run} is packed: a run in progress is a folder of cell files")
    good, bad = cell_files(run)
    if bad:
        raise UsageError(f"{bad[0][0]}: {bad[0][1]}; nothing was staged")
    left_out = _hashes(without) if without is not None else set()
    lost = (_hashes(staged) if staged.is_dir() else set()) - left_out - {file_hash(path) for path, _ in good}
    if lost:
        raise UsageError(f"{staged} holds {len(lost)} cells that {run} lacks (e.g. {sorted(lost)[0]}): "
                         f"restore it into {run} first (harness.stage {run} --to {staged} --restore); "
                         "nothing was staged")
    return [path for path, _ in good if file_hash(path) not in left_out]


def _old(target: Path) -> Path:
    """Where :func:`_swap` keeps ``target``'s former content until the new one is in place."""
    return target.with_name(f".{target.name}.old")


def recover(target: Path) -> None:
    """Undo a swap that stopped between its two renames: ``target`` missing and its former content kept
    aside (:func:`_old`) is put back; a leftover beside a ``target`` that is there is removed.

    Args:
        target: a staged folder.
    """
    old = _old(target)
    if old.exists() and not target.exists():
        old.rename(target)
    shutil.rmtree(old, ignore_errors=True)


def _swap(built: Path, target: Path) -> None:
    """Put the folder ``built`` where ``target`` is, removing what was there (both on one file system)."""
    recover(target)
    if target.exists():
        target.rename(_old(target))
    built.rename(target)
    shutil.rmtree(_old(target), ignore_errors=True)


def stage_cells(run: Path, cells: list[Path], to: Path) -> int:
    """Replace ``to`` with ``cells`` (files of ``run``), packed, and the run's grid manifest (which cells
    are its grid's: :func:`restore` takes the publication's cells by it).

    Args:
        run: the run's folder.
        cells: its cell files to stage (:func:`new_cells`).
        to: the staged folder; removed where there is neither a cell nor a manifest to stage.

    Returns:
        The number of cells staged.
    """
    to.parent.mkdir(parents=True, exist_ok=True)
    built = Path(tempfile.mkdtemp(prefix=f".{to.name}.", dir=to.parent))
    try:
        for path in cells:
            target = built / path.relative_to(run)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        if (run / MANIFEST).is_file():
            shutil.copy2(run / MANIFEST, built / MANIFEST)
        if cells:
            pack(built)
        if cells or (built / MANIFEST).is_file():
            _swap(built, to)
        else:
            shutil.rmtree(to, ignore_errors=True)
    finally:
        shutil.rmtree(built, ignore_errors=True)
    return len(cells)


def stage_checkpoints(run: Path, to: Path) -> int:
    """Replace ``to`` with a copy of ``run``'s checkpoints.

    A checkpoint removed while it is copied (its cell finished) is left out: the cell is in ``run``.

    Args:
        run: the run's folder.
        to: the staged checkpoints' folder.

    Returns:
        The number of checkpoint files staged.
    """
    to.parent.mkdir(parents=True, exist_ok=True)
    built = Path(tempfile.mkdtemp(prefix=f".{to.name}.", dir=to.parent))
    copied = 0
    try:
        source = run / CHECKPOINT_DIR
        for path in sorted(source.rglob("*")) if source.is_dir() else []:
            if not path.is_file() or path.name.startswith("."):  # a temporary being written
                continue
            target = built / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                shutil.copy2(path, target)
            except FileNotFoundError:
                continue
            copied += 1
        _swap(built, to)
    finally:
        shutil.rmtree(built, ignore_errors=True)
    return copied


def _boot_time() -> float:
    """This host's boot time, seconds since the epoch (``btime`` of ``/proc/stat``)."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    raise OSError("/proc/stat has no btime")


def _lock(run: Path) -> tuple[str, int, str | None] | None:
    """The host, pid and start time (None where not recorded) that ``run``'s lock names, None without one
    (an unreadable lock: None too, as the grid counts it stale)."""
    try:
        return record_holder((run / RUNNING_LOCK).read_text())
    except OSError:
        return None


def running_driver(run: Path) -> Driver | str:
    """The driver writing into ``run`` now, from its lock (:data:`harness.results.RUNNING_LOCK`).

    Args:
        run: the run's folder.

    Returns:
        The driver, or why there is none to record: no lock, a stale one, another host's, or a lock
        written without its driver's start time.
    """
    lock = _lock(run)
    if lock is None:
        return "no grid's driver is running into it"
    host, pid, ticks = lock
    if host != socket.gethostname():
        return f"its driver runs on host {host}: stage there to record it"
    if not process_alive(pid, ticks):
        return f"its driver (pid {pid}) is no longer running"
    if ticks is None:
        return f"its lock {RUNNING_LOCK} does not name its driver's start time"
    started = _boot_time() + int(ticks) / os.sysconf("SC_CLK_TCK")
    cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    return Driver(pid, datetime.fromtimestamp(started, UTC), cwd)


def _commit(checkout: Path) -> str:
    """The short commit of the git checkout ``checkout``, ``-modified`` appended where its tracked files
    differ from it; ``-`` where it is no git checkout."""
    def git(*words: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(checkout), *words], capture_output=True, text=True)
    head = git("rev-parse", "--short=7", "HEAD")
    if head.returncode:
        return "-"
    return head.stdout.strip() + ("-modified" if git("diff", "--quiet", "HEAD").returncode else "")


def record_driver(ledger: Path, driver: Driver) -> bool:
    """Add ``driver``'s row to ``ledger`` (created with its header) unless a row of its start is there.

    Args:
        ledger: the run's ledger (CSV of :data:`LEDGER_FIELDS`).
        driver: the driver running now.

    Returns:
        Whether a row was added.
    """
    seen = driver.started.strftime("%Y-%m-%d %H:%M")
    rows = list(csv.DictReader(ledger.open(newline=""))) if ledger.is_file() else []
    if any(row.get("seen_utc") == seen for row in rows):
        return False
    fresh = not ledger.is_file()
    ledger.parent.mkdir(parents=True, exist_ok=True)
    with ledger.open("a", newline="") as handle:
        writer = csv.writer(handle)
        if fresh:
            writer.writerow(LEDGER_FIELDS)
        writer.writerow([seen, _commit(driver.cwd), cpu_model(), cpu_vendor(),
                         f"the driver's start (pid {driver.pid}), read by harness.stage on this host"])
    return True


def _unpacked(folder: Path, into: Path) -> Path:
    """A copy of the results folder ``folder`` at ``into``, one file per cell (unpacked where packed), without
    its report and checkpoints."""
    shutil.copytree(folder, into, ignore=shutil.ignore_patterns("_report", CHECKPOINT_DIR))
    if packs(into):
        unpack(into)
    return into


def _copy_missing(source: Path, run: Path, wanted: set[str] | None) -> int:
    """Copy the cell files of ``source`` (those whose hash is in ``wanted``, if given) into ``run``, where it
    has none of that name: a cell the run has is never replaced. Returns the number copied."""
    good, bad = cell_files(source)
    if bad:
        raise UsageError(f"{bad[0][0]}: {bad[0][1]}; restore stopped")
    copied = 0
    for path, _ in good:
        target = run / path.relative_to(source)
        if (wanted is None or file_hash(path) in wanted) and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
            copied += 1
    return copied


def restore(run: Path, to: Path, without: Path | None, checkpoints: Path) -> tuple[int, int, int]:
    """Make ``run`` ready to resume from a stage: the staged cells, unpacked; the cells of ``without`` that
    are cells of the staged grid; the staged checkpoints. Nothing ``run`` holds is replaced.

    Args:
        run: the folder the grid will run into (created where missing).
        to: the staged folder (with the grid's manifest where ``without`` is given).
        without: the publication the run extends, or None.
        checkpoints: the staged checkpoints.

    Returns:
        The numbers of staged cells, published cells and checkpoints copied into ``run``.

    Raises:
        UsageError: a driver is running into ``run``, nothing is staged at ``to``, ``to`` has no manifest
            where ``without`` is given, or a cell file is damaged.
    """
    lock = _lock(run)
    if lock is not None and (lock[0] != socket.gethostname() or process_alive(lock[1], lock[2])):
        raise UsageError(f"a grid's driver (host {lock[0]}, pid {lock[1]}) holds {run}: stop it, or remove "
                         f"{run / RUNNING_LOCK} if it has ended, before restoring into it")
    if not to.is_dir():
        raise UsageError(f"nothing is staged at {to}")
    try:
        manifest = read_manifest(to)
    except DamagedFileError as error:
        raise UsageError(str(error)) from None
    if without is not None and manifest is None:
        raise UsageError(f"{to} has no {MANIFEST}, so which of {without}'s cells are the grid's is unknown: "
                         "stage with this version first")
    run.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".restore.", dir=run.parent) as scratch:
        n_staged = _copy_missing(_unpacked(to, Path(scratch) / "staged"), run, None)
        n_published = 0
        if without is not None and manifest is not None:
            wanted = {spec_hash(spec) for spec in manifest[1]}
            n_published = _copy_missing(_unpacked(without, Path(scratch) / "published"), run, wanted)
    n_checkpoints = 0
    for path in sorted(checkpoints.rglob("*")) if checkpoints.is_dir() else []:
        target = run / CHECKPOINT_DIR / path.relative_to(checkpoints)
        if path.is_file() and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
            n_checkpoints += 1
    return n_staged, n_published, n_checkpoints


def build_parser() -> Parser:
    """The command line of ``python -m harness.stage``.

    Returns:
        The parser of ``RUN``, ``--to``, ``--without``, ``--checkpoints``, ``--ledger`` and ``--restore``.
    """
    parser = Parser(prog=PROG, description="Stage a grid run in progress: its finished cells (packed), its "
                    "checkpoints, and its driver's row in the run's ledger, each in a folder that lasts.",
                    epilog="Exit codes: 0 staged or restored; 2 bad input, or a stage that would lose staged "
                    "cells.")
    parser.add_argument("run", metavar="RUN", help="the folder a grid runs into (harness.run --out)")
    parser.add_argument("--to", metavar="FOLDER", required=True,
                        help="where its finished cells go, packed (replaced at every stage)")
    parser.add_argument("--without", metavar="PUBLISHED",
                        help="a results folder whose cells are not staged (a publication the run extends)")
    parser.add_argument("--checkpoints", metavar="DIR", help="where its checkpoints go (FOLDER-checkpoints)")
    parser.add_argument("--ledger", metavar="CSV", help="the run's ledger of driver starts (FOLDER-runs.csv)")
    parser.add_argument("--restore", action="store_true",
                        help="the other way: make RUN ready to resume from the stage (the staged cells, "
                             "PUBLISHED's cells of the staged grid, the checkpoints; nothing RUN holds is "
                             "replaced), then rerun the grid into RUN")
    return parser


def _folders(args) -> tuple[Path, Path, Path | None, Path, Path]:
    """RUN, FOLDER, PUBLISHED, the checkpoints' folder and the ledger, checked."""
    run, to = Path(args.run), Path(args.to)
    without = Path(args.without) if args.without else None
    for folder in (run if not args.restore else None, without):
        if folder is not None and not folder.is_dir():
            raise UsageError(f"{folder} is not a folder")
    checkpoints = Path(args.checkpoints) if args.checkpoints else to.with_name(f"{to.name}-checkpoints")
    ledger = Path(args.ledger) if args.ledger else to.with_name(f"{to.name}-runs.csv")
    for target in (to, checkpoints, ledger):
        a, b = target.resolve(), run.resolve()
        if a.is_relative_to(b) or b.is_relative_to(a):
            raise UsageError(f"{target} and {run} overlap: stage into a folder outside the run's")
    return run, to, without, checkpoints, ledger


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m harness.stage`` (module docstring).

    Args:
        argv: the command's arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit code, 0 staged (or restored), :data:`harness.cli.EXIT_USAGE` for bad input or a stage that
        would lose staged cells.
    """
    try:
        args = build_parser().parse_args(argv)
        run, to, without, checkpoints, ledger = _folders(args)
        for target in (to, checkpoints):
            recover(target)
        if args.restore:
            n_staged, n_published, n_checkpoints = restore(run, to, without, checkpoints)
            print(f"{run}: restored {n_staged} staged cells, {n_published} published cells and "
                  f"{n_checkpoints} checkpoints (what it held is kept); resume by running its grid into it")
            return 0
        cells = new_cells(run, without, to)
        n_cells = stage_cells(run, cells, to)
        n_checkpoints = stage_checkpoints(run, checkpoints)
    except UsageError as error:
        print(f"harness.stage: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{run}: {n_cells} finished cells staged in {to}, {n_checkpoints} checkpoints in {checkpoints}")
    driver = running_driver(run)
    if isinstance(driver, str):
        print(f"{ledger}: unchanged, {driver}")
    elif record_driver(ledger, driver):
        print(f"{ledger}: added the driver started {driver.started:%Y-%m-%d %H:%M} UTC (pid {driver.pid})")
    else:
        print(f"{ledger}: already has the driver started {driver.started:%Y-%m-%d %H:%M} UTC")
    return 0


if __name__ == "__main__":
    exit_with(main)
