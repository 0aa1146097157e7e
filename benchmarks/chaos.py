"""Chaos run: random faults against a small grid, then a resume, then every cell compared bit for bit
with an undisturbed run of the same grid.

    python benchmarks/chaos.py [--rounds 10] [--seed 0] [--work DIR] [--iterations 60] [--seeds 2]
        [--problems P] [--kinds KIND,...] [--hang-s 120] [--stray-wait-s 20] [--report FILE] [--keep]

It writes a grid file (random, vucb-unif and vucb-prob on branin-1-1-discrete and
goldstein-1-1-discrete, or one of them (``--problems``), ``--seeds`` seeds, ``--iterations``
iterations: cells of several seconds, so that they hand out checkpoints and a stopped run resumes
from them), runs it once undisturbed
(``WORK/reference``), then plays ``--rounds`` rounds. Each round:

1. a fresh folder ``WORK/round-NN`` holding a random share (none to half) of the reference's cell
   files, copied: the state of a grid that an earlier run left half done;
2. the driver, ``python -m harness.run --grid FILE --out FOLDER --num-cpus 2 --no-progress
   --checkpoint-every-s 1``, in a session of its own (its Ray's processes are told from any other by
   their session id);
3. at a random moment, one fault of a random kind (:data:`KINDS`): SIGKILL, SIGINT or SIGTERM to
   the driver; SIGKILL to a worker running a cell (a ``ray::_execute_cell`` child of the driver's
   raylet), to the raylet or to the GCS server; a flipped byte or a truncated file (a cell file, a
   checkpoint or another file of the folder), two cell files swapped, the folder read-only for
   5-15 s (``chattr +i`` as root, who ignores permissions; ``chmod a-w`` otherwise), or the disk
   full after a random number of the cells to run (the test hook ``VARBO_TEST_FULL_DISK_AFTER`` of
   ``harness.store``, set in the driver's environment: filling a real disk needs a mount), or a flaky
   object store: the round runs into S3 (moto's server) through a proxy that, from the fault's
   moment on, answers a fifth of the requests with HTTP 500, 503 ``SlowDown``, a reset or a stall
   past the client's read timeout (``chaos_store.py``; the round is judged on a copy of the store's
   folder, and a cell left kept on this machine is a leftover). The kinds
   come in seeded shuffles of the whole list, so ``len(KINDS)`` rounds try every kind once;
   one kind, ``damaged-pack``, runs no driver and takes none of the steps 1-6, since a grid never
   runs into a packed folder: its round packs a copy of the reference, damages one pack and has
   the four readers refuse it by name and then accept it restored (``chaos_pack.py``);
4. the driver's exit (a hang after ``--hang-s`` counts, and the run is then killed), and whether its
   exit code tells the truth: 130 after SIGINT and 143 after SIGTERM; 75 after a full disk; 1 after a
   dead raylet or GCS while cells were left; otherwise 0 exactly when every cell of the grid is
   finished on disk (judged by the driver's own last count when a file fault came after it), else 1;
5. ``--stray-wait-s`` after the driver ended, the processes of that run still running (its
   session's, those its watchdog recorded in ``/tmp/varbo-bench-<uid>/driver-<pid>-<start>.json``,
   and the watchdog itself; the same pid with the same start time): strays, which are then ended;
6. the same command again, undisturbed, to its end (timed: the recovery), its strays too; then
   every cell: lost (no file), unreadable (a file the store refuses), duplicated (two files for one
   cell), differing (columns x, z, y, x_rec, regret not bit-identical to the reference's), and
   leftovers (temporary files, the lock, the progress file, checkpoints or failure records of a
   finished grid).

Why a fresh folder per round, partly filled from the reference, rather than one folder carried
across rounds: a finished folder has nothing left to run, so a carried folder needs ``--force``,
which clears the checkpoints and leaves every old file in place, so that a resume after the fault
finds every cell done and never resumes a cell from a checkpoint. A fresh folder gives every faulted
driver work to do when the fault comes, and a resume that continues its cells from the checkpoints
the faulted run left; the copied cells are files of another run that must be kept as they are (and
targets for the file faults from the first second); and each round's damage is its own, so a count
is laid to the kind of fault that caused it.

Prints one line per round, then a table per kind of fault; exits 1 if a count that must be zero
(:data:`MUST_BE_ZERO`) is not, 2 if the undisturbed reference run fails. Everything it signals is
provably its own: its drivers (their process handles), processes of their sessions started after
them, and what their watchdogs recorded, each checked by pid and start time just before.

This script holds the grid, the judging of a round and the run; its sibling modules hold the driver
processes and their strays (``chaos_driver.py``) and the kinds of fault and their injection
(``chaos_faults.py``), the flaky object store (``chaos_store.py``) and the damaged pack's round
(``chaos_pack.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere: the harness of this checkout
    sys.path.insert(0, str(ROOT))
HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # loaded as a module (tests/harness/test_chaos.py): its sibling modules
    sys.path.append(str(HERE))

from chaos_driver import GRID_NAME, SUMMARY, Driver, wait_strays  # noqa: E402
from chaos_faults import (  # noqa: E402
    KINDS,
    RAY_KINDS,
    STOPPING_KINDS,
    Fault,
    all_done,
    full_disk_env,
    inject,
    seed_folder,
    visible_cell_files,
)
from chaos_pack import KIND as PACK_KIND  # noqa: E402
from chaos_pack import pack_round  # noqa: E402
from chaos_store import KIND as STORE_KIND  # noqa: E402
from chaos_store import FlakyStore  # noqa: E402
from chaos_store import missing as store_missing  # noqa: E402

from harness.grid import resolve_grid  # noqa: E402
from harness.results import (  # noqa: E402
    CHECKPOINT_DIR,
    FAILED_DIR,
    PROGRESS,
    RUNNING_LOCK,
    cell_path,
    check_cell_file,
    read_cell,
    read_metadata,
    spec_from_dict,
)
from harness.spec import CellSpec  # noqa: E402

#: The counts of the table that a sound harness keeps at zero (exit 1 otherwise).
MUST_BE_ZERO = ("lost", "duplicated", "differing", "unreadable", "hangs", "strays", "untruthful",
                "leftovers", "tracebacks")
#: Every count of the table, in its order.
COUNTS = ("missed", *MUST_BE_ZERO, "resumed", "retried")

PROBLEMS = ("branin-1-1-discrete", "goldstein-1-1-discrete")
ALGORITHMS = ("random", "vucb-unif", "vucb-prob")
#: Seconds the undisturbed reference run may take.
REFERENCE_S = 1800.0


def grid_text(seeds: int, iterations: int, problems: tuple[str, ...] = PROBLEMS) -> str:
    """The chaos grid as a TOML grid file (:mod:`harness.grid`).

    Args:
        seeds: seeds per (problem, algorithm).
        iterations: iterations of every cell.
        problems: the problems (a subset of :data:`PROBLEMS`: the fewer, the cheaper a round).

    Returns:
        The grid file's text.
    """
    names = ", ".join(f'"{name}"' for name in problems)
    algorithms = ", ".join(f'"{name}"' for name in ALGORITHMS)
    return (f'name = "{GRID_NAME}"\nseeds = {seeds}\niterations = {iterations}\n\n'
            f"[[cells]]\nproblems = [{names}]\nalgorithms = [{algorithms}]\n")


# ---------------------------------------------------------------------------------------------------
# judging a round


def truthful(fault: Fault, code: int | None, done: bool, output: str) -> tuple[bool, str]:
    """Whether the faulted driver's exit code tells the truth, and what was expected."""
    if code is None:
        return True, "(hang)"  # counted as a hang
    kind = fault.kind if fault.at is not None else "none"
    if kind == "driver-sigkill":
        expected = {-signal.SIGKILL}
    elif kind == "driver-sigint":
        expected = {130}
    elif kind == "driver-sigterm":
        expected = {143}
    elif kind in ("raylet-sigkill", "gcs-sigkill"):
        expected = {0, 1} if done else {1}  # after the grid's end, a lost Ray costs nothing
    elif kind == "full-disk":
        expected = {75}
    elif kind == "readonly" and re.search(r"^harness\.run: error: --out .* is not writable", output, re.M):
        expected = {2}  # read-only when the driver checked its folder: bad input, before anything ran
    elif fault.after_summary is None:  # the driver counted its cells as the fault came: either
        expected = {0, 1}
    elif fault.after_summary:  # the driver's own last count is what its code speaks of
        counts = SUMMARY.findall(output)
        expected = {0} if counts and counts[-1][1:] == ("0", "0") else {1}
    else:
        expected = {0} if done else {1}
    return code in expected, "/".join(str(c) for c in sorted(expected))


