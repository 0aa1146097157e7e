"""The chaos run's damaged pack (:mod:`chaos`, ``benchmarks/chaos.py``; the kind :data:`KIND`).

A grid never runs into a packed folder (it is read-only to the harness), so a round of this kind
runs no driver and resumes nothing: its lost, duplicated and unreadable counts stay 0, as do its
resumed and retried ones. Instead it:

1. copies the cells of the reference (the undisturbed, finished run) on one problem, and the
   grid's manifest, into a fresh ``WORK/round-NN``, and packs it (``python -m harness.pack``): the
   smallest folder the report reads as a study (every algorithm, every seed), since the report
   is the slowest of the readers;
2. damages one pack at random: a flipped bit at a random byte anywhere in the file, or the file
   cut short at a random length, each with probability 1/2;
3. runs the four readers as a user would, each a process of its own, side by side:
   ``read_results`` (through ``python -c``: :data:`READ_ROWS`), ``python -m harness.status``,
   ``python -m analysis.report --out`` (to a folder beside the round's) and ``python -m
   harness.verify --sample 1``. Each must refuse the folder and name the pack: read_results raising
   ``DamagedFileError``, status exit 1 with a ``DAMAGED`` line, report and verify exit 2 with one
   line on stderr. A reader that exits otherwise, or does not name the pack, is ``untruthful`` (one
   count per reader); a traceback in any reader's output counts in ``tracebacks``;
4. copies the pack's bytes back and runs the four readers again: each must accept the folder
   (exit 0; else ``untruthful``), and the rows ``read_results`` gives must be exactly the
   reference's (columns x, z, y, x_rec and regret bit for bit, no row more): else ``differing``.
   Files the readers leave in the folder are ``leftovers``; a reader still running after
   ``hang_s`` is a hang (and its process group, started by the round, is killed). The readers
   start no process of their own, so there are no strays to look for.

Its record has the fields of a driver's round (:func:`chaos.round_counts`, :func:`chaos.round_line`):
``exit`` and ``expected`` are the readers' exit codes in :data:`READERS`' order, joined by ``/``
(read_results' ``python -c`` exits :data:`REFUSED_EXIT` on ``DamagedFileError``), ``resume_exit``
those after the restore, and ``recovery_s`` the restore and the second reading.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
from chaos_driver import ROOT  # first: it puts this checkout's harness on sys.path

from harness.packed import PACK_SUFFIX
from harness.results import MANIFEST, cell_path, read_cell
from harness.spec import CellSpec
from harness.verify import compare_rows

KIND = "damaged-pack"
#: The readers, in the order of a record's exit codes.
READERS = ("read_results", "status", "report", "verify")
#: The exit of :data:`READ_ROWS` when ``read_results`` raises ``DamagedFileError``.
REFUSED_EXIT = 3
#: ``read_results`` as a user's script calls it: the error's message on one line (as the harness's
#: commands print theirs), or the rows to a Parquet file for the round to compare.
READ_ROWS = (
    "import sys\n"
    "from harness.frames import read_results\nfrom harness.results import DamagedFileError\n"
    "try:\n"
    "    frame = read_results(sys.argv[1])\n"
    "except DamagedFileError as error:\n"
    "    print(f'DamagedFileError: {error}', file=sys.stderr)\n"
    f"    sys.exit({REFUSED_EXIT})\n"
    "frame.to_parquet(sys.argv[2], index=False)\n"
)
#: Each reader's exit code when it refuses the damaged folder.
REFUSES = {"read_results": REFUSED_EXIT, "status": 1, "report": 2, "verify": 2}


@dataclass
class Reading:
    """One reader's run: its exit code (None: it hung and was killed), stdout and stderr."""

    reader: str
    code: int | None
    out: str
    err: str


