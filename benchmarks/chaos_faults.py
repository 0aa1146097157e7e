"""The chaos run's faults (:mod:`chaos`, ``benchmarks/chaos.py``): their kinds (:data:`KINDS`),
the results folder they hit (its files by sort, a read-only spell, a fresh folder partly filled
from the reference), and the injection of one fault into a running driver (:func:`inject`)."""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from chaos_driver import SUMMARY, Driver, kill_if_same  # first: it puts this checkout's harness on sys.path

from harness.results import CHECKPOINT_DIR, cell_path, check_cell_file, visible_files
from harness.spec import CellSpec
from harness.store import FULL_DISK_HOOK

#: The kinds of fault, one per round.
KINDS = ("driver-sigkill", "driver-sigint", "driver-sigterm", "worker-sigkill", "raylet-sigkill",
         "gcs-sigkill", "flip", "truncate", "swap", "readonly", "full-disk", "flaky-store", "damaged-pack")
#: Faults that need the local Ray up: their moment is counted from the driver's "Ray ready" line.
RAY_KINDS = ("worker-sigkill", "raylet-sigkill", "gcs-sigkill")
#: Faults after which the driver must stop at once (the others let it finish its grid).
STOPPING_KINDS = ("driver-sigkill", "driver-sigint", "driver-sigterm", "raylet-sigkill", "gcs-sigkill",
                  "full-disk")
#: The driver's line at a full disk's first refused write (:mod:`harness.ray_runner`).
FULL = re.compile(r"^harness\.run: error: .* is full: ", re.MULTILINE)


# ---------------------------------------------------------------------------------------------------
# the results folder


def tree(out: Path) -> list[Path]:
    """Every file and folder under ``out`` (not ``out`` itself), read while a driver may be changing
    it: a folder that vanishes between listing and reading is skipped (``os.walk`` ignores the
    error), where ``Path.rglob`` raises ``FileNotFoundError`` (a finished cell's checkpoint folder
    removed mid-scan failed a CI run that way)."""
    found: list[Path] = []
    for folder, folders, files in os.walk(out):
        found += [Path(folder, name) for name in folders + files]
    return found


def visible_cell_files(out: Path) -> list[Path]:
    """The ``*.parquet`` files under ``out`` that readers see (no part '.'- or '_'-prefixed)."""
    return sorted(visible_files(out, ".parquet"))


def fault_targets(out: Path) -> dict[str, list[Path]]:
    """The files of ``out`` a byte flip or a truncation may hit, by sort: cell files, checkpoints,
    and the rest (the manifest, the lock, the progress file, failure records); temporaries left out."""
    files = [p for p in tree(out) if p.is_file() and not p.name.startswith(".")]
    cells = set(visible_cell_files(out))
    checkpoints = [p for p in files if CHECKPOINT_DIR in p.relative_to(out).parts]
    return {"cell": sorted(cells), "checkpoint": sorted(checkpoints),
            "other": sorted(set(files) - cells - set(checkpoints))}


def all_done(out: Path, cells: list[CellSpec]) -> bool:
    """Whether every cell's file is in place and the store accepts it."""
    return all(cell_path(out, spec).is_file() and check_cell_file(cell_path(out, spec)) is None
               for spec in cells)


@contextlib.contextmanager
def read_only(out: Path):
    """``out`` and everything in it read-only, even for root (``chattr +i``), until the end."""
    immutable = os.geteuid() == 0 and shutil.which("chattr") is not None
    modes: dict[Path, int] = {}
    done: set[Path] = set()
    for _ in range(2):  # again: a folder made meanwhile
        paths = [p for p in [out, *tree(out)] if p not in done]
        done.update(paths)
        if immutable:
            subprocess.run(["chattr", "-f", "+i", *map(str, paths)], capture_output=True, check=False)
            continue
        for path in paths:
            with contextlib.suppress(OSError):
                modes[path] = path.stat().st_mode
                path.chmod(modes[path] & ~0o222)
    try:
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-f", "-R", "-i", str(out)], capture_output=True, check=False)
        for path, mode in modes.items():
            with contextlib.suppress(OSError):
                path.chmod(mode)


