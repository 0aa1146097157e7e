"""Writing the results store: cells (atomically), checkpoints, failure records, the grid's manifest,
and the clean-up of stale temporaries; what a full disk is (:func:`disk_full`,
:class:`DiskFullError`). Where files live and how they are read is :mod:`harness.results`.

Test hook: ``VARBO_TEST_FULL_DISK_AFTER=K`` (:data:`FULL_DISK_HOOK`) makes this process's local
writes behave as on a full disk once it has written K cell files: each later write creates its
temporary, then fails with ``ENOSPC``. For the tests and ``benchmarks/chaos.py``, which cannot fill a
real disk without mounting one; read once at import, unset it costs nothing.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import platform
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from harness.kernels import host_record
from harness.procs import process_start
from harness.results import (
    CHECKPOINT_DIR,
    FAILED_DIR,
    MANIFEST,
    PROGRESS,
    Location,
    cell_path,
    failure_path,
    is_local,
    location,
    spec_hash,
    table_checksum,
)
from harness.schema import SCHEMAS
from harness.spec import CellResult, CellSpec

#: The folder of the distributions Ray vendors (see :func:`installed_distributions`).
_VENDORED = "thirdparty_files"
#: The errors of a store that has no room left: no space on the device, or the user's quota used up.
DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
#: The test hook's variable (see the module's docstring).
FULL_DISK_HOOK = "VARBO_TEST_FULL_DISK_AFTER"
# the hook's state: cell files this process may still write before its disk is "full" (None: unset)
_hook_room = [int(os.environ[FULL_DISK_HOOK])] if os.environ.get(FULL_DISK_HOOK, "").strip() else [None]


def disk_full(error: BaseException | None) -> bool:
    """Whether ``error``, or an error it was raised from, says the store has no room left
    (:data:`DISK_FULL_ERRNOS`).

    Then no retry helps, and nothing else written there will be taken.

    Args:
        error: the error, or None.

    Returns:
        True where an ``OSError`` of the chain (its first ten links) has an errno of :data:`DISK_FULL_ERRNOS`.
    """
    seen = 0
    while error is not None and seen < 10:  # a chain is short; a cycle must not loop
        if isinstance(error, OSError) and error.errno in DISK_FULL_ERRNOS:
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


class DiskFullError(Exception):
    """A write of the grid's refused by a full disk or quota (:func:`disk_full`): the grid stops.

    Args:
        what: what was being written (``the file of PROBLEM/ALGORITHM/seedN``).
        error: the store's error.
        cell: the label of the finished cell whose file it was, or None.
        kept: where that cell was kept instead (:mod:`harness.spill`), or None.
    """

    def __init__(self, what: str, error: BaseException, cell: str | None = None,
                 kept: Path | None = None) -> None:
        self.what, self.error, self.cell, self.kept = what, error, cell, kept
        strerror = getattr(error, "strerror", None) or str(error)
        code = errno.errorcode.get(getattr(error, "errno", None) or 0, "")
        super().__init__(f"{strerror}{f' ({code})' if code else ''} while writing {what}")


def _emulate_full_disk(path: Path) -> None:
    """The test hook (:data:`FULL_DISK_HOOK`): room for its last cell files, then ``ENOSPC``."""
    if _hook_room[0] is not None and _hook_room[0] <= 0:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    if _hook_room[0] is not None and path.suffix == ".parquet":
        _hook_room[0] -= 1


def installed_distributions() -> list[str]:
    """Every distribution installed in this environment, as the lines of a pip constraints file.

    The project itself is left out (it is the code, recorded by its commit): ``pip install -c FILE -e .``
    rebuilds the environment. The distributions Ray vendors (``ray/thirdparty_files``, on ``sys.path`` in its
    workers and once Ray is started) are left out too: they come with Ray's pinned version, and counting them
    made a worker's list two longer than its driver's, so the digest a cell recorded was not its pins'.

    Returns:
        ``name==version`` lines, the names normalized, sorted by name.
    """
    pins: dict[str, str] = {}
    for dist in importlib_metadata.distributions():
        name = dist.metadata["Name"]
        if not name or _VENDORED in Path(str(dist.locate_file(""))).parts:
            continue
        key = name.lower().replace("_", "-").replace(".", "-")
        if key != "varbo-bench":
            pins[key] = f"{key}=={dist.version}"
    return [pins[key] for key in sorted(pins)]


def environment_digest(lines: list[str] | None = None) -> str:
    """A short SHA-256 of :func:`installed_distributions` (or of ``lines``).

    Two cells with one digest ran under the same versions of everything installed.

    Args:
        lines: the lines to digest (default: :func:`installed_distributions`).

    Returns:
        The first 16 hex digits of the SHA-256 of the lines joined by newlines.
    """
    text = "\n".join(installed_distributions() if lines is None else lines)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def provenance() -> dict:
    """What a cell records of the code and environment that ran it.

    The grid adds, per cell, the host that ran it, its CPU and kernels (:func:`harness.kernels.host_record`)
    and whether it resumed from a checkpoint.

    Returns:
        A dict with ``python``, ``platform``, ``packages`` (the main packages' versions, None where not
        installed), ``environment`` (:func:`environment_digest`) and ``git_commit`` (None outside a git
        checkout).
    """
    versions = {}
    for package in ("torch", "botorch", "gpytorch", "numpy", "scipy", "pyarrow", "pandas", "ray"):
        try:
            versions[package] = importlib_metadata.version(package)
        except importlib_metadata.PackageNotFoundError:
            versions[package] = None
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
            text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"python": platform.python_version(), "platform": platform.platform(), "packages": versions,
            "environment": environment_digest(), "git_commit": commit}


def to_table(result: CellResult, extra_metadata: dict | None = None) -> pa.Table:
    """The cell's rows as a table of its kind's schema, its metadata in the schema's key ``varbo``.

    The schema is :data:`harness.schema.SCHEMAS`'s.

    Args:
        result: the cell's rows and metadata.
        extra_metadata: metadata added to the cell's own (its provenance).

    Returns:
        A table with one row per row of ``result``; its ``varbo`` metadata is the cell's and
        ``extra_metadata``, with the row count ``rows`` and the ``checksum`` of the data
        (:func:`harness.results.table_checksum`).
    """
    schema = SCHEMAS[result.metadata.get("kind", "bo")]
    columns = {name: [row.get(name) for row in result.rows] for name in schema.names}
    table = pa.table(columns, schema=schema)
    # the row count and a checksum of the data: a file whose footer survived but whose data pages
    # did not is then caught when it is checked (check_cell_file), not counted as done
    meta = {**result.metadata, **(extra_metadata or {}), "rows": table.num_rows,
            "checksum": table_checksum(table)}
    return table.replace_schema_metadata({"varbo": json.dumps(meta)})


def _write_whole(path: Location, write: Callable[[BinaryIO], object]) -> None:
    """``write(stream)`` so that ``path`` appears whole or not at all, and stays: locally through a
    '.'-prefixed temporary file, synced, renamed, and the folder synced; on an object store as one
    upload straight to its name (visible whole or not at all: there is no rename)."""
    if not is_local(path):
        with path.open("wb") as stream:
            write(stream)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as stream:
            if _hook_room[0] is not None:
                _emulate_full_disk(path)
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())  # the data on disk before the name points at it
        os.replace(tmp, path)
        sync_folder(path.parent)  # and the rename itself, so a crash cannot undo a finished write
    finally:
        tmp.unlink(missing_ok=True)


def sync_folder(folder: Path) -> None:
    """Flush a folder's entries (a rename into it) to disk: without it, a power loss or a kernel
    crash soon after a write can leave the old entry (or none), losing a cell that was reported
    written. A file system that cannot sync a folder (some network ones) is left as it is."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(handle)
    finally:
        os.close(handle)