def leftovers(out: Path) -> list[str]:
    """What a finished grid should not leave in its folder: temporaries, the lock, the progress file,
    checkpoints (those set aside as damaged are kept on purpose) and failure records."""
    found = [str(p.relative_to(out)) for p in out.rglob(".*") if p.is_file()]
    found += [name for name in (RUNNING_LOCK, PROGRESS) if (out / name).exists()]
    found += [str(p.relative_to(out)) for p in (out / CHECKPOINT_DIR).rglob("*")
              if p.is_file() and not p.name.endswith(".damaged")]
    found += [str(p.relative_to(out)) for p in (out / FAILED_DIR).rglob("*") if p.is_file()]
    return found


def compare(out: Path, reference: Path, cells: list[CellSpec]) -> dict[str, list[str]]:
    """Each cell of ``out`` against the reference's: lost, unreadable, duplicated, differing."""
    from harness.verify import compare_rows

    found: dict[str, list[str]] = {"lost": [], "unreadable": [], "duplicated": [], "differing": []}
    holders: Counter[CellSpec] = Counter()
    for path in visible_cell_files(out):
        with contextlib.suppress(Exception):  # a file that cannot say which cell it holds holds none
            holders[spec_from_dict(read_metadata(path)["spec"])] += 1
    for spec in cells:
        label, path = f"{spec.problem}/{spec.algorithm}/seed{spec.seed}", cell_path(out, spec)
        if holders[spec] > 1:
            found["duplicated"].append(f"{label}: {holders[spec]} files")
        if not path.is_file():
            found["lost"].append(label)
            continue
        reason = check_cell_file(path)
        if reason is not None:
            found["unreadable"].append(f"{label}: {reason}")
            continue
        stored = read_cell(path)[1].to_pylist()
        difference, largest = compare_rows(read_cell(cell_path(reference, spec))[1].to_pylist(), stored)
        if difference is not None:
            found["differing"].append(f"{label}: at iteration {difference.iteration}, column "
                                      f"{difference.column} (max abs difference {largest:.3g})")
    return found