def seed_folder(out: Path, reference: Path, cells: list[CellSpec], rng: random.Random) -> int:
    """A fresh ``out`` holding copies of the reference's files of a random share (none to half) of
    ``cells``; how many."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    chosen = rng.sample(cells, rng.randint(0, len(cells) // 2))
    for spec in chosen:
        target = cell_path(out, spec)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(cell_path(reference, spec), target)
    return len(chosen)


# ---------------------------------------------------------------------------------------------------
# faults


@dataclass
class Fault:
    """What was done, when (seconds after the driver started), and whether the driver's last count
    ("grid chaos: N done, ...") was printed before it (None: it came meanwhile)."""

    kind: str
    what: str = ""
    at: float | None = None  # None: missed (the driver had ended, or there was nothing to hit)
    after_summary: bool | None = False


def _until(driver: Driver, deadline: float, find):
    """``find()``'s first true answer, polled until ``deadline`` or the driver's end (then None)."""
    while time.monotonic() < deadline and driver.process.poll() is None:
        found = find()
        if found:
            return found
        time.sleep(0.05)
    return None


def _signal_driver(driver: Driver, kind: str) -> str | None:
    signum = {"driver-sigkill": signal.SIGKILL, "driver-sigint": signal.SIGINT,
              "driver-sigterm": signal.SIGTERM}[kind]
    if driver.process.poll() is not None:
        return None
    driver.process.send_signal(signum)
    return f"{signal.Signals(signum).name} to the driver (pid {driver.pid})"


def _kill_ray(driver: Driver, kind: str, deadline: float, rng: random.Random) -> str | None:
    if kind == "worker-sigkill":
        workers = _until(driver, deadline, driver.workers)
        target, name = (rng.choice(workers), "worker running a cell") if workers else (None, "")
    else:
        name = "raylet" if kind == "raylet-sigkill" else "gcs_server"
        target = _until(driver, deadline, lambda: driver.ray_child(name))
    if target is None or not kill_if_same(*target):
        return None
    return f"SIGKILL to the {name} (pid {target[0]})"


def _damage_file(out: Path, kind: str, driver: Driver, deadline: float, rng: random.Random) -> str | None:
    def pick() -> Path | None:
        targets = fault_targets(out)
        sorts = [s for s in [*rng.choices(["cell", "checkpoint", "other"], [6, 3, 1], k=1), "cell", "other"]
                 if targets[s]]
        return rng.choice(targets[sorts[0]]) if sorts else None

    path = _until(driver, deadline, pick)
    try:
        size = path.stat().st_size if path is not None else 0
        if path is None or size == 0:
            return None
        if kind == "truncate":
            length = rng.randrange(size)
            os.truncate(path, length)
            return f"{path.relative_to(out)} truncated from {size} to {length} bytes"
        offset, mask = rng.randrange(size), rng.randrange(1, 256)
        with open(path, "r+b") as stream:
            stream.seek(offset)
            byte = stream.read(1)[0]
            stream.seek(offset)
            stream.write(bytes([byte ^ mask]))
        return f"{path.relative_to(out)}: byte {offset} of {size} xor {mask:#04x}"
    except OSError as error:  # replaced or removed by the driver meanwhile
        return f"{path.relative_to(out)}: gone before the damage ({type(error).__name__})"


def _swap(out: Path, driver: Driver, deadline: float, rng: random.Random) -> str | None:
    pair = _until(driver, deadline, lambda: len(visible_cell_files(out)) >= 2 and rng.sample(
        visible_cell_files(out), 2))
    if not pair:
        return None
    first, second = pair
    hold = out / f".chaos-swap-{os.getpid()}"
    try:
        os.replace(first, hold)
        os.replace(second, first)
        os.replace(hold, second)
    except OSError as error:
        return f"swap of {first.relative_to(out)} and {second.relative_to(out)} cut short ({error})"
    return f"{first.relative_to(out)} and {second.relative_to(out)} swapped"


def full_disk_env(to_run: int, rng: random.Random) -> dict[str, str]:
    """The environment of a driver whose disk is full after a random number of its ``to_run``
    cells (0 to ``to_run`` - 1, so that it always comes): the hook of :mod:`harness.store`, since a
    real disk cannot be filled here without mounting one."""
    return {FULL_DISK_HOOK: str(rng.randrange(max(1, to_run)))}


def _full_disk(driver: Driver, patience_s: float) -> str | None:
    """Wait for the driver's line at its first refused write (the hook set in :func:`full_disk_env`
    fills its disk): what happened, or None if it ended or waited ``patience_s`` without one."""
    said = _until(driver, time.monotonic() + patience_s, lambda: FULL.search(driver.output()))
    if not (said or FULL.search(driver.output())):  # said just before it ended: found all the same
        return None
    return f"the disk full after {driver.env.get(FULL_DISK_HOOK)} cell file(s) ({FULL_DISK_HOOK})"


def inject(kind: str, driver: Driver, out: Path, delay: float, patience_s: float,
           rng: random.Random, store=None) -> Fault:
    """Wait until ``delay`` seconds after the driver's start (after its "Ray ready" line for
    :data:`RAY_KINDS`), then inject a fault of ``kind``; a target that is not there yet (a worker, a
    file) is waited for up to ``patience_s``. ``store``: the round's flaky object store
    (:class:`chaos_store.FlakyStore`), for the kind ``flaky-store``."""
    fault = Fault(kind)
    if kind == "full-disk":  # the driver's own writes fill its disk: the fault comes when it says so
        fault.what = _full_disk(driver, patience_s)
        fault.at = time.monotonic() - driver.started_at if fault.what else None
        return fault if fault.what else Fault(kind)
    origin = driver.started_at
    if kind in RAY_KINDS:
        ready = _until(driver, time.monotonic() + patience_s, lambda: "Ray ready" in driver.output())
        if not ready:
            return fault
        origin = time.monotonic()
    time.sleep(max(0.0, origin + delay - time.monotonic()))
    deadline = time.monotonic() + patience_s
    before = SUMMARY.search(driver.output()) is not None
    if kind.startswith("driver-"):
        fault.what = _signal_driver(driver, kind)
    elif kind in RAY_KINDS:
        fault.what = _kill_ray(driver, kind, deadline, rng)
    elif kind in ("flip", "truncate"):
        fault.what = _damage_file(out, kind, driver, deadline, rng)
    elif kind == "swap":
        fault.what = _swap(out, driver, deadline, rng)
    elif kind == "flaky-store":  # from now to the driver's end (chaos.faulted_run calms it)
        fault.what = store.disturb(rng) if driver.process.poll() is None else None
    else:
        seconds = rng.uniform(5.0, 15.0)
        fault.at = time.monotonic() - driver.started_at
        with read_only(out):
            time.sleep(seconds)
        fault.what = f"the folder read-only for {seconds:.1f} s"
    if fault.what is None:
        return Fault(kind)
    if fault.at is None:
        fault.at = time.monotonic() - driver.started_at
    after = SUMMARY.search(driver.output()) is not None
    fault.after_summary = True if before else (None if after else False)
    return fault
