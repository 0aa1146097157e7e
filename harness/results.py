"""Reading the results store: where each cell's file lives, the readers of one cell file (its table,
its metadata), failure records, the grid's manifest and the checks of a file. The fixed schemas are
:mod:`harness.schema`'s; a whole folder as DataFrames for the analysis, :mod:`harness.frames`'s.
Writing (cells, checkpoints, failure records, the manifest) is :mod:`harness.store`.

Layout: ``OUT/<problem>/<algorithm>/seed<seed>-<spec hash>.parquet``; failure records (JSON, kept
apart from results) at ``OUT/_failed/<problem>/<algorithm>/seed<seed>-<spec hash>.json``; the grid's
list of cells at ``OUT/_grid.json``. A published folder may be *packed* instead
(``OUT/<problem>/<algorithm>.pack.parquet``, :mod:`harness.packed`): every reader here reads its
cells as if each had its own file. The hash covers the full cell
spec, so a changed spec (iterations, alpha, options) is never mistaken for a finished cell. Each file
is written to a '.'-prefixed temporary name in the same folder and then renamed over its final name,
so a crash leaves either the complete file or nothing (readers skip '.'-prefixed files).

Where: a local folder, or a URI (``s3://bucket/prefix``, ``gs://bucket/prefix``, ``file:///path``)
through fsspec's universal_pathlib (:func:`location`). An object store has no rename, but a single
upload becomes visible whole or not at all, so there each file is written straight to its name:
as atomic as the store allows, and resume works the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path, PurePath

import pyarrow as pa
import pyarrow.parquet as pq

from algorithms.gp import DEFAULT_GP
from harness import packed
from harness.remote import storage_options
from harness.schema import OLDER_ROW_SCHEMAS, READABLE_SCHEMAS, ROW_SCHEMA, SCHEMAS
from harness.spec import CellSpec
from problems.measures import DEFAULT_RISK

#: A results location: a local ``Path``, or a ``upath.UPath`` for a URI.
Location = PurePath


def location(out: str | PurePath) -> Location:
    """``out`` as a path object.

    A URI with a scheme is opened with :func:`harness.remote.storage_options` (an S3 client's retries and
    timeouts); ``file://`` URIs become plain paths, so that local writes keep their atomic rename.

    Args:
        out: a local path or a URI, as text, or a path object (returned as it is).

    Returns:
        A local ``Path``, or a ``UPath`` for a URI with a scheme.

    Raises:
        ValueError: a URI that cannot be opened (a bad timeout variable, or the remote stores' packages
            missing).
    """
    if not isinstance(out, str):
        return out
    if "://" not in out:
        return Path(out)
    if out.startswith("file://"):
        return Path(out[len("file://"):])
    # the client's own retries and time limits, defaults for what the user left unset (a bad value
    # is a ValueError of its own, not one of the missing packages below)
    options = storage_options(out)
    try:
        from upath import UPath

        return UPath(out, **options)
    except (ImportError, ValueError) as error:
        raise ValueError(f"cannot open {out}: {error} (remote stores need: pip install "
                         "'varbo-bench[cloud]')") from None


def is_local(path: PurePath) -> bool:
    """Whether ``path`` is a local path, by its class: one of ``pathlib``'s, not a ``UPath``.

    Args:
        path: a location.

    Returns:
        True for a path of ``pathlib``'s own classes; False for a ``UPath``, and for a path class defined
        elsewhere (a :class:`harness.packed.PackedCell`).
    """
    return isinstance(path, Path) and type(path).__module__.startswith("pathlib")


def spec_hash(spec: CellSpec) -> str:
    """The hash that names a cell's file.

    Args:
        spec: the cell.

    Returns:
        The first 12 hex digits of the SHA-256 of the spec's canonical JSON.
    """
    return hashlib.sha256(spec.to_json().encode()).hexdigest()[:12]


def cell_path(out: Location | str, spec: CellSpec) -> Location:
    """Where the cell's file lives under ``out``.

    Args:
        out: the results folder.
        spec: the cell.

    Returns:
        ``out/PROBLEM/ALGORITHM/seedN-HASH.parquet`` (:func:`spec_hash`).
    """
    return location(out) / spec.problem / spec.algorithm / f"seed{spec.seed}-{spec_hash(spec)}.parquet"


def file_hash(path: PurePath) -> str:
    """The spec hash a cell file's name carries (:func:`cell_path`; a packed cell's name too).

    Args:
        path: a cell file, ``.../seedN-HASH.parquet``.

    Returns:
        ``HASH``.
    """
    return path.stem.rsplit("-", 1)[-1]


def table_checksum(table: pa.Table) -> str:
    """SHA-256 of a table's values, row by row as JSON (exact for floats: ``repr`` round-trips).

    Args:
        table: the table; its schema's metadata is left out.

    Returns:
        The digest in hex.
    """
    text = json.dumps(table.replace_schema_metadata(None).to_pylist(), default=repr, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _read_schema(path: Location) -> pa.Schema:
    if isinstance(path, packed.PackedCell):
        return packed.cell_schema(path)
    if is_local(path):
        return pq.read_schema(path)
    with path.open("rb") as stream:
        return pq.read_schema(stream)


def read_table(path: Location, schema: pa.Schema = ROW_SCHEMA) -> pa.Table:
    """A cell file's table.

    Args:
        path: the cell file.
        schema: the schema to read it with; a BO file of an older schema (:data:`OLDER_ROW_SCHEMAS`)
            comes back with the columns it lacks null.

    Returns:
        The table, with ``schema``'s columns.
    """
    if schema is ROW_SCHEMA:
        names = _read_schema(path).names
        for older in OLDER_ROW_SCHEMAS:
            if names == older.names:
                old = read_table(path, older)
                for field in ROW_SCHEMA:
                    if field.name not in older.names:
                        old = old.append_column(field, pa.nulls(old.num_rows, field.type))
                return old
    if isinstance(path, packed.PackedCell):
        return packed.cell_table(path, schema)
    if is_local(path):
        return pq.read_table(path, schema=schema)
    with path.open("rb") as stream:
        return pq.read_table(stream, schema=schema)


def read_metadata(path: Location) -> dict:
    """The ``varbo`` metadata of a cell file.

    Args:
        path: the cell file.

    Returns:
        The metadata, parsed from JSON.
    """
    return json.loads(_read_schema(path).metadata[b"varbo"])


# ---------------------------------------------------------------------------------------------------
# failures, the grid manifest, stale temporary files

FAILED_DIR = "_failed"
MANIFEST = "_grid.json"
#: The running cells' iterations, rewritten by the grid's driver as they advance (removed at its end).
PROGRESS = "_progress.json"
CHECKPOINT_DIR = "_checkpoints"
#: One driver per folder: its host, pid and start time (:mod:`harness.grid_cli` replaces a stale one).
RUNNING_LOCK = "_running.lock"


def failure_path(out: Location | str, spec: CellSpec) -> Location:
    """Where the failure record of a cell lives (a '_'-prefixed folder: readers skip it).

    Args:
        out: the results folder.
        spec: the cell.

    Returns:
        ``out/_failed/PROBLEM/ALGORITHM/seedN-HASH.json``.
    """
    name = f"seed{spec.seed}-{spec_hash(spec)}.json"
    return location(out) / FAILED_DIR / spec.problem / spec.algorithm / name


class DamagedFileError(ValueError):
    """A file of the store (the grid manifest, a failure record, a cell file given to
    :func:`read_cell`) that cannot be read as what it should be; the message names the file and what
    is wrong."""


def _json_file(path: Location) -> object:
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as error:
        raise DamagedFileError(f"{path} is damaged: not UTF-8 text (byte {error.start})") from None
    except json.JSONDecodeError as error:
        raise DamagedFileError(f"{path} is damaged: not JSON ({error.msg}, line {error.lineno})") from None


def read_failure(path: Path) -> dict:
    """A failure record written by :func:`harness.store.write_failure`.

    Args:
        path: the record's file.

    Returns:
        The record, with at least its ``spec`` (a complete cell spec as a dict).

    Raises:
        DamagedFileError: a file that is not a failure record.
    """
    record = _json_file(path)
    if not isinstance(record, dict) or not isinstance(record.get("spec"), dict):
        raise DamagedFileError(f"{path} is damaged: not a failure record (no cell spec)")
    try:
        spec_from_dict(record["spec"])
    except (KeyError, TypeError, ValueError) as error:
        raise DamagedFileError(f"{path} is damaged: its cell spec is incomplete ({error})") from None
    return record


def read_manifest(out: Location | str) -> tuple[str, list[CellSpec]] | None:
    """The grid name and cells recorded by :func:`harness.store.write_manifest`.

    Args:
        out: the results folder.

    Returns:
        (grid name, cells), or None where ``out`` has no manifest.

    Raises:
        DamagedFileError: a file that is there but is not a manifest.
    """
    path = location(out) / MANIFEST
    if not path.is_file():
        return None
    data = _json_file(path)
    try:
        if not isinstance(data["grid"], str) or not isinstance(data["cells"], list):
            raise TypeError("'grid' must be a name and 'cells' a list")
        return data["grid"], [spec_from_dict(c) for c in data["cells"]]
    except (KeyError, TypeError, ValueError) as error:
        raise DamagedFileError(f"{path} is damaged: not a grid manifest ({error})") from None


# ---------------------------------------------------------------------------------------------------
# reading


def is_visible(path: Path, out: Location | str) -> bool:
    """Whether ``path`` is a file readers see: no part of it under ``out`` starts with ``.`` or ``_``.

    Args:
        path: a path under ``out``.
        out: the results folder.

    Returns:
        True for a visible path.
    """
    return not any(part.startswith((".", "_")) for part in path.relative_to(out).parts)


def visible_files(out: Location, suffix: str) -> list[Location]:
    """The visible files under ``out`` (:func:`is_visible`) whose names end in ``suffix``.

    A local folder is walked with ``os.walk``, pruned at hidden folders: a folder that a running grid removes
    meanwhile (a finished cell's checkpoints) is skipped, where ``Path.rglob`` raises ``FileNotFoundError``
    (``harness.status`` beside a run could fail so).

    Args:
        out: the results folder.
        suffix: the names' ending, e.g. ``.parquet``.

    Returns:
        The files' paths, in the walk's order (unsorted).
    """
    if not is_local(out):
        return [p for p in out.rglob(f"*{suffix}") if is_visible(p, out)]
    found: list[Location] = []
    for folder, folders, files in os.walk(out, followlinks=True):  # as rglob
        folders[:] = [name for name in folders if not name.startswith((".", "_"))]
        found += [Path(folder, name) for name in files
                  if name.endswith(suffix) and not name.startswith((".", "_"))]
    return found


def spec_from_dict(data: dict) -> CellSpec:
    """The :class:`CellSpec` of a stored spec (a file's metadata, a manifest, a failure record).

    Args:
        data: the spec as stored (:meth:`CellSpec.to_dict`); ``kind``, ``gp``, ``risk`` and ``n_init`` may be
            missing (older files).

    Returns:
        The spec, the missing fields at their defaults.
    """
    return CellSpec(data["problem"], data["algorithm"], data["seed"], data["iterations"],
                    data["alpha"], tuple((k, v) for k, v in data["options"]), data.get("kind", "bo"),
                    data.get("gp", DEFAULT_GP), data.get("risk", DEFAULT_RISK), data.get("n_init"))


def check_cell_file(path: Location) -> str | None:
    """Why ``path`` is not a finished cell file written by this store, if it is not.

    The file must be Parquet with exactly the columns and types of its kind's schema
    (:data:`READABLE_SCHEMAS`), carry the ``varbo`` metadata, its recorded spec must hash to the hash in its
    name (so a file copied or renamed onto another cell's name is refused too), and its data must read whole
    and match the row count and checksum recorded when it was written (files written before those were
    recorded: must read whole). A few milliseconds per cell file.

    Args:
        path: the file (or a packed cell).

    Returns:
        The reason in one line, or None for a cell file.
    """
    return _check(path)[0]


def _check(path: Location) -> tuple[str | None, dict | None]:
    """:func:`check_cell_file`'s reason, and the file's metadata when it is a cell file."""
    try:
        schema = _read_schema(path)
    except Exception as error:  # pyarrow raises several types for a damaged footer
        return f"not a readable Parquet file ({type(error).__name__})", None
    columns = [(f.name, f.type) for f in schema]

    def matches(schemas: tuple[pa.Schema, ...]) -> bool:
        return any(columns == [(f.name, f.type) for f in known] for known in schemas)

    if not any(matches(known) for known in READABLE_SCHEMAS.values()):
        return "not a varbo-bench cell file (other columns)", None
    try:
        meta = json.loads((schema.metadata or {})[b"varbo"])
        spec = spec_from_dict(meta["spec"])
    except (KeyError, TypeError, ValueError):
        return "not a varbo-bench cell file (no cell metadata)", None
    if not matches(READABLE_SCHEMAS.get(spec.kind, (ROW_SCHEMA,))):
        return f"not a varbo-bench cell file (columns of another kind than {spec.kind!r})", None
    if spec_hash(spec) != file_hash(path):
        return "its recorded spec does not match its name", None
    try:  # the data too, not only the footer: a damaged data page would otherwise count as done
        table = read_table(path, SCHEMAS[spec.kind])
    except Exception as error:  # pyarrow raises several types for damaged pages
        return f"damaged data ({type(error).__name__})", None
    if "rows" in meta and table.num_rows != meta["rows"]:
        return f"damaged data ({table.num_rows} rows, its metadata says {meta['rows']})", None
    # the checksum covers the columns the file holds (an older schema's: not the null ones added)
    stored = table.select(schema.names) if schema.names != table.column_names else table
    if "checksum" in meta and table_checksum(stored) != meta["checksum"]:
        return "damaged data (its values do not match its checksum)", None
    return None, meta


def scan_cells(out: Location | str) -> tuple[list[tuple[Location, dict]], list[tuple[Location, str]]]:
    """The cell files under ``out`` (packs read as their cells) and the files refused.

    Args:
        out: the results folder.

    Returns:
        The cell files with their metadata, and the refused files with the reason.
    """
    out = location(out)
    if not out.is_dir():
        return [], []
    good, bad = [], []
    for path in _cell_paths(out, bad):
        reason, meta = _check(path)
        if reason is None:
            good.append((path, meta))
        else:
            bad.append((path, reason))
    return good, bad


def _cell_paths(out: Location, bad: list[tuple[Location, str]]) -> list[Location]:
    """The visible ``*.parquet`` files under ``out``, each pack (:mod:`harness.packed`, local folders
    only) replaced by its cells, sorted by path; a pack that cannot be read goes into ``bad``."""
    paths = []
    for path in visible_files(out, ".parquet"):
        if not (packed.is_pack(path) and is_local(path)):
            paths.append(path)
            continue
        try:
            paths.extend(packed.cells_of(path))
        except Exception as error:  # a damaged pack: named, as any damaged file
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            bad.append((path, f"not a readable pack ({reason})"))
    return sorted(paths, key=str)


def packs(out: Location | str) -> list[Location]:
    """The pack files under ``out`` (:mod:`harness.packed`).

    Args:
        out: the results folder.

    Returns:
        The packs, sorted; empty for a folder of cell files, a remote one, or none.
    """
    out = location(out)
    if not is_local(out) or not out.is_dir():
        return []
    return sorted(visible_files(out, packed.PACK_SUFFIX))


def cell_files(out: Location | str) -> tuple[list[tuple[Location, dict]], list[tuple[Location, str]]]:
    """Every finished cell file under ``out`` and every refused one, in one pass.

    Args:
        out: the results folder.

    Returns:
        (good, bad), where ``good`` pairs each finished cell file with its ``varbo`` metadata (the files of
        :func:`result_files`), and ``bad`` each refused ``*.parquet`` file with the reason
        (:func:`invalid_files`), both sorted by path.
    """
    return scan_cells(out)


def read_cell(path: Location) -> tuple[dict, pa.Table]:
    """One cell file: its ``varbo`` metadata and its rows.

    Args:
        path: the cell file (or a packed cell).

    Returns:
        (metadata, rows), the rows a table with one row per stored iteration in its kind's schema (a BO file
        of an older schema with the columns it lacks null), without metadata.

    Raises:
        DamagedFileError: with the reason, where :func:`check_cell_file` refuses the file.
    """
    reason, meta = _check(path)
    if reason is not None:
        raise DamagedFileError(f"{path} cannot be read as a cell file: {reason}")
    kind = meta["spec"].get("kind", "bo")
    return meta, read_table(path, SCHEMAS[kind]).replace_schema_metadata(None)


def file_label(path: Location) -> str:
    """A file as a person finds it on disk.

    Args:
        path: a file or a packed cell.

    Returns:
        A packed cell (:class:`harness.packed.PackedCell`) by its pack and its place there, any other file by
        its path.
    """
    if isinstance(path, packed.PackedCell):
        return f"{path.pack} (its cell {path.parent.name}/{path.name})"
    return str(path)


def is_damage(reason: str) -> bool:
    """Whether a refusal's ``reason`` (:func:`check_cell_file`) says the bytes are not those written.

    Damage is a torn or flipped file, or a pack that does not read, rather than a file that is no cell of this
    harness (other columns, a spec that is not its name's): readers refuse the first kind and pass over the
    second with a warning.

    Args:
        reason: the refusal's reason.

    Returns:
        True for damage.
    """
    return reason.startswith(("damaged data", "not a readable"))


def refuse_damage(bad: list[tuple[Location, str]]) -> None:
    """Raise :func:`damaged` for the damaged files among ``bad``; warn of the others, which are
    never read (a foreign file, a cell file under another cell's name)."""
    broken = [(path, reason) for path, reason in bad if is_damage(reason)]
    if broken:
        raise damaged(broken)
    for path, reason in bad:
        warnings.warn(f"skipped {path}: {reason}", stacklevel=3)


def damaged(bad: list[tuple[Location, str]]) -> DamagedFileError:
    """The error that refuses a folder with damaged files.

    It names the first file with its reason, how many more, and the remedy (a pack is read-only, so it is
    restored from its publication; a cell file is recomputed by a grid run).

    Args:
        bad: :func:`invalid_files`' pairs, not empty.

    Returns:
        The :class:`DamagedFileError`, to be raised.
    """
    path, reason = bad[0]
    more = f" (and {len(bad) - 1} more damaged files)" if len(bad) > 1 else ""
    in_pack = isinstance(path, packed.PackedCell) or packed.is_pack(path)
    remedy = ("restore the pack from its publication (in a clone: git checkout -- FILE)" if in_pack
              else "a grid run into the folder recomputes its cell")
    return DamagedFileError(f"{file_label(path)}: {reason}{more}; refused: {remedy}")


def result_files(out: Location | str) -> list[Location]:
    """Every finished cell file under ``out``.

    Files with '.'- and '_'-prefixed names are skipped, and any that :func:`check_cell_file` refuses.

    Args:
        out: the results folder.

    Returns:
        The files (packed cells as :class:`harness.packed.PackedCell`), sorted by path.
    """
    return [path for path, _ in scan_cells(out)[0]]


def invalid_files(out: Location | str) -> list[tuple[Location, str]]:
    """The visible ``*.parquet`` files under ``out`` that are not cell files: corrupted, foreign, or renamed.

    They are never read as results; a grid run recomputes a cell whose file is one of them (the new file
    replaces it).

    Args:
        out: the results folder.

    Returns:
        (file, reason) of each, sorted by path.
    """
    return scan_cells(out)[1]


def failure_files(out: Location | str) -> list[Location]:
    """Every failure record under ``out``.

    Args:
        out: the results folder.

    Returns:
        The records' files, sorted; empty without a ``_failed`` folder.
    """
    folder = location(out) / FAILED_DIR
    return sorted(folder.rglob("*.json")) if folder.is_dir() else []


def read_progress(out: Location | str) -> dict | None:
    """The running cells' progress as the grid's driver last wrote it.

    Args:
        out: the results folder.

    Returns:
        A dict with ``updated`` (epoch seconds), ``host``, ``pid`` and ``running`` (one dict per running cell,
        with ``cell``, ``iteration``, ``iterations`` and ``seconds``), or None when no grid is writing into
        ``out`` (or the file cannot be read: it is advisory).
    """
    try:
        data = json.loads((location(out) / PROGRESS).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("running"), list) else None