def _count(pattern: str, text: str) -> int:
    return sum(int(n) for n in re.findall(pattern, text))


# ---------------------------------------------------------------------------------------------------
# the run


class ReferenceRunError(RuntimeError):
    """The undisturbed run of the grid did not finish it: there is nothing to compare with."""


@dataclass
class Setup:
    """What every round shares: the grid, its cells, the reference folder and its timings."""

    grid_file: Path
    cells: list[CellSpec]
    reference: Path
    startup_s: float  # driver start to "Ray ready"
    run_s: float  # "Ray ready" to the driver's end
    hang_s: float
    stray_wait_s: float
    rounds: list[dict] = field(default_factory=list)
    store: FlakyStore | None = None  # for the rounds of the kind flaky-store


def run_reference(work: Path, grid_file: Path, hang_s: float, stray_wait_s: float) -> Setup:
    """The grid run once, undisturbed, into ``WORK/reference``: the rows to compare with, and how
    long a run takes (to place the faults' moments)."""
    reference = work / "reference"
    driver = Driver(grid_file, reference, work / "reference.log")
    ready, deadline = None, time.monotonic() + REFERENCE_S
    while driver.process.poll() is None and time.monotonic() < deadline:
        if ready is None and "Ray ready" in driver.output():
            ready = time.monotonic()
        time.sleep(0.1)
    code = driver.wait(0)
    if code is None:
        driver.end()
    cells = list(resolve_grid(str(grid_file)).cells)
    if code != 0 or not all_done(reference, cells):
        raise ReferenceRunError(f"the undisturbed reference run failed (exit {code}):\n"
                              f"{driver.output()[-3000:]}")
    ready = ready or driver.ended_at
    strays = wait_strays(driver, stray_wait_s)
    if strays:
        print(f"chaos: the reference run left {len(strays)} process(es): {strays}", file=sys.stderr)
    print(f"reference: {len(cells)} cells in {driver.ended_at - driver.started_at:.1f} s "
          f"(Ray ready after {ready - driver.started_at:.1f} s)", flush=True)
    return Setup(grid_file, cells, reference, ready - driver.started_at, driver.ended_at - ready,
                 hang_s, stray_wait_s)


