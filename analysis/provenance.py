"""Where the results came from: package versions and git commits recorded in the cell files, the grid
(``_grid.json``), and which of its cells are completed, failed (records under ``_failed/``) or missing.
"""

from __future__ import annotations

import json
import platform
import subprocess
from collections import Counter
from importlib import metadata as importlib_metadata
from pathlib import Path

import pandas as pd

from harness.grid_cells import unavailable_reason
from harness.kernels import host_summary
from harness.results import DamagedFileError, failure_files, read_failure, read_manifest, spec_hash

_ANALYSIS_PACKAGES = ("numpy", "scipy", "pandas", "pyarrow", "matplotlib", "seaborn")


def _seeds_text(seeds: list[int]) -> str:
    seeds = sorted(set(seeds))
    runs, start = [], None
    for i, s in enumerate(seeds):
        if start is None:
            start = s
        if i + 1 == len(seeds) or seeds[i + 1] != s + 1:
            runs.append(str(start) if start == s else f"{start}-{s}")
            start = None
    return ",".join(runs)


def _alpha_text(alpha: float | None) -> str:
    return "default" if alpha is None else f"{alpha:.4g}"


def cell_status(out: Path, metas: dict[str, dict]) -> dict:
    """Completed, failed and missing cells of ``out``, and the versions and commits found in the files.

    Args:
        out: the results folder.
        metas: the ``varbo`` metadata of every finished cell file by spec hash
            (:func:`analysis.data.load_results`).

    Returns:
        A dict with ``grid`` (the grid's name from the manifest, None without one), ``grid_damaged`` (the
        manifest's damage, ``""`` where none), ``n_grid_cells``, ``n_done``, ``n_failed``, ``n_missing``,
        ``failed`` and ``missing`` (frames with one row per (problem, algorithm, risk measure, alpha,
        iterations) and message or reason, columns those keys, ``cells`` and ``seeds`` listed), ``commits``,
        ``python`` and ``package_sets`` (each value -> its count of cells) and ``hosts``
        (:func:`harness.kernels.host_summary`).
    """
    versions: Counter = Counter()
    commits: Counter = Counter()
    pythons: Counter = Counter()
    hosts = host_summary([meta.get("provenance", {}) for meta in metas.values()])
    done_hashes = set(metas)
    for meta in metas.values():
        info = meta.get("provenance", {})
        commits[info.get("git_commit") or "unknown"] += 1
        pythons[info.get("python") or "unknown"] += 1
        versions[json.dumps(info.get("packages", {}), sort_keys=True)] += 1
    failed_rows = []
    failed_hashes = set()
    for path in failure_files(out):
        try:
            record = read_failure(path)
        except DamagedFileError as error:  # still a failure: counted, and named; the cell from its path
            stem = path.stem.split("-")[0].removeprefix("seed")
            record = {"spec": {"problem": path.parent.parent.name, "algorithm": path.parent.name,
                               "risk": "?", "alpha": None, "iterations": None,
                               "seed": int(stem) if stem.isdigit() else -1},
                      "spec_hash": None, "message": str(error)}
        spec = record.get("spec", {})
        failed_hashes.add(record.get("spec_hash"))
        failed_rows.append({"problem": spec.get("problem"), "algorithm": spec.get("algorithm"),
                            "risk": spec.get("risk", "var"), "alpha": _alpha_text(spec.get("alpha")),
                            "iterations": spec.get("iterations"),
                            "seed": spec.get("seed"), "message": record.get("message", "")})
    try:
        manifest = read_manifest(out)
        damaged = ""
    except DamagedFileError as error:  # no list of the grid's cells: nothing can be called missing
        manifest, damaged = None, str(error)
    grid_name, missing_rows = None, []
    n_grid = 0
    if manifest is not None:
        grid_name, specs = manifest
        n_grid = len(specs)
        for spec in specs:
            h = spec_hash(spec)
            if h in done_hashes or h in failed_hashes:
                continue
            missing_rows.append({"problem": spec.problem, "algorithm": spec.algorithm, "risk": spec.risk,
                                 "alpha": _alpha_text(spec.alpha), "iterations": spec.iterations,
                                 "seed": spec.seed, "reason": unavailable_reason(spec) or "not run yet"})
    return {"grid": grid_name, "grid_damaged": damaged, "n_grid_cells": n_grid, "n_done": len(metas),
            "n_failed": len(failed_rows),
            "n_missing": len(missing_rows), "failed": _grouped(failed_rows, "message"),
            "missing": _grouped(missing_rows, "reason"), "commits": dict(commits), "python": dict(pythons),
            "package_sets": {k: v for k, v in versions.items()}, "hosts": hosts}


def _grouped(rows: list[dict], extra: str) -> pd.DataFrame:
    columns = ["problem", "algorithm", "risk", "alpha", "iterations", extra, "cells", "seeds"]
    if not rows:
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame(rows)
    frame["iterations"] = frame["iterations"].map(lambda t: "default" if pd.isna(t) else str(int(t)))
    grouped = frame.groupby(["problem", "algorithm", "risk", "alpha", "iterations", extra], sort=False)
    table = grouped["seed"].agg(cells="size", seeds=lambda s: _seeds_text(list(s))).reset_index()
    return table[columns]


def analysis_environment() -> dict:
    """Versions of the packages that made the report, and this checkout's commit.

    Returns:
        A dict with ``python`` (its version), ``packages`` (each analysis package -> its version, None where
        not installed) and ``git_commit`` (None outside a git checkout).
    """
    versions = {}
    for package in _ANALYSIS_PACKAGES:
        try:
            versions[package] = importlib_metadata.version(package)
        except importlib_metadata.PackageNotFoundError:
            versions[package] = None
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent,
                                capture_output=True, text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"python": platform.python_version(), "packages": versions, "git_commit": commit}