def write_bytes(data: bytes, path: Location) -> None:
    """Write ``data`` to ``path``, whole or not at all (:func:`_write_whole`): a file copied as it is."""
    _write_whole(path, lambda stream: stream.write(data))


def write_atomic(table: pa.Table, path: Location) -> None:
    """Write ``table`` to ``path`` as Parquet, whole or not at all (:func:`_write_whole`), with zstd
    at its default level. Packs are written by :func:`write_compact`."""
    # zstd: about half the size of the default snappy, read as fast
    _write_whole(path, lambda stream: pq.write_table(table, stream, compression="zstd"))


def write_compact(table: pa.Table, path: Location, level: int) -> None:
    """Write ``table`` (with its schema's metadata) to ``path`` as the smallest Parquet file that
    reads back equal, metadata included, whole or not at all: for a pack, written once and
    committed. Against :func:`write_atomic` it leaves out two things that only cost bytes here:
    the Arrow schema that pyarrow copies into the footer (it repeats the metadata, whose cells'
    entries are a third of a pack; every column's type reads back the same from Parquet's own
    schema), and dictionary pages (a run's floats rarely repeat). The published packs are a third
    smaller so (11.5 -> 7.8 MiB)."""
    def write(stream: BinaryIO) -> None:
        with pq.ParquetWriter(stream, table.schema, compression="zstd", compression_level=level,
                              store_schema=False, use_dictionary=False) as writer:
            writer.write_table(table)
            writer.add_key_value_metadata(table.schema.metadata or {})

    _write_whole(path, write)