def reference_setup(work: Path, grid_file: Path, hang_s: float, stray_wait_s: float) -> Setup:
    """The reference of an earlier chaos run in ``work`` of the same grid (``reference.json``: its
    grid and timings; its cells all in place), or a new one (:func:`run_reference`)."""
    cells = list(resolve_grid(str(grid_file)).cells)
    saved = work / "reference.json"
    with contextlib.suppress(OSError, ValueError, KeyError):
        known = json.loads(saved.read_text())
        if known["grid"] == grid_file.read_text() and all_done(work / "reference", cells):
            print(f"reference: {len(cells)} cells of an earlier run in {work / 'reference'}", flush=True)
            return Setup(grid_file, cells, work / "reference", known["startup_s"], known["run_s"],
                         hang_s, stray_wait_s)
    setup = run_reference(work, grid_file, hang_s, stray_wait_s)
    saved.write_text(json.dumps({"grid": grid_file.read_text(), "startup_s": setup.startup_s,
                                 "run_s": setup.run_s}))
    return setup


def fault_delay(kind: str, setup: Setup, share: float, rng: random.Random) -> float:
    """When the fault comes: a random moment of the run (counted from "Ray ready" for
    :data:`RAY_KINDS`, else from the driver's start, imports and Ray's start included)."""
    run = max(2.0, setup.run_s * share)
    if kind in RAY_KINDS:
        return rng.uniform(0.0, 0.8 * run)
    return rng.uniform(0.5, setup.startup_s + 0.8 * run)


def faulted_run(setup: Setup, kind: str, folder: Path, share: float, rng: random.Random) -> dict:
    """Steps 2-5 of a round: the driver, the fault, its exit and its strays."""
    env = full_disk_env(round(share * len(setup.cells)), rng) if kind == "full-disk" else None
    store = setup.store if kind == STORE_KIND else None
    out, env = (store.uri(folder), store.env()) if store else (folder, env)
    driver = Driver(setup.grid_file, out, folder.parent / f"{folder.name}.faulted.log", env)
    fault = inject(kind, driver, folder, fault_delay(kind, setup, share, rng), setup.hang_s, rng, store)
    # a fault that stops the driver: hang_s to stop; otherwise the rest of the grid too
    stops = kind in STOPPING_KINDS and fault.at is not None
    since = driver.started_at + fault.at if fault.at is not None else time.monotonic()
    patience = setup.hang_s + (0 if stops else 2 * (setup.startup_s + setup.run_s))
    code = driver.wait(since + patience - time.monotonic())
    if code is None:
        driver.end()
    if store:  # the faults counted, and the store's folder copied here to be judged
        counts = store.calm()
        fault.what = fault.what and fault.what + counts
        store.mirror(folder)
    done = all_done(folder, setup.cells)
    output = driver.output()
    true, expected = truthful(fault, code, done, output)
    strays = wait_strays(driver, setup.stray_wait_s)
    return {"kind": kind, "fault": fault.what or "missed", "fault_at_s": fault.at,
            "missed": fault.at is None, "exit": code, "expected": expected, "truthful": true,
            "hang": code is None, "done_at_exit": done, "strays": sorted(f"{n} (pid {p})" for p, (_, n)
                                                                       in strays.items()),
            "retried": len(re.findall(r"^retrying ", output, re.MULTILINE)),
            "tracebacks": output.count("Traceback"),
            "exited_after_s": None if driver.ended_at is None else driver.ended_at - driver.started_at}


