"""The stored rows as the analysis sees them: log10 regret with an explicit floor, final iterations,
and the check that no regret is negative beyond numerical noise.

A *cell* is one (problem, algorithm, options, alpha, iterations, seed) run; a *series* is the same
without the seed: the seeds of a series are averaged in a figure and paired across series in a test.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from algorithms.gp import DEFAULT_GP
from harness.frames import read_results
from harness.results import file_hash, read_metadata, result_files
from problems.measures import RISK_MEASURES

#: Columns that identify a series (one line of a figure, one side of a paired test).
SERIES_KEYS = ["problem", "alpha", "target", "algorithm", "options", "iterations"]
#: Columns that identify a cell.
CELL_KEYS = [*SERIES_KEYS, "seed"]

#: Regret at or below this value is drawn and tested at this value (log10 = -9). The optima are
#: certified to about 1e-11 (docs/reference/problems.md) and VaR differences below 1e-9 are not resolved by
#: the search, so a smaller regret is "the optimum reached" rather than a measurement.
DEFAULT_FLOOR = 1e-9
#: A regret below minus this value cannot come from rounding: the stored optimum is beaten.
NEGATIVE_TOLERANCE = 1e-9


#: The column holding each target's true value of the recommendation.
ACHIEVED_COLUMN = {name: measure.column for name, measure in RISK_MEASURES.items()}


def achieved(frame: pd.DataFrame) -> pd.Series:
    """The true value of each row's recommendation under the row's target (VaR, CVaR, worst case or mean).

    Args:
        frame: rows with ``target`` and the columns of :data:`ACHIEVED_COLUMN` their targets name.

    Returns:
        A float series on ``frame``'s index, each row's ``var_rec``, ``cvar_rec``, ``worst_rec`` or
        ``mean_rec`` by :data:`ACHIEVED_COLUMN`, NaN for a target it does not name.
    """
    out = pd.Series(np.nan, index=frame.index, dtype=float)
    for target, column in ACHIEVED_COLUMN.items():
        rows = frame["target"] == target
        if rows.any():
            out[rows] = frame.loc[rows, column].astype(float)
    return out


class NegativeRegretError(ValueError):
    """A stored regret below ``-NEGATIVE_TOLERANCE``: the cell's optimum is wrong."""


def load_results(out: Path) -> tuple[pd.DataFrame, dict[str, dict]]:
    """The rows of every finished cell under ``out``, and the cells' metadata.

    The rows are those of :func:`harness.frames.read_results`, with ``iterations`` and ``options`` taken from
    each file's ``varbo`` metadata (``options`` holds the cell's settings, :func:`settings_json`: its GP
    profile too, when not the default). ``read_results`` passes ``schema=ROW_SCHEMA`` to ``pq.read_table``,
    which drops the file's metadata, so its ``iterations`` come back null and its ``options`` always ``{}``;
    the metadata is read here once more (schemas only) so that cells differing in options or iterations stay
    apart.

    Args:
        out: the results folder.

    Returns:
        (frame, metas), where ``frame`` has one row per stored iteration of a cell, the columns of
        :data:`harness.schema.ROW_SCHEMA` and ``optimum_lower_bound`` (when not empty), and ``metas`` is each
        optimization cell's metadata by spec hash (timing cells left out).
    """
    frame = read_results(out)
    metas = {file_hash(path): read_metadata(path) for path in result_files(out)}
    metas = {h: m for h, m in metas.items() if m.get("kind", "bo") == "bo"}  # not timing cells
    iterations = {h: m.get("iterations") for h, m in metas.items()}
    lower_bound = {h: bool((m.get("optimum") or {}).get("lower_bound", False)) for h, m in metas.items()}
    options = {h: settings_json(m.get("spec", {})) for h, m in metas.items()}
    if not frame.empty:
        frame["iterations"] = frame["spec_hash"].map(iterations).fillna(frame["iterations"])
        frame["options"] = frame["spec_hash"].map(options).fillna(frame["options"])
        frame["optimum_lower_bound"] = frame["spec_hash"].map(lower_bound).fillna(False).astype(bool)
    return frame, metas