def write_cell(out: Location | str, spec: CellSpec, result: CellResult,
               provenance_info: dict | None = None) -> Location:
    """Write one finished cell under ``out``, atomically.

    Args:
        out: the results folder.
        spec: the cell.
        result: its rows and metadata.
        provenance_info: the cell's provenance; default :func:`provenance` with this host, its CPU and kernels
            (:func:`harness.kernels.host_record`) and ``resumed_at`` None, a whole run in this process (a grid
            computes the shared part once and adds each cell's host, CPU, kernels and resume point).

    Returns:
        The cell file's path (:func:`harness.results.cell_path`).
    """
    path = cell_path(out, spec)
    info = (provenance() | {"host": socket.gethostname(), "resumed_at": None} | host_record()
            if provenance_info is None else provenance_info)
    write_atomic(to_table(result, {"provenance": info}), path)
    return path


def checkpoint_path(out: Location | str, spec: CellSpec) -> Location:
    """Where the last checkpoint of an unfinished cell lives (removed once the cell is written).

    Args:
        out: the results folder.
        spec: the cell.

    Returns:
        ``out/_checkpoints/PROBLEM/ALGORITHM/seedN-HASH.ckpt``.
    """
    name = f"seed{spec.seed}-{spec_hash(spec)}.ckpt"
    return location(out) / CHECKPOINT_DIR / spec.problem / spec.algorithm / name


def write_checkpoint(out: Location | str, spec: CellSpec, data: bytes) -> None:
    """Store a cell's checkpoint bytes (atomically, as every file here)."""
    write_bytes(data, checkpoint_path(out, spec))


def read_checkpoint(out: Location | str, spec: CellSpec) -> bytes | None:
    """A cell's last checkpoint.

    Args:
        out: the results folder.
        spec: the cell.

    Returns:
        The checkpoint's bytes, or None where there is none.
    """
    path = checkpoint_path(out, spec)
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


def set_aside_checkpoint(out: Location | str, spec: CellSpec) -> Location:
    """Rename a cell's checkpoint that cannot be used to ``<name>.damaged``, kept for a look.

    It is never read again; an object store has no rename, so there it is copied and removed.

    Args:
        out: the results folder.
        spec: the cell.

    Returns:
        The new path.
    """
    path = checkpoint_path(out, spec)
    target = path.with_name(path.name + ".damaged")
    if is_local(path):
        os.replace(path, target)
    else:  # an object store has no rename
        target.write_bytes(path.read_bytes())
        path.unlink()
    return target


def clear_checkpoint(out: Location | str, spec: CellSpec) -> None:
    """Remove a cell's checkpoint (it is written, or it is to be recomputed from scratch)."""
    path = checkpoint_path(out, spec)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    if is_local(path):  # no empty _checkpoints/<problem>/<algorithm>/ folders left behind
        for folder in (path.parent, path.parent.parent, path.parent.parent.parent):
            with contextlib.suppress(OSError):
                folder.rmdir()  # only succeeds when empty


def checkpoint_files(out: Location | str, cells: list[CellSpec]) -> dict[CellSpec, Location]:
    """The checkpoints ``out`` holds for ``cells``, from one listing of ``out/_checkpoints`` (a request,
    not one per cell, on an object store).

    Args:
        out: the results folder.
        cells: the cells asked about.

    Returns:
        Each of ``cells`` that has a checkpoint -> its path.
    """
    folder = location(out) / CHECKPOINT_DIR
    if not cells or not folder.is_dir():
        return {}
    wanted = {str(checkpoint_path(out, spec)): spec for spec in cells}
    return {wanted[str(path)]: path for path in folder.rglob("*.ckpt") if str(path) in wanted}


