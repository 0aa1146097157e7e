"""Rows from several runs in one report (``python -m analysis.report FOLDER --with OTHER``): what each
run is, and the evidence that they may be compared.

Rows compare honestly across runs only where the runs share what is not the method: the harness's
code (the GP, the initial designs, the noise, the recommendation rule), the environment, and for
seconds the machine. A report with ``--with`` therefore says, for each folder, its cells, its commits,
its environments and its hosts (CPU, kernels pinned or not), and checks the one thing that can be
checked from rows alone: the cells both folders hold (the same spec hash, so the same problem,
method, options, seed and budget; a grid that runs one published method beside the new one makes
them). For each such cell it compares the rows that define the run (x, z, y, the recommendation and
its regret):

* identical rows: this run reproduces that one bit for bit (the same code path on the same kind of
  host), and the other rows of the runs pair seed by seed as one run's would;
* rows that differ: the runs are two draws of the same experiment (another host or library build)
  or of two different experiments (another harness); the section gives the final log10 regrets of
  both, side by side, for the reader to judge, and ``python -m analysis.recheck`` is the statistical
  check of a claim.

Seconds measured on different CPUs do not compare. Where both folders hold a cell, the median ratio
of its acquisition seconds (this folder's over the other's) measures the two machines against each
other on the same work, and the section gives it; without one, it says that the runs' seconds are
not comparable.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis.data import RUN_COLUMNS, load_results
from analysis.report_output import Document
from harness.kernels import host_summary


def run_summary(folder: Path, metas: dict[str, dict]) -> list[str]:
    """What a run is: its cells, commits, environment digests and hosts.

    Args:
        folder: the run's results folder, named in the line.
        metas: the metadata of its cells by spec hash (:func:`analysis.data.load_results`), whose
            ``provenance`` is read.

    Returns:
        A list of one line, naming the folder, its number of cells, its commits and environment digests (each
        with its number of cells, ``unknown`` where not recorded) and its hosts
        (:func:`harness.kernels.host_summary`).
    """
    provenances = [meta.get("provenance", {}) for meta in metas.values()]

    def counted(key: str) -> str:
        values = pd.Series([p.get(key) or "unknown" for p in provenances]).value_counts()
        return ", ".join(f"`{str(v)[:12]}` ({n})" for v, n in values.items()) or "none"

    hosts = "; ".join(host_summary(provenances)) or "no host recorded"
    return [f"{folder}: {len(metas)} cells; commits {counted('git_commit')}; environments "
            f"{counted('environment')}; hosts: {hosts}"]


def _same_rows(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Whether two frames of one cell hold the same run (:data:`analysis.data.RUN_COLUMNS`)."""
    if len(a) != len(b):
        return False
    a, b = a.sort_values("iteration"), b.sort_values("iteration")
    for column in RUN_COLUMNS:
        for u, v in zip(a[column], b[column], strict=True):
            if not np.array_equal(np.asarray(u, dtype=float), np.asarray(v, dtype=float), equal_nan=True):
                return False
    return True


def shared_cells(mine: pd.DataFrame, other: pd.DataFrame) -> pd.DataFrame:
    """The cells both frames hold (by spec hash), compared.

    Args:
        mine: the rows of this report's run (:func:`analysis.data.load_results`).
        other: the rows of another run.

    Returns:
        A frame with one row per shared cell, by spec hash, columns ``spec_hash``, ``problem``, ``algorithm``,
        ``seed``, ``identical`` (whether its rows are the same run, :data:`analysis.data.RUN_COLUMNS`),
        ``final_regret`` and ``other_final_regret`` (the regret of each run's last iteration) and
        ``seconds_ratio`` (the median acquisition seconds of ``mine`` over those of ``other``, NaN where the
        other's are not positive).
    """
    rows = []
    for spec_hash in sorted(set(mine["spec_hash"]) & set(other["spec_hash"])):
        a, b = mine.loc[mine["spec_hash"] == spec_hash], other.loc[other["spec_hash"] == spec_hash]
        last_a, last_b = a.loc[a["iteration"].idxmax()], b.loc[b["iteration"].idxmax()]
        seconds_a, seconds_b = a["t_acq_s"].median(), b["t_acq_s"].median()
        rows.append({"spec_hash": spec_hash, "problem": last_a["problem"], "algorithm": last_a["algorithm"],
                     "seed": int(last_a["seed"]), "identical": _same_rows(a, b),
                     "final_regret": float(last_a["regret"]), "other_final_regret": float(last_b["regret"]),
                     "seconds_ratio": float(seconds_a / seconds_b) if seconds_b > 0 else np.nan})
    return pd.DataFrame(rows, columns=["spec_hash", "problem", "algorithm", "seed", "identical",
                                       "final_regret", "other_final_regret", "seconds_ratio"])


