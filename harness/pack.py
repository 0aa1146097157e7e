"""``python -m harness.pack FOLDER``: pack a finished results folder (one Parquet file per problem,
algorithm and kind of cell, :mod:`harness.packed`), or ``--unpack`` it (one file per cell again, to
resume a grid into it).

    python -m harness.pack FOLDER              # pack
    python -m harness.pack FOLDER --unpack     # unpack
    python -m harness.pack FOLDER --digests    # record the packs' digests of a folder packed before

Packing reads every cell file (a damaged one is an error: nothing is packed), writes each pack
whole or not at all, reads every cell back from its pack and checks its rows against the checksum
it was written with, and only then removes the cell files; last it records each pack's SHA-256 in
``FOLDER/_digests.json``, which every reader checks (:mod:`harness.packed`). ``--digests`` records
them for a folder packed before digests were, after reading every cell back against its checksum
(the packs are not rewritten: their rows and bytes stay). Unpacking writes every cell's own file
again (its columns and metadata as they were, so its checksum holds), checks it, then removes the
packs. Failure records, the grid's manifest and anything else in the folder stay as they are.

A folder a grid is writing into (``_progress.json``) or that holds checkpoints is not packed: finish
or resume the grid first. Exit codes: 0 done, 2 bad input or a folder that cannot be (un)packed (one
line on stderr).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from harness import packed
from harness.cli import EXIT_USAGE, Parser, UsageError, exit_with
from harness.results import (
    CHECKPOINT_DIR,
    PROGRESS,
    cell_files,
    check_cell_file,
    file_hash,
    packs,
    read_cell,
    table_checksum,
)
from harness.schema import SCHEMAS
from harness.store import write_atomic, write_compact

PROG = "python -m harness.pack"
#: zstd's level for packs: written once, read often; a third smaller than the default level.
PACK_LEVEL = 19


def _folder(text: str) -> Path:
    folder = Path(text)
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder")
    return folder


def _cells(folder: Path) -> list[tuple[Path, dict]]:
    """Every cell of ``folder`` with its metadata; :class:`UsageError` if any file is damaged."""
    good, bad = cell_files(folder)
    if bad:
        path, reason = bad[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise UsageError(f"{path}: {reason}{more}; nothing was changed")
    return good


def pack(folder: Path) -> list[Path]:
    """Pack ``folder``'s cell files (see the module docstring).

    Every cell is read back from its pack before any cell file is removed; the folder's digests are recorded
    last.

    Args:
        folder: a finished, unpacked local results folder.

    Returns:
        The packs written, one per (problem, algorithm, kind of cell).

    Raises:
        UsageError: a folder with a running or unfinished grid, packed already, without cell files, or a cell
            that does not read back from its pack (the cell files are kept).
    """
    if (folder / PROGRESS).exists() or (folder / CHECKPOINT_DIR).exists():
        raise UsageError(f"{folder} has a running or unfinished grid ({PROGRESS} or {CHECKPOINT_DIR}/): "
                         "finish it first")
    if packs(folder):
        raise UsageError(f"{folder} is packed already; unpack it first ({PROG} {folder} --unpack)")
    cells = _cells(folder)
    if not cells:
        raise UsageError(f"{folder} holds no cell files")
    groups: dict[tuple[str, str, str], list[tuple[Path, dict]]] = defaultdict(list)
    for path, meta in cells:
        spec = meta["spec"]
        groups[spec["problem"], spec["algorithm"], spec.get("kind", "bo")].append((path, meta))
    written = []
    for (problem, algorithm, kind), members in sorted(groups.items()):
        target = folder / problem / packed.pack_name(algorithm, kind)
        write_compact(_pack_table(members, kind), target, level=PACK_LEVEL)
        written.append(target)
    for target in written:  # every cell back from its pack, checked, before any file goes
        for cell in packed.cells_of(target):
            reason = check_cell_file(cell)
            if reason is not None:
                raise UsageError(f"{cell} does not read back from {target}: {reason}; the cell files "
                                 "are kept (remove the packs)")
    for path, _ in cells:
        path.unlink()
        for empty in (path.parent, path.parent.parent):
            if empty != folder and not any(empty.iterdir()):
                empty.rmdir()
    packed.write_digests(folder, written)
    return written


def _pack_table(members: list[tuple[Path, dict]], kind: str) -> pa.Table:
    """The rows of ``members`` one after another in ``kind``'s schema, their entries in the
    metadata (sorted by seed and hash, so a pack does not depend on the order files were found)."""
    schema = SCHEMAS[kind]
    tables, entries = [], []
    for path, meta in sorted(members, key=lambda m: (m[1]["spec"]["seed"], m[0].name)):
        _, table = read_cell(path)  # in the kind's schema: an older file's missing columns null
        columns = list(packed_columns(path))
        entries.append({"hash": file_hash(path), "seed": meta["spec"]["seed"],
                        "rows": table.num_rows, "columns": columns, "meta": meta})
        tables.append(table.cast(schema))
    data = {"format": packed.PACK_FORMAT, "cells": entries}
    return pa.concat_tables(tables).replace_schema_metadata({packed.PACK_KEY: json.dumps(data)})


def packed_columns(path: Path) -> list[str]:
    """The columns a cell file holds (an older schema's fewer).

    Args:
        path: the cell file.

    Returns:
        The column names, in the file's order.
    """
    return pq.read_schema(path).names


def unpack(folder: Path) -> int:
    """Unpack ``folder``'s packs (see the module docstring).

    The packs and their digests are removed once every cell is written and reads back.

    Args:
        folder: a packed local results folder.

    Returns:
        The number of cells written.

    Raises:
        UsageError: a folder without packs, a cell whose rows do not match their checksum, or one that does
            not read back (the packs are kept).
    """
    found = packs(folder)
    if not found:
        raise UsageError(f"{folder} holds no packs ({packed.PACK_SUFFIX})")
    cells = [p for p, _ in _cells(folder) if isinstance(p, packed.PackedCell)]
    for cell in cells:
        schema = packed.cell_schema(cell)
        table = packed.cell_table(cell, pa.schema(list(schema), metadata=None))
        meta = json.loads(schema.metadata[b"varbo"])
        if table_checksum(table) != meta.get("checksum", table_checksum(table)):
            raise UsageError(f"{cell}: its rows do not match their checksum; nothing was removed")
        target = Path(str(cell))
        write_atomic(table.replace_schema_metadata(schema.metadata), target)
        reason = check_cell_file(target)
        if reason is not None:
            raise UsageError(f"{target} does not read back: {reason}; the packs are kept")
    for path in found:
        path.unlink()
    (folder / packed.DIGESTS).unlink(missing_ok=True)
    return len(cells)


def record_digests(folder: Path) -> list[Path]:
    """Record the digests of a packed ``folder``'s packs (see the module docstring), after every cell reads
    back against its checksum.

    Args:
        folder: a packed local results folder.

    Returns:
        The packs.

    Raises:
        UsageError: a folder without packs, or a damaged cell.
    """
    found = packs(folder)
    if not found:
        raise UsageError(f"{folder} holds no packs ({packed.PACK_SUFFIX})")
    (folder / packed.DIGESTS).unlink(missing_ok=True)  # the packs' bytes are what is checked here
    _cells(folder)  # every cell of every pack against its checksum; a damaged one is an error
    packed.write_digests(folder, found)
    return found


def build_parser() -> Parser:
    """The command line of ``python -m harness.pack``.

    Returns:
        The parser of ``FOLDER``, and ``--unpack`` or ``--digests``.
    """
    parser = Parser(prog=PROG, description="Pack a finished results folder into one Parquet file per "
                    "problem, algorithm and kind of cell, or unpack it.",
                    epilog="Exit codes: 0 done; 2 bad input or a folder that cannot be (un)packed.")
    parser.add_argument("folder", metavar="FOLDER", help="a local results folder")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--unpack", action="store_true", help="unpack instead (one file per cell)")
    mode.add_argument("--digests", action="store_true",
                      help="record the SHA-256 of a packed folder's packs (a folder packed before "
                           "they were recorded), after checking every cell against its checksum")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m harness.pack``: pack a folder, or unpack it, or record its digests.

    Args:
        argv: the command's arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit code, 0 done, :data:`harness.cli.EXIT_USAGE` for bad input or a folder that cannot be
        (un)packed.
    """
    try:
        args = build_parser().parse_args(argv)
        folder = _folder(args.folder)
        if args.unpack:
            n = unpack(folder)
            print(f"{folder}: unpacked {n} cells")
        elif args.digests:
            found = record_digests(folder)
            print(f"{folder}: recorded the digests of {len(found)} packs in {packed.DIGESTS}")
        else:
            written = pack(folder)
            n = sum(len(packed.cells_of(p)) for p in written)
            size = sum(p.stat().st_size for p in written) / 2**20
            print(f"{folder}: packed {n} cells into {len(written)} files ({size:.2f} MiB)")
    except UsageError as error:
        print(f"harness.pack: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    return 0


if __name__ == "__main__":
    exit_with(main)
