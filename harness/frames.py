"""A results folder's finished cells as pandas DataFrames, as the analysis reads them: every BO cell
as one frame (:func:`read_results`), every timing cell as another (:func:`read_timings`). The files'
checks and the readers of one file are :mod:`harness.results`'s.
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa

from algorithms.gp import DEFAULT_GP
from harness.results import Location, damaged, file_hash, location, read_table, refuse_damage, scan_cells
from harness.schema import ROW_SCHEMA, TIMING_SCHEMA
from problems.measures import DEFAULT_RISK


def read_results(out: Location | str) -> pd.DataFrame:
    """Every finished cell under ``out`` as one DataFrame.

    Files are read one by one with the fixed schema and concatenated, so no type merging or partition
    inference happens (pandas 3 / pyarrow 26 safe). Files of the older schema read with null ``gp_*`` columns.
    Damaged files (:func:`is_damage`) are refused, as a folder read with a file left out would give other
    statistics without a word; files that are no cells of this harness (:func:`invalid_files`) are skipped
    with a warning that names them. Timing cells are not read (:func:`read_timings`).

    Args:
        out: the results folder.

    Returns:
        A frame with one row per stored iteration of a BO cell, the columns of :data:`ROW_SCHEMA` plus
        ``spec_hash`` (the file's, which tells apart cells that differ in iterations, alpha or options),
        ``iterations`` (the cell's planned count), ``options`` (canonical JSON of its options), ``gp`` (its GP
        profile) and ``risk`` (the risk measure it optimizes, one of :data:`problems.measures.RISKS`). An
        empty folder gives an empty frame with these columns.

    Raises:
        DamagedFileError: naming the first damaged file (a pack by its file) and how to repair it.
    """
    out = location(out)
    tables = []
    good, bad = scan_cells(out)
    refuse_damage(bad)
    for path, meta in good:
        if meta.get("spec", {}).get("kind", "bo") != "bo":  # timing cells: read_timings
            continue
        try:
            table = read_table(path)
        except Exception as error:  # damaged since the scan: refused as the scan refuses
            raise damaged([(path, f"unreadable ({type(error).__name__})")]) from None
        n = table.num_rows
        spec = meta.get("spec", {})
        table = table.replace_schema_metadata(None)
        table = table.append_column("spec_hash", pa.array([file_hash(path)] * n, pa.string()))
        table = table.append_column("iterations", pa.array([meta.get("iterations")] * n, pa.int64()))
        options = json.dumps(dict(spec.get("options", [])), sort_keys=True)
        table = table.append_column("options", pa.array([options] * n, pa.string()))
        table = table.append_column("gp", pa.array([spec.get("gp", DEFAULT_GP)] * n, pa.string()))
        table = table.append_column("risk", pa.array([spec.get("risk", DEFAULT_RISK)] * n, pa.string()))
        tables.append(table)
    if not tables:
        schema = ROW_SCHEMA.append(pa.field("spec_hash", pa.string())).append(
            pa.field("iterations", pa.int64())).append(pa.field("options", pa.string())).append(
            pa.field("gp", pa.string())).append(pa.field("risk", pa.string()))
        return schema.empty_table().to_pandas()
    return pa.concat_tables(tables).to_pandas()


def read_timings(out: Location | str) -> pd.DataFrame:
    """Every finished timing cell under ``out`` as one DataFrame.

    Files that are not cell files are refused or skipped, as by :func:`read_results`; BO cells are not read.

    Args:
        out: the results folder.

    Returns:
        A frame with one row per timed call, the columns of :data:`TIMING_SCHEMA` plus ``spec_hash`` and
        ``options`` (canonical JSON of the algorithm options, the state options ``n_obs``, ``n_z`` and
        ``repeats`` left out); empty, with these columns, without timing cells.

    Raises:
        DamagedFileError: naming the first damaged file and how to repair it.
    """
    tables = []
    good, bad = scan_cells(location(out))
    refuse_damage(bad)
    for path, meta in good:
        spec = meta.get("spec", {})
        if spec.get("kind", "bo") != "timing":
            continue
        try:
            table = read_table(path, TIMING_SCHEMA)
        except Exception as error:  # damaged since the scan: refused as the scan refuses
            raise damaged([(path, f"unreadable ({type(error).__name__})")]) from None
        n = table.num_rows
        state = ("n_obs", "n_z", "repeats")
        options = json.dumps({k: v for k, v in spec.get("options", []) if k not in state}, sort_keys=True)
        table = table.replace_schema_metadata(None)
        table = table.append_column("spec_hash", pa.array([file_hash(path)] * n, pa.string()))
        table = table.append_column("options", pa.array([options] * n, pa.string()))
        tables.append(table)
    if not tables:
        schema = TIMING_SCHEMA.append(pa.field("spec_hash", pa.string())).append(
            pa.field("options", pa.string()))
        return schema.empty_table().to_pandas()
    return pa.concat_tables(tables).to_pandas()
