"""Packed results folders: the cells of one (problem, algorithm, kind) in one Parquet file.

A results folder holds one file per cell (``PROBLEM/ALGORITHM/seedN-HASH.parquet``, see
:mod:`harness.results`): right for a grid that writes cells as they finish, wasteful for a
publication committed to a repository (every file repeats its schema and its footer, and small files
compress badly). A *packed* folder holds instead ``PROBLEM/ALGORITHM.pack.parquet`` (and
``PROBLEM/ALGORITHM.timing.pack.parquet`` for timing cells): the rows of those cells one after
another, in the kind's schema, and in the file's metadata (key ``varbo-pack``) each cell's spec
hash, row count, own columns and whole ``varbo`` metadata (spec, provenance, checksum).

:mod:`harness.results` reads a packed folder like any other: each packed cell appears as a
:class:`PackedCell`, a path to where its own file would be, whose rows come from the pack and are
checked against the checksum the cell was written with. A packed folder also records the SHA-256 of
each pack's bytes (``_digests.json`` at its root, :data:`DIGESTS`): a pack whose bytes are not those
packed (a flipped bit anywhere, in values, page headers or footer; a file cut short) does not read,
and every reader names it. ``python -m harness.pack`` packs a
finished folder and unpacks one (to resume a grid into it, or to read it with other tools); a
packed folder is read-only to the harness (``harness.run`` refuses to write into one).
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import PosixPath

import pyarrow as pa
import pyarrow.parquet as pq

#: The suffix of a pack file.
PACK_SUFFIX = ".pack.parquet"
#: The metadata key of a pack file.
PACK_KEY = b"varbo-pack"
#: The pack format's version (written, and required when read).
PACK_FORMAT = 1
#: The file at a packed folder's root with the SHA-256 of each pack's bytes (by path from the root).
DIGESTS = "_digests.json"


class PackedCell(PosixPath):
    """Where a packed cell's own file would be (``PROBLEM/ALGORITHM/seedN-HASH.parquet``: its name
    carries its seed and spec hash as an unpacked one does), with the pack it lives in (``pack``)
    and its place there (``index``). Paths derived from it (its parent) are plain."""

    pack: PosixPath
    index: int

    def is_file(self) -> bool:  # type: ignore[override]
        """Whether the cell is there: its pack is a file.

        Returns:
            True where ``pack`` is a file.
        """
        return self.pack.is_file()


def pack_name(algorithm: str, kind: str) -> str:
    """The file name of the pack of ``algorithm``'s cells of ``kind`` (in its problem's folder).

    Args:
        algorithm: the cells' algorithm.
        kind: the cells' kind, ``"bo"`` or another (``"timing"``).

    Returns:
        ``ALGORITHM`` plus :data:`PACK_SUFFIX`, with ``.KIND`` before the suffix for a kind other than ``bo``.
    """
    return f"{algorithm}{'' if kind == 'bo' else '.' + kind}{PACK_SUFFIX}"


def is_pack(path: PosixPath) -> bool:
    """Whether ``path`` names a pack.

    Args:
        path: a path.

    Returns:
        True where its name ends in :data:`PACK_SUFFIX`.
    """
    return path.name.endswith(PACK_SUFFIX)


def file_digest(path: PosixPath) -> str:
    """The SHA-256 of a file's bytes.

    Args:
        path: the file.

    Returns:
        The digest in hex.
    """
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_digests(root: PosixPath, packs: list[PosixPath]) -> PosixPath:
    """Record the digest of each of ``packs`` (under ``root``) in ``root/_digests.json``.

    Args:
        root: the packed folder.
        packs: its pack files.

    Returns:
        The digests file's path.
    """
    digests = {str(p.relative_to(root)): file_digest(p) for p in sorted(packs)}
    target = root / DIGESTS
    target.write_text(json.dumps({"algorithm": "sha256", "files": digests}, indent=1, sort_keys=True) + "\n")
    return target


def _recorded_digest(path: PosixPath) -> str | None:
    """The digest the packed folder records for the pack at ``path`` (its root is two folders up:
    ``ROOT/PROBLEM/ALGORITHM.pack.parquet``); None where the folder records none (packed before
    digests were). ``ValueError`` where the folder records digests but not this pack's."""
    root = path.parent.parent
    digests = root / DIGESTS
    if not digests.is_file():
        return None
    try:
        files = json.loads(digests.read_text())["files"]
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"{digests} is damaged (not a digests file)") from None
    name = str(path.relative_to(root))
    if name not in files:
        raise ValueError(f"{digests} records no digest of {name}")
    return files[name]