def clear_finished_checkpoints(out: Location | str, finished: list[CellSpec]) -> int:
    """Remove the checkpoints of cells already written: stale bookkeeping of a run that wrote a cell
    but could not then remove its checkpoint (the folder read-only for a moment; the removal is not
    retried there, as a cell's file is what counts).

    One listing of ``out/_checkpoints`` (a request, not one per cell, on an object store).

    Args:
        out: the results folder.
        finished: the cells whose files are in place.

    Returns:
        The number of checkpoints removed.
    """
    found = checkpoint_files(out, finished)
    for spec in found:
        clear_checkpoint(out, spec)
    return len(found)


def _write_text_atomic(text: str, path: Location) -> None:
    _write_whole(path, lambda stream: stream.write(text.encode()))


def write_failure(out: Location | str, spec: CellSpec, message: str, traceback_text: str,
                  extra: dict) -> Location:
    """Record that a cell raised: its spec, the one-line message and the full traceback.

    Args:
        out: the results folder.
        spec: the cell.
        message: the error's one-line message.
        traceback_text: the full traceback.
        extra: more fields of the record.

    Returns:
        The record's path (:func:`harness.results.failure_path`).
    """
    path = failure_path(out, spec)
    record = {"spec": json.loads(spec.to_json()), "spec_hash": spec_hash(spec), "message": message,
              "traceback": traceback_text, **extra}
    _write_text_atomic(json.dumps(record, indent=1), path)
    return path


def clear_failure(out: Location | str, spec: CellSpec) -> None:
    """Remove a cell's failure record (it has now succeeded) and the folders it leaves empty."""
    path = failure_path(out, spec)
    if not path.exists():
        return
    path.unlink()
    if not is_local(path):
        return  # an object store has no folders to tidy
    for folder in (path.parent, path.parent.parent, out / FAILED_DIR):
        with contextlib.suppress(OSError):
            folder.rmdir()  # only succeeds when empty


def write_manifest(out: Location | str, grid_name: str, specs: list[CellSpec], study: str = "") -> None:
    """Record the grid's full list of cells, so that ``harness.status`` can count the missing ones,
    and the study it belongs to (when it does), whose claims the report tests."""
    data = {"grid": grid_name, **({"study": study} if study else {}), "cells": [asdict(s) for s in specs]}
    _write_text_atomic(json.dumps(data, separators=(",", ":")), location(out) / MANIFEST)


def remove_stale_temporaries(out: Location | str) -> int:
    """Delete the temporaries of :func:`_write_whole` (``.NAME.PID.tmp``) left by a killed
    writer (its pid no longer runs). Any other ``.*.tmp`` file is not the harness's and stays.

    Object stores get no temporaries: nothing is done there.

    Args:
        out: the results folder.

    Returns:
        The number of files deleted.
    """
    removed = 0
    out = location(out)
    if not is_local(out) or not out.is_dir():
        return 0  # object stores get no temporaries
    for tmp in out.rglob(".*.tmp"):
        parts = tmp.name.rsplit(".", 2)
        if len(parts) != 3 or not parts[1].isdigit() or not parts[0][1:]:
            continue  # not a temporary of ours (no NAME, or no writer's pid)
        try:
            os.kill(int(parts[1]), 0)
            continue  # its writer is alive
        except ProcessLookupError:
            pass
        except PermissionError:
            continue  # alive, another user's
        tmp.unlink(missing_ok=True)
        removed += 1
    return removed


def write_progress(out: Location | str, running: list[dict]) -> None:
    """Record the running cells' progress (:func:`harness.results.read_progress`), atomically, with
    the driver's host, pid and process start (so that ``harness.status`` can tell a live driver from
    a dead one)."""
    data = {"updated": time.time(), "host": socket.gethostname(), "pid": os.getpid(),
            "started": process_start(os.getpid()), "running": running}
    _write_text_atomic(json.dumps(data, indent=1), location(out) / PROGRESS)


def clear_progress(out: Location | str) -> None:
    """Remove the progress file (the grid's driver is done)."""
    with contextlib.suppress(FileNotFoundError):
        (location(out) / PROGRESS).unlink()
