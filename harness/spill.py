"""Finished cells that the results store refused, kept on this machine until it takes them.

A cell that finished costs its compute time again if its file cannot be written: a full disk, a
refused upload, a folder turned read-only. The grid retries such a write (:data:`WRITE_ATTEMPTS`
times, a second and then two apart: a store that was briefly unavailable takes it; once on an object
store whose client retries by itself, :func:`write_attempts`), and if the store still refuses it,
writes the cell's file here instead: under this machine's cache folder
(``platformdirs``; ``VARBO_SPILL_DIR`` sets another), in a folder of its own for each results
folder. The cell is then reported failed, and its failure record (where one can be written) and the
grid's line say where it is kept. The next run of a grid into that results folder writes every kept
cell into it first (:func:`recover`), checked whole, as finished: nothing is recomputed.

If the cache folder refuses it too, the cell's rows are lost, and the line says so: this is a second
fault, not one.

A full disk or quota (:func:`harness.store.disk_full`) is not retried: it does not clear itself in
three seconds, and every later cell would wait for it again. The cell is kept here only if this
folder is on another file system than the results folder (:func:`same_disk`): on the same one it
would be refused too, or take the last free blocks. The grid then stops (:mod:`harness.ray_runner`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import platformdirs

from harness.remote import retries_itself
from harness.results import (
    Location,
    cell_files,
    cell_path,
    check_cell_file,
    is_local,
    location,
    spec_from_dict,
)
from harness.spec import CellSpec
from harness.store import clear_failure, disk_full, write_bytes

#: Attempts at writing a finished cell before it is kept here, and the pauses between them (s).
WRITE_ATTEMPTS = 3
PAUSES_S = (1.0, 2.0)
#: The variable that names another folder for kept cells (the tests', a shared disk's).
SPILL_VARIABLE = "VARBO_SPILL_DIR"


def spill_folder(out: Location | str) -> Path:
    """Where cells of the results folder ``out`` are kept when it refuses them.

    There is one folder per results folder, named by a digest of its location, under :data:`SPILL_VARIABLE` or
    the user's cache folder.

    Args:
        out: the results folder.

    Returns:
        The folder's path (which may not exist yet).
    """
    root = os.environ.get(SPILL_VARIABLE) or platformdirs.user_cache_path("varbo-bench") / "unsaved"
    digest = hashlib.sha256(str(location(out)).encode()).hexdigest()[:16]
    return Path(root) / digest


def write_attempts(out: Location | str) -> int:
    """How many times :func:`write_with_retries` writes a cell into ``out``.

    An object store whose client retries by itself (:func:`harness.remote.retries_itself`) has spent its own
    budget, with its backoff, on every request; a loop here would multiply it.

    Args:
        out: the results folder.

    Returns:
        :data:`WRITE_ATTEMPTS`, or 1 on such a store.
    """
    return 1 if retries_itself(out) else WRITE_ATTEMPTS


def write_with_retries(write: Callable[[], Location], sleep: Callable[[float], None] = time.sleep,
                       attempts: int = WRITE_ATTEMPTS) -> Location:
    """``write()`` up to ``attempts`` times (:func:`write_attempts`), pausing :data:`PAUSES_S` between.

    The last attempt's error is raised, and a full disk's at once (:func:`harness.store.disk_full`).

    Args:
        write: the write, returning the path written.
        sleep: the pause (tests pass their own).
        attempts: the attempts in all.

    Returns:
        What the first successful ``write()`` returns.
    """
    for attempt in range(attempts):
        try:
            return write()
        except Exception as error:
            if attempt == attempts - 1 or disk_full(error):
                raise
            sleep(PAUSES_S[min(attempt, len(PAUSES_S) - 1)])
    raise AssertionError("unreachable")  # the loop returns or raises


def keep(out: Location | str, spec: CellSpec, write: Callable[[Location], Location]) -> Path:
    """Write a refused cell's file with ``write(folder)`` into :func:`spill_folder` of ``out``.

    It raises what the cache folder raises.

    Args:
        out: the results folder that refused the cell.
        spec: the cell.
        write: writes the cell's file under the folder it is given, and returns its path.

    Returns:
        The kept file's path.
    """
    return Path(str(write(spill_folder(out))))


def same_disk(out: Location | str) -> bool:
    """Whether :func:`spill_folder` of ``out`` is on the file system of ``out``.

    Each is judged by its nearest existing folder.

    Args:
        out: the results folder.

    Returns:
        True where both are on one device; False for a results folder on an object store, which shares no disk
        with this machine.
    """
    out = location(out)
    if not is_local(out):
        return False

    def device(path: Path) -> int | None:
        for folder in (path, *path.parents):
            with contextlib.suppress(OSError):
                return folder.stat().st_dev
        return None

    return device(Path(str(out))) == device(spill_folder(out))


def recover(out: Location | str) -> list[CellSpec]:
    """Write every cell kept for ``out`` into it, and remove it from the keep.

    Each is read back and checked whole first. A kept file that does not read whole is left where it is (named
    by ``harness.status`` as any damaged file would be); a cell that ``out`` already holds whole is dropped
    from the keep.

    Args:
        out: the results folder.

    Returns:
        The specs of the cells written into ``out``.

    Raises:
        OSError: a cell written into ``out`` that does not read back whole, or a write that fails.
    """
    folder = spill_folder(out)
    if not folder.is_dir():
        return []
    good, _ = cell_files(folder)
    recovered = []
    for path, meta in good:
        spec = spec_from_dict(meta["spec"])
        target = cell_path(out, spec)
        if not (target.exists() and check_cell_file(target) is None):
            data = Path(str(path)).read_bytes()  # the file as it was computed, metadata and all
            write_bytes(data, target)
            if check_cell_file(target) is not None:
                raise OSError(f"{target}: the kept cell did not read back whole")
            clear_failure(out, spec)  # the failure this keep answered is over
            recovered.append(spec)
        Path(str(path)).unlink()
    return recovered