def read(reader: str, folder: Path, rows: Path, hang_s: float) -> Reading:
    """Run ``reader`` on ``folder`` as a user would (``rows``: where read_results' rows go).

    Args:
        reader: one of :data:`READERS`.
        folder: the packed folder.
        rows: the Parquet file read_results writes its rows to (when it reads them).
        hang_s: seconds after which the reader hangs (its process group is then killed).

    Returns:
        The reading.
    """
    report = folder.parent / f"{folder.name}.report"
    command = {"read_results": ["-c", READ_ROWS, str(folder), str(rows)],
               "status": ["-m", "harness.status", str(folder)],
               "report": ["-m", "analysis.report", str(folder), "--out", str(report)],
               "verify": ["-m", "harness.verify", str(folder), "--sample", "1"]}[reader]
    process = subprocess.Popen([sys.executable, *command], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                               start_new_session=True)  # its own group: a hung reader is ended whole
    try:
        out, err = process.communicate(timeout=hang_s)
        return Reading(reader, process.returncode, out, err)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the group of the process this function started
        out, err = process.communicate()
        return Reading(reader, None, out, err)


def refusal(reading: Reading, name: str) -> str | None:
    """What is wrong with a reader's refusal of the folder whose pack ``name`` is damaged, or None.

    Args:
        reading: the reader's run on the damaged folder.
        name: the pack's path, as the readers name it.

    Returns:
        None when it exits with its code of :data:`REFUSES` and names the pack where it should (a
        ``DAMAGED`` line for status, its one line on stderr for the others), else why not.
    """
    if reading.code is None:
        return None  # counted as a hang
    if reading.code != REFUSES[reading.reader]:
        return f"{reading.reader}: exit {reading.code}, expected {REFUSES[reading.reader]}"
    if reading.reader == "status":
        lines = [line for line in reading.out.splitlines() if line.startswith("DAMAGED")]
    else:
        lines = [line for line in reading.err.splitlines() if line.strip()]
        if len(lines) != 1:
            return f"{reading.reader}: {len(lines)} lines on stderr, expected one"
    if not lines or not all(name in line for line in lines):
        return f"{reading.reader}: does not name {name}: {(lines or ['(nothing)'])[0][:200]}"
    return None


def rows_differ(rows: Path, reference: Path, cells: list[CellSpec]) -> list[str]:
    """The cells whose rows in ``rows`` (read_results' of the restored folder) are not exactly the
    reference's (:func:`harness.verify.compare_rows`), and rows of no such cell.

    Args:
        rows: the Parquet file :data:`READ_ROWS` wrote.
        reference: the reference folder.
        cells: the cells of the packed folder.

    Returns:
        One line per difference (empty when the rows are the reference's).
    """
    stored: dict[tuple, list[dict]] = {}
    for row in pq.read_table(rows).to_pylist():
        stored.setdefault((row["problem"], row["algorithm"], row["seed"]), []).append(row)
    found = []
    for spec in cells:
        label = f"{spec.problem}/{spec.algorithm}/seed{spec.seed}"
        mine = sorted(stored.pop((spec.problem, spec.algorithm, spec.seed), []), key=lambda r: r["iteration"])
        difference, largest = compare_rows(read_cell(cell_path(reference, spec))[1].to_pylist(), mine)
        if not mine:
            found.append(f"{label}: no rows read back from the packs")
        elif difference is not None:
            found.append(f"{label}: read back from the packs, at iteration {difference.iteration}, column "
                         f"{difference.column} (max abs difference {largest:.3g})")
    found += [f"{problem}/{algorithm}/seed{seed}: {len(extra)} rows of no cell of the folder"
              for (problem, algorithm, seed), extra in sorted(stored.items())]
    return found


