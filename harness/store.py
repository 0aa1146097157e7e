"""The results store: one Parquet file per cell, written atomically.

Layout: ``OUT/<problem>/<algorithm>/seed<seed>-<spec hash>.parquet``. The hash covers the full cell
spec, so a changed spec (iterations, alpha, options) is never mistaken for a finished cell. Each file
is written to a '.'-prefixed temporary name in the same folder and then renamed over its final name,
so a crash leaves either the complete file or nothing (readers skip '.'-prefixed files).

The schema is fixed (:data:`ROW_SCHEMA`): every file has the same column types whatever the
algorithm, so a folder of them reads as one table without type-merge errors.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from importlib import metadata as importlib_metadata
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from harness.cell import CellResult, CellSpec

_float_list = pa.list_(pa.float64())

#: Column name -> type of every row of every cell file.
ROW_SCHEMA = pa.schema([
    ("problem", pa.string()),
    ("algorithm", pa.string()),
    ("seed", pa.int64()),
    ("iteration", pa.int64()),
    ("alpha", pa.float64()),
    ("target", pa.string()),  # "var" or "worst_case": which optimum the regret is against
    ("optimum", pa.float64()),
    ("x", _float_list),
    ("z", _float_list),
    ("y", pa.float64()),
    ("x_rec", _float_list),
    ("var_rec", pa.float64()),  # true VaR_alpha(f(x_rec, Z))
    ("worst_rec", pa.float64()),  # true min_z f(x_rec, z)
    ("regret", pa.float64()),  # optimum - (var_rec or worst_rec), never clipped
    ("x_rec_theory", _float_list),  # x_{t*}, t* = argmax_t VaR(l_{t-1}(x_t, Z))
    ("regret_theory", pa.float64()),
    ("var_mean_rec", pa.float64()),  # the model's estimate at x_rec
    ("beta", pa.float64()),
    ("lv_count", pa.int64()),
    ("var_upper", pa.float64()),
    ("var_lower", pa.float64()),
    ("n_obs", pa.int64()),
    ("fit_refit", pa.bool_()),
    ("fit_ok", pa.bool_()),
    ("fit_message", pa.string()),
    ("t_fit_s", pa.float64()),
    ("t_acq_s", pa.float64()),
    ("t_rec_s", pa.float64()),
    ("t_eval_s", pa.float64()),
])


def spec_hash(spec: CellSpec) -> str:
    """First 12 hex digits of the SHA-256 of the spec's canonical JSON."""
    return hashlib.sha256(spec.to_json().encode()).hexdigest()[:12]


def cell_path(out: Path, spec: CellSpec) -> Path:
    """Where the cell's file lives under ``out``."""
    return out / spec.problem / spec.algorithm / f"seed{spec.seed}-{spec_hash(spec)}.parquet"


def provenance() -> dict:
    """Package versions and the git commit of this checkout (None outside a git checkout)."""
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
    return {"python": platform.python_version(), "packages": versions, "git_commit": commit}


def to_table(result: CellResult, extra_metadata: dict | None = None) -> pa.Table:
    """The cell's rows as a table of :data:`ROW_SCHEMA`, metadata in the schema's key ``varbo``."""
    columns = {name: [row.get(name) for row in result.rows] for name in ROW_SCHEMA.names}
    table = pa.table(columns, schema=ROW_SCHEMA)
    meta = {**result.metadata, **(extra_metadata or {})}
    return table.replace_schema_metadata({"varbo": json.dumps(meta)})


def write_atomic(table: pa.Table, path: Path) -> None:
    """Write ``table`` to ``path`` through a '.'-prefixed temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_cell(out: Path, spec: CellSpec, result: CellResult) -> Path:
    """Write one finished cell under ``out``; returns its path."""
    path = cell_path(out, spec)
    write_atomic(to_table(result, {"provenance": provenance()}), path)
    return path


def read_metadata(path: Path) -> dict:
    """The ``varbo`` metadata of a cell file."""
    return json.loads(pq.read_schema(path).metadata[b"varbo"])