def resume(setup: Setup, folder: Path, store: FlakyStore | None = None) -> dict:
    """Step 6: the same command again, undisturbed, to its end; its strays; the cells compared
    (``store``: the round's flaky object store, calm now)."""
    out, env = (store.uri(folder), store.env()) if store else (folder, None)
    driver = Driver(setup.grid_file, out, folder.parent / f"{folder.name}.resume.log", env)
    code = driver.wait(setup.hang_s + 3 * (setup.startup_s + setup.run_s))
    if code is None:
        driver.end()
    if store:
        store.mirror(folder)
    output = driver.output()
    found = compare(folder, setup.reference, setup.cells)
    strays = wait_strays(driver, setup.stray_wait_s)
    return {"resume_exit": code, "resume_hang": code is None,
            "recovery_s": None if driver.ended_at is None else driver.ended_at - driver.started_at,
            "resume_strays": sorted(f"{n} (pid {p})" for p, (_, n) in strays.items()),
            "resumed": _count(r"(\d+) cell\(s\) resumed from their checkpoints", output),
            # 0 exactly when every cell is finished (and a cell left unfinished is counted as lost)
            "resume_truthful": code is None or (code == 0) == (not found["lost"] and not found["unreadable"]),
            "resume_tracebacks": output.count("Traceback"),
            "leftovers": leftovers(folder) + (store.kept_cells() if store else []), **found}


def play_round(setup: Setup, number: int, kind: str, rng: random.Random, work: Path) -> dict:
    """One round (see the module's docstring); its record."""
    folder = work / f"round-{number:02d}"
    if kind == PACK_KIND:  # no driver: the readers of a packed copy of the reference
        record = {"round": number, **pack_round(setup.reference, setup.cells, folder, rng, setup.hang_s)}
        record["counts"] = round_counts(record)
        return record
    copied = seed_folder(folder, setup.reference, setup.cells, rng)
    store = setup.store if kind == STORE_KIND else None
    if store:
        store.upload(folder)
    share = (len(setup.cells) - copied) / len(setup.cells)
    record = {"round": number, "copied": copied, **faulted_run(setup, kind, folder, share, rng)}
    record.update(resume(setup, folder, store))
    record["counts"] = round_counts(record)
    return record


def round_counts(record: dict) -> dict[str, int]:
    """The round's contribution to each count of the table."""
    return {"missed": int(record["missed"]), "lost": len(record["lost"]),
            "duplicated": len(record["duplicated"]), "differing": len(record["differing"]),
            "unreadable": len(record["unreadable"]),
            "hangs": int(record["hang"]) + int(record["resume_hang"]),
            "strays": len(record["strays"]) + len(record["resume_strays"]),
            # a damaged pack's round counts each reader that misjudged (its list "untruthful")
            "untruthful": len(record["untruthful"]) if "untruthful" in record
            else int(not record["truthful"]) + int(not record["resume_truthful"]),
            "leftovers": len(record["leftovers"]),
            "tracebacks": record["tracebacks"] + record["resume_tracebacks"], "resumed": record["resumed"],
            "retried": record["retried"]}


def round_line(record: dict) -> str:
    """One line on a round as it ends."""
    at = "missed" if record["missed"] else f"at {record['fault_at_s']:.1f} s"
    counts = ", ".join(f"{k} {v}" for k, v in record["counts"].items() if v and k != "missed")
    recovery = "-" if record["recovery_s"] is None else f"{record['recovery_s']:.1f} s"
    line = (f"round {record['round']:2d} {record['kind']:14s} {at}: {record['fault']}; exit "
            f"{record['exit']} (expected {record['expected']}); resume exit {record['resume_exit']} in "
            f"{recovery}; {record['copied']} cells copied; {counts or 'nothing to count'}")
    details = [f"  {name}: {item}" for name in ("lost", "duplicated", "differing", "unreadable",
                                               "strays", "resume_strays", "leftovers", "untruthful")
               for item in record.get(name, [])]
    return "\n".join([line, *details])