def packed_copy(reference: Path, folder: Path, cells: list[CellSpec]) -> tuple[list[CellSpec], str | None]:
    """Step 1: ``folder`` a packed copy of the reference's cells on its first problem.

    Args:
        reference: the reference folder.
        folder: the round's folder (made afresh).
        cells: the grid's cells.

    Returns:
        The cells copied, and None, or harness.pack's complaint if it refused the copy.
    """
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copy2(reference / MANIFEST, folder / MANIFEST)
    chosen = [spec for spec in cells if spec.problem == cells[0].problem]
    for spec in chosen:
        target = cell_path(folder, spec)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(cell_path(reference, spec), target)
    done = subprocess.run([sys.executable, "-m", "harness.pack", str(folder)], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    return chosen, None if done.returncode == 0 else f"harness.pack: exit {done.returncode}: {done.stderr}"


def damage(pack: Path, rng: random.Random) -> str:
    """Step 2: a flipped bit at a random byte of ``pack`` or the file cut short at a random length
    (each with probability 1/2); what was done."""
    data = pack.read_bytes()
    if rng.random() < 0.5:
        length = rng.randrange(len(data))
        pack.write_bytes(data[:length])
        return f"truncated from {len(data)} to {length} bytes"
    offset, bit = rng.randrange(len(data)), rng.randrange(8)
    pack.write_bytes(data[:offset] + bytes([data[offset] ^ (1 << bit)]) + data[offset + 1:])
    return f"bit {bit} of byte {offset} of {len(data)} flipped"


def files(folder: Path) -> set[str]:
    """Every file under ``folder``, by its path from it."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def readings(folder: Path, hang_s: float) -> list[Reading]:
    """The four readers at once, in :data:`READERS`' order: each spends most of its time importing
    (torch, pandas), so side by side a round takes about as long as its verify's rerun alone
    (a minute, not two, on a loaded 2-core host)."""
    rows = folder.parent / f"{folder.name}.rows.parquet"
    with ThreadPoolExecutor(len(READERS)) as pool:
        return list(pool.map(lambda reader: read(reader, folder, rows, hang_s), READERS))


def pack_round(reference: Path, cells: list[CellSpec], folder: Path, rng: random.Random,
               hang_s: float) -> dict:
    """A round of the kind (see the module's docstring).

    Args:
        reference: the reference folder.
        cells: the grid's cells.
        folder: the round's folder.
        rng: the round's random numbers.
        hang_s: seconds after which a reader hangs.

    Returns:
        The round's record, with the fields of a driver's (:func:`chaos.play_round`).
    """
    started = time.monotonic()
    chosen, refused = packed_copy(reference, folder, cells)
    record = {"kind": KIND, "copied": len(chosen), "missed": False, "done_at_exit": True, "strays": [],
              "resume_strays": [], "retried": 0, "resumed": 0, "lost": [], "duplicated": [], "differing": [],
              "unreadable": [], "leftovers": [], "untruthful": [], "expected": "/".join(
                  str(REFUSES[r]) for r in READERS) + f" ({'/'.join(READERS)})"}
    if refused:  # the reference's cells do not pack: the harness's fault, not the round's
        return record | {"fault": "missed", "fault_at_s": None, "missed": True, "exit": None,
                         "truthful": True, "hang": False, "tracebacks": 0, "exited_after_s": None,
                         "resume_exit": None, "resume_hang": False, "resume_truthful": True,
                         "resume_tracebacks": 0, "recovery_s": None, "unreadable": [refused]}
    before = files(folder)
    pack = rng.choice(sorted(folder.rglob(f"*{PACK_SUFFIX}")))
    original = pack.read_bytes()
    what = damage(pack, rng)
    at = time.monotonic() - started
    damaged = readings(folder, hang_s)
    refusing = [w for w in (refusal(r, str(pack)) for r in damaged) if w]
    pack.write_bytes(original)  # restored, as from its publication
    restored_at = time.monotonic()
    again = readings(folder, hang_s)
    accepting = [f"{r.reader} after the restore: exit {r.code}, expected 0: "
                 f"{(r.err.strip() or r.out.strip())[-200:]}" for r in again if r.code not in (0, None)]
    rows = folder.parent / f"{folder.name}.rows.parquet"
    differing = rows_differ(rows, reference, chosen) if again[0].code == 0 else []
    return record | {
        "fault": f"{pack.relative_to(folder)} {what}", "fault_at_s": at,
        "exit": "/".join(str(r.code) for r in damaged), "truthful": not refusing,
        "hang": any(r.code is None for r in damaged), "tracebacks": _tracebacks(damaged),
        "exited_after_s": restored_at - started, "resume_exit": "/".join(str(r.code) for r in again),
        "resume_hang": any(r.code is None for r in again), "resume_truthful": not accepting,
        "resume_tracebacks": _tracebacks(again), "recovery_s": time.monotonic() - restored_at,
        "untruthful": refusing + accepting, "differing": differing,
        "leftovers": sorted(files(folder) - before)}


def _tracebacks(readings: list[Reading]) -> int:
    return sum((r.out + r.err).count("Traceback") for r in readings)