def across_runs_section(doc: Document, results: Path, also: tuple[Path, ...], out: Path,
                        paths: dict[str, Path]) -> pd.DataFrame:
    """The report's section on the runs a ``--with`` report joins (module docstring).

    Writes the section to ``doc`` and the shared cells of each other folder to ``across_runs.csv``.

    Args:
        doc: the report being written.
        results: the report's own results folder.
        also: the other folders (``--with``).
        out: the folder ``across_runs.csv`` is written to.
        paths: the report's files by name, to which ``across_runs.csv`` is added.

    Returns:
        The table written to ``across_runs.csv``, the frame of :func:`shared_cells` for each other folder,
        with a column ``other`` naming the folder, concatenated (without ``other`` and empty where no other
        folder is given).
    """
    mine, my_metas = load_results(results)
    doc.heading("The runs compared", 2)
    doc.para("This report joins the rows of several runs (read, not rerun; a cell of both counts once, "
             f"from {results}). What each run is:")
    lines = run_summary(results, my_metas)
    tables = []
    for folder in also:
        other, other_metas = load_results(folder)
        lines += run_summary(folder, other_metas)
        shared = shared_cells(mine, other).assign(other=str(folder))
        tables.append(shared)
    doc.bullets(lines)
    table = pd.concat(tables, ignore_index=True) if tables else shared_cells(mine, mine.iloc[:0])
    paths["across_runs.csv"] = out / "across_runs.csv"
    table.to_csv(paths["across_runs.csv"], index=False)
    for folder in also:
        doc.para(_verdict(table.loc[table["other"] == str(folder)], results, folder))
    return table


def _verdict(shared: pd.DataFrame, results: Path, folder: Path) -> str:
    """What the cells both folders hold say about comparing them (module docstring)."""
    if shared.empty:
        return (f"{results} and {folder} share no cell, so nothing here checks that they ran the same "
                "harness on comparable machines: their rows pair seed by seed only if both used the same "
                "code for everything but the method, and their seconds are not comparable. A grid that "
                f"also runs one of {folder}'s methods (a cheap one) makes that check.")
    same = int(shared["identical"].sum())
    ratio = shared["seconds_ratio"].median()
    text = (f"{len(shared)} cell(s) are in both {results} and {folder}; {same} of them have identical rows "
            f"(x, z, y, the recommendation and its regret)")
    if same == len(shared):
        text += ": this run reproduces that one bit for bit, so their other rows pair seed by seed."
    else:
        differ = shared.loc[~shared["identical"]]
        pairs = "; ".join(f"{r.problem}/{r.algorithm}/seed{r.seed}: {r.final_regret:.3g} against "
                          f"{r.other_final_regret:.3g}" for r in differ.head(5).itertuples())
        text += (f". The others differ (final regret here against there: {pairs}): the runs are two draws "
                 "of one experiment at best, to be compared as statistics (python -m analysis.recheck), "
                 "not row by row.")
    if np.isfinite(ratio):
        text += (f" On the same work this machine took {ratio:.2g} times the other's acquisition seconds "
                 "(the median over those cells): read the two runs' seconds with that factor.")
    return text