@functools.lru_cache(maxsize=64)
def _load(path: str, mtime_ns: int, size: int) -> tuple[pa.Table, tuple[dict, ...], tuple[int, ...]]:
    """A pack's table, its cells' entries and each cell's first row (cached while the file is
    unchanged), after its bytes are checked against the digest its folder records."""
    expected = _recorded_digest(PosixPath(path))
    if expected is not None and file_digest(PosixPath(path)) != expected:
        raise ValueError("its bytes do not match the SHA-256 its folder records in " + DIGESTS)
    table = pq.read_table(path)
    entries = _entries(table.schema.metadata or {}, path)
    starts, at = [], 0
    for entry in entries:
        starts.append(at)
        at += entry["rows"]
    if at != table.num_rows:
        raise ValueError(f"{path}: its cells count {at} rows, the file holds {table.num_rows}")
    return table.replace_schema_metadata(None), entries, tuple(starts)


def _entries(metadata: dict, path: str) -> tuple[dict, ...]:
    try:
        data = json.loads(metadata[PACK_KEY])
    except (KeyError, ValueError):
        raise ValueError(f"{path}: not a varbo-bench pack (no {PACK_KEY.decode()} metadata)") from None
    if data.get("format") != PACK_FORMAT:
        raise ValueError(f"{path}: pack format {data.get('format')!r}, this harness reads {PACK_FORMAT}")
    return tuple(data["cells"])


def load(pack: PosixPath) -> tuple[pa.Table, tuple[dict, ...], tuple[int, ...]]:
    """A pack's rows, its cells' entries and where each cell's rows start.

    Args:
        pack: the pack file.

    Returns:
        (rows, entries, starts), where ``rows`` is the pack's table without metadata, ``entries`` has one dict
        per cell (``hash``, ``seed``, ``rows``, ``columns``, ``meta``) and ``starts`` is the index of each
        cell's first row, in the entries' order.

    Raises:
        ValueError: a file that is not a readable pack.
    """
    stat = pack.stat()
    return _load(str(pack), stat.st_mtime_ns, stat.st_size)


def cells_of(pack: PosixPath) -> list[PackedCell]:
    """The cells of a pack, as :class:`PackedCell` paths beside it.

    Args:
        pack: the pack file.

    Returns:
        One :class:`PackedCell` per cell, in the pack's order, at ``PROBLEM/ALGORITHM/seedN-HASH.parquet``.

    Raises:
        ValueError: a file that is not a readable pack.
    """
    _, entries, _ = load(pack)
    algorithm = pack.name.removesuffix(PACK_SUFFIX).split(".")[0]
    out = []
    for index, entry in enumerate(entries):
        cell = PackedCell(pack.parent / algorithm / f"seed{entry['seed']}-{entry['hash']}.parquet")
        cell.pack, cell.index = pack, index
        out.append(cell)
    return out


def cell_schema(cell: PackedCell) -> pa.Schema:
    """The schema the cell's own file had: its columns, with its ``varbo`` metadata.

    Args:
        cell: the packed cell.

    Returns:
        The schema, its fields the pack's fields of the cell's columns, its metadata
        ``{b"varbo": the cell's metadata as JSON}``.
    """
    table, entries, _ = load(cell.pack)
    entry = entries[cell.index]
    fields = [table.schema.field(name) for name in entry["columns"]]
    return pa.schema(fields, metadata={b"varbo": json.dumps(entry["meta"]).encode()})


def cell_table(cell: PackedCell, schema: pa.Schema) -> pa.Table:
    """The cell's rows in ``schema`` (whose columns the pack holds).

    Args:
        cell: the packed cell.
        schema: the schema wanted (:func:`cell_schema`, or one without metadata).

    Returns:
        A table with one row per stored iteration of the cell, the columns of ``schema``, cast to it.
    """
    table, entries, starts = load(cell.pack)
    rows = table.slice(starts[cell.index], entries[cell.index]["rows"])
    return rows.select(schema.names).cast(schema)