#: the columns that two files of one cell must agree on to be the same run (timings may differ)
RUN_COLUMNS = ["iteration", "x", "z", "y", "x_rec", "regret"]


class DuplicateCellError(ValueError):
    """Two files hold one cell (the same :data:`CELL_KEYS`) with different rows."""


def _run_values(rows: pd.DataFrame) -> list[tuple]:
    """A cell's :data:`RUN_COLUMNS`, iteration by iteration, as tuples of ``repr`` strings (arrays
    flattened), so that a missing value (NaN: iteration 0 has no y) equals itself."""
    rows = rows.sort_values("iteration")[RUN_COLUMNS]
    return [tuple(tuple(map(repr, np.asarray(v, dtype=float).ravel().tolist()))
                  if isinstance(v, list | np.ndarray) else repr(v) for v in row)
            for row in rows.itertuples(index=False)]


def drop_duplicate_cells(frame: pd.DataFrame, metas: dict[str, dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One cell stored under two spec hashes counts once.

    Two specs can describe one run: a cell run alone without ``--iterations`` leaves T unset in its spec, the
    grid's cell of the same problem, algorithm, settings, alpha and seed sets T, and their hashes differ.
    Counted twice, such a cell would double its seed in a band and in the claims' pairs. Per
    :data:`CELL_KEYS`, the rows of one file are kept: the one whose spec sets T (as grids write it), then the
    first spec hash.

    Args:
        frame: the rows of :func:`load_results`.
        metas: the cells' metadata by spec hash (:func:`load_results`).

    Returns:
        (frame, duplicates), where ``frame`` holds the kept rows (``frame`` itself where no cell is stored
        twice) and ``duplicates`` has one row per dropped file, columns the cell's keys (:data:`CELL_KEYS`),
        ``kept`` and ``dropped`` (spec hashes).

    Raises:
        DuplicateCellError: naming the cells whose files differ in any of :data:`RUN_COLUMNS` (two runs of one
            spec give identical rows, so a difference means different code or data, and which one is right is
            for the user to say).
    """
    columns = [*CELL_KEYS, "kept", "dropped"]
    if frame.empty:
        return frame, pd.DataFrame(columns=columns)
    counts = frame.groupby(CELL_KEYS, sort=True, dropna=False)["spec_hash"].nunique()
    if not (counts > 1).any():
        return frame, pd.DataFrame(columns=columns)
    keys = frame[CELL_KEYS].apply(tuple, axis=1)
    dropped_rows, conflicts = [], []
    for key in counts[counts > 1].index:
        part = frame.loc[keys == key]
        hashes = sorted(part["spec_hash"].unique(),
                        key=lambda h: (metas.get(h, {}).get("spec", {}).get("iterations") is None, h))
        kept = _run_values(part.loc[part["spec_hash"] == hashes[0]])
        for h in hashes[1:]:
            if _run_values(part.loc[part["spec_hash"] == h]) != kept:
                conflicts.append(f"  {key[0]}/{key[3]}/seed{key[-1]} options={key[4]} T={key[5]}: files "
                                 f"{hashes[0]} and {h}")
            dropped_rows.append({**dict(zip(CELL_KEYS, key, strict=True)), "kept": hashes[0], "dropped": h})
    if conflicts:
        raise DuplicateCellError(
            f"{len(conflicts)} cell(s) are stored twice with different rows (x, z, y, x_rec or regret); "
            "remove the file that should not count:\n" + "\n".join(conflicts))
    duplicates = pd.DataFrame(dropped_rows, columns=columns)
    return frame.loc[~frame["spec_hash"].isin(set(duplicates["dropped"]))].reset_index(drop=True), duplicates


def settings_json(spec: dict) -> str:
    """A cell's non-default settings as the analysis keys them (the ``options`` column).

    They are its algorithm options and, when it is not the default, its GP profile as ``gp``. Cells that
    differ in either never share a series, and labels and claim variants name both.

    Args:
        spec: the cell's spec as stored in its metadata (a :class:`harness.spec.CellSpec` as a dict).

    Returns:
        The settings as canonical JSON (sorted keys), ``{}`` for none.
    """
    settings = dict(spec.get("options", []))
    if spec.get("gp", DEFAULT_GP) != DEFAULT_GP:
        settings["gp"] = spec["gp"]
    return json.dumps(settings, sort_keys=True)


def check_regret(frame: pd.DataFrame, tolerance: float = NEGATIVE_TOLERANCE) -> None:
    """Raise :class:`NegativeRegretError` naming every cell with a regret below ``-tolerance``,
    except where the stored optimum is only a lower bound (``optimum_lower_bound``; see
    :func:`beaten_bounds`)."""
    bounded = frame.get("optimum_lower_bound", pd.Series(False, index=frame.index)).astype(bool)
    bad = frame.loc[(frame["regret"] < -tolerance) & ~bounded]
    if bad.empty:
        return
    worst = bad.loc[bad.groupby(CELL_KEYS, sort=True, dropna=False)["regret"].idxmin()]
    lines = [
        f"  {r.problem}/{r.algorithm}/seed{r.seed} alpha={r.alpha:.4g} target={r.target} "
        f"options={r.options}: regret {r.regret:.3e} at iteration {r.iteration} "
        f"(stored optimum {r.optimum:.12g}, achieved {r.optimum - r.regret:.12g})"
        for r in worst.itertuples()
    ]
    raise NegativeRegretError(
        f"{len(worst)} cell(s) have a regret below -{tolerance:g}: a recommendation beats the stored "
        "optimum, so the optimum (problems/optima.json or the alpha-specific search) is wrong:\n"
        + "\n".join(lines))


def beaten_bounds(frame: pd.DataFrame, tolerance: float = NEGATIVE_TOLERANCE) -> pd.DataFrame:
    """The best value any recommendation reached where a stored optimum is only a lower bound
    (``optimum_lower_bound``).

    Args:
        frame: the rows of :func:`load_results`.
        tolerance: a bound is ``beaten`` where a regret lies below minus this.

    Returns:
        A frame with one row per (problem, alpha, target) of a lower bound, columns ``problem``, ``alpha``,
        ``target``, ``bound``, ``best_found`` (bound - least regret), ``beaten_by`` (max(0, best_found -
        bound)), ``beaten`` (by more than ``tolerance``), the cell and iteration where it was found
        (``algorithm``, ``seed``, ``iteration``) and ``cells`` (how many cells ran there); empty, with those
        columns, where no optimum is a lower bound.
    """
    columns = ["problem", "alpha", "target", "bound", "best_found", "beaten_by", "beaten", "algorithm",
               "seed", "iteration", "cells"]
    if "optimum_lower_bound" not in frame or not frame["optimum_lower_bound"].any():
        return pd.DataFrame(columns=columns)
    bounded = frame.loc[frame["optimum_lower_bound"]]
    rows = []
    for (problem, alpha, target), group in bounded.groupby(["problem", "alpha", "target"], sort=True):
        best = group.loc[group["regret"].idxmin()]
        found = float(best["optimum"] - best["regret"])
        rows.append({"problem": problem, "alpha": alpha, "target": target, "bound": float(best["optimum"]),
                     "best_found": found, "beaten_by": max(0.0, -float(best["regret"])),
                     "beaten": bool(best["regret"] < -tolerance), "algorithm": best["algorithm"],
                     "seed": int(best["seed"]), "iteration": int(best["iteration"]),
                     "cells": group.groupby(CELL_KEYS, dropna=False).ngroups})
    return pd.DataFrame(rows, columns=columns)


#: ``regret_basis`` of a row: against the problem's optimum, or (the problem declares its optimum
#: unknown) against the best value any recommendation in the results folder reached.
OPTIMUM, BEST_FOUND = "optimum", "best found"


def regret_against_best_found(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows with their regrets against the best value found, where the optimum is unknown.

    Where the optimum is unknown (null ``optimum``: a user's problem that declares none), ``optimum`` is set
    to the best true value under that target (:func:`achieved`) any recommendation in the frame reached, per
    (problem, alpha, target), and ``regret`` to that best minus the row's value: the usual practice where no
    optimum is known. The basis depends on the runs in the folder: more or better runs raise it, and every
    such regret with it.

    Args:
        frame: the rows of :func:`load_results`.

    Returns:
        A copy of ``frame``, one row per row, with ``regret_basis`` (:data:`OPTIMUM` or :data:`BEST_FOUND`)
        and, on the rows of an unknown optimum, ``optimum`` and ``regret`` set as above.
    """
    out = frame.copy()
    unknown = out["optimum"].isna()
    out["regret_basis"] = np.where(unknown, BEST_FOUND, OPTIMUM)
    if unknown.any():
        values = achieved(out)
        keys = out.loc[unknown, ["problem", "alpha", "target"]]
        best = values[unknown].groupby([keys[c] for c in keys.columns], dropna=False).transform("max")
        out.loc[unknown, "optimum"] = best
        out.loc[unknown, "regret"] = best - values[unknown]
    return out


def with_log_regret(frame: pd.DataFrame, floor: float = DEFAULT_FLOOR) -> pd.DataFrame:
    """``frame`` plus its regret on the log scale, floored.

    Call :func:`check_regret` first: this function floors whatever it is given.

    Args:
        frame: rows with ``regret``.
        floor: the least regret drawn and tested (:data:`DEFAULT_FLOOR`).

    Returns:
        A copy of ``frame`` with ``at_floor`` (regret <= floor) and ``log10_regret`` (log10 max(regret,
        floor)).

    Raises:
        ValueError: a floor that is not positive.
    """
    if not floor > 0:
        raise ValueError(f"the floor must be positive, got {floor}")
    regret = frame["regret"].to_numpy(dtype=float)
    out = frame.copy()
    out["at_floor"] = regret <= floor
    out["log10_regret"] = np.log10(np.maximum(regret, floor))
    return out


def final_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The last row of every cell.

    Args:
        frame: the rows of :func:`load_results`.

    Returns:
        A frame with one row per cell (:data:`CELL_KEYS`), its last stored iteration (the planned
        ``iterations`` for a finished cell), ``frame``'s columns, a fresh index.
    """
    last = frame.groupby(CELL_KEYS, sort=False, dropna=False)["iteration"].transform("max")
    return frame.loc[frame["iteration"] == last].reset_index(drop=True)


def options_text(options: str) -> str:
    """A series' options as people read them.

    Args:
        options: the JSON of the ``options`` column, e.g. ``{"gp": "borisk", "beta": "authors"}``.

    Returns:
        ``gp=borisk, beta=authors`` for that example, ``""`` for the default options.
    """
    return ", ".join(f"{k}={v}" for k, v in json.loads(options).items())


def normalise(frame: pd.DataFrame) -> pd.DataFrame:
    """Column types the analysis relies on (string keys, float alpha) whatever pandas inferred.

    Args:
        frame: the rows of :func:`load_results`.

    Returns:
        A copy of ``frame`` with string ``problem``, ``algorithm``, ``target`` and ``options``, float
        ``alpha``, and int64 ``iterations`` (-1 where unset), ``seed`` and ``iteration``.
    """
    out = frame.copy()
    for column in ("problem", "algorithm", "target", "options"):
        out[column] = out[column].astype(str)
    out["alpha"] = out["alpha"].astype(float)
    out["iterations"] = out["iterations"].fillna(-1).astype("int64")
    out["seed"] = out["seed"].astype("int64")
    out["iteration"] = out["iteration"].astype("int64")
    return out