def table(rounds: list[dict]) -> tuple[str, dict[str, int]]:
    """The table per kind of fault (and the totals)."""
    header = ["kind", "rounds", *COUNTS, "recovery s"]
    rows, totals = [], Counter()
    for kind in [*KINDS, "total"]:
        mine = [r for r in rounds if kind in (r["kind"], "total")]
        if not mine:
            continue
        counts = Counter()
        for record in mine:
            counts.update(record["counts"])
        if kind == "total":
            totals = counts
        times = [r["recovery_s"] for r in mine if r["recovery_s"] is not None]
        mean = f"{sum(times) / len(times):.1f}" if times else "-"
        rows.append([kind, str(len(mine)), *(str(counts[c]) for c in COUNTS), mean])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(text.ljust(w) if i == 0 else text.rjust(w) for i, (text, w) in
                       enumerate(zip(row, widths, strict=True))) for row in [header, *rows]]
    return "\n".join(lines), {c: totals[c] for c in COUNTS}


def schedule(rounds: int, rng: random.Random, kinds: tuple[str, ...]) -> list[str]:
    """The kind of each round: seeded shuffles of ``kinds``, one after another."""
    order: list[str] = []
    while len(order) < rounds:
        batch = list(kinds)
        rng.shuffle(batch)
        order += batch
    return order[:rounds]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="rounds, one fault each (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the faults' schedule (default 0)")
    parser.add_argument("--work", default=None, help="working folder (default: a new temporary one)")
    parser.add_argument("--iterations", type=int, default=60, help="iterations of every cell (default 60)")
    parser.add_argument("--seeds", type=int, default=2, help="seeds per (problem, algorithm) (default 2)")
    parser.add_argument("--problems", default=",".join(PROBLEMS), choices=[",".join(PROBLEMS), *PROBLEMS],
                        metavar="P",
                        help=f"the grid's problems: both (default) or one of {', '.join(PROBLEMS)}")
    parser.add_argument("--kinds", default=",".join(KINDS), help="kinds of fault, comma-separated")
    parser.add_argument("--hang-s", type=float, default=120.0, help="a driver still running this long "
                        "after a fault that stops it hangs (default 120)")
    parser.add_argument("--stray-wait-s", type=float, default=20.0,
                        help="seconds after a driver's end at which its processes must be gone")
    parser.add_argument("--report", default=None, help="write every round's record as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the working folder")
    args = parser.parse_args(argv)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds or args.rounds < 1:
        parser.error(f"unknown kinds {unknown}; valid: {', '.join(KINDS)}" if unknown or not kinds
                     else "--rounds must be >= 1")
    if STORE_KIND in kinds and store_missing():
        parser.error(f"{store_missing()}; or leave it out with --kinds")
    args.kinds = kinds
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rng = random.Random(args.seed)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="varbo-chaos-"))
    work.mkdir(parents=True, exist_ok=True)
    grid_file = work / f"{GRID_NAME}.toml"
    grid_file.write_text(grid_text(args.seeds, args.iterations, tuple(args.problems.split(","))))
    print(f"chaos: {args.rounds} rounds, seed {args.seed}, in {work}", flush=True)
    try:
        setup = reference_setup(work, grid_file, args.hang_s, args.stray_wait_s)
    except ReferenceRunError as error:
        print(f"chaos: {error}", file=sys.stderr)
        return 2
    order = schedule(args.rounds, rng, args.kinds)
    setup.store = FlakyStore(work) if STORE_KIND in order else None
    try:
        for number, kind in enumerate(order, start=1):
            # a generator per round: the timing-dependent draws of one round (which file, which
            # worker) do not move the next rounds' copies and moments
            record = play_round(setup, number, kind, random.Random(args.seed * 100_003 + number), work)
            setup.rounds.append(record)
            print(round_line(record), flush=True)
    finally:
        if setup.store:
            setup.store.stop()
    text, totals = table(setup.rounds)
    print(text)
    bad = {name: totals[name] for name in MUST_BE_ZERO if totals[name]}
    if args.report:
        Path(args.report).write_text(json.dumps({"seed": args.seed, "rounds": setup.rounds,
                                                 "totals": totals, "bad": bad}, indent=1, default=str))
    remove = not (args.keep or bad or args.work)
    print(f"chaos: {'FAILED: ' + ', '.join(f'{k} {v}' for k, v in bad.items()) if bad else 'all clear'}"
          f" ({work}{' removed' if remove else ''})")
    if remove:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
