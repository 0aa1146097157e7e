"""Time ``python -m analysis.report`` on a synthetic results folder the size of the full paper grid.

Writes every cell of the ``paper`` grid (370 cells: 37 problem x algorithm pairs x 10 seeds,
61 to 101 rows each) with made-up regrets and timings through ``harness.store``, plus a grid manifest
and one failure record, then runs the report as a user would (a fresh process, imports included) and
in-process, and prints both times. The issue's budget: 30 s.

    python benchmarks/analysis_report.py [--keep DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from harness.cell import CellResult, CellSpec
from harness.results import cell_path, spec_hash
from harness.store import provenance, write_atomic, write_failure, write_manifest
from harness.store import to_table as store_table
from studies.nguyen2021.grids import paper_grid

BUDGET_S = 30.0
_DIMS = {"hartmann-1-2": (1, 2), "hartmann-2-1": (2, 1), "portfolio": (3, 2), "robot": (3, 2)}


def _dims(problem: str) -> tuple[int, int]:
    return next((d for prefix, d in _DIMS.items() if problem.startswith(prefix)), (1, 1))


def synthetic_cell(spec: CellSpec, info: dict) -> CellResult:
    """Rows that look like a run: log10 regret drifting down with noise, some exactly 0 (the floor),
    V-UCB at alpha -> 0 querying exactly StableOpt's points (same seed stream)."""
    iterations = spec.iterations or 60
    worst = spec.algorithm == "stableopt" or spec.alpha is not None
    rng = np.random.default_rng([spec.seed, len(spec.problem), len(spec.algorithm)])
    t = np.arange(iterations + 1)
    slope = {"vucb-prob": 0.05, "vucb-unif": 0.04, "stableopt": 0.05}.get(spec.algorithm, 0.02)
    log_regret = -0.5 - slope * t + rng.normal(0, 0.3, t.size)
    regret = 10.0 ** log_regret
    regret[rng.random(t.size) < 0.02] = 0.0
    d_x, d_z = _dims(spec.problem)
    query_rng = np.random.default_rng([spec.seed, len(spec.problem)])  # shared across algorithms
    xs, zs = query_rng.random((t.size, d_x)), query_rng.random((t.size, d_z))
    acq = 20.0 if spec.algorithm == "rhokg-apx" else 0.1
    alpha = spec.alpha if spec.alpha is not None else (0.2 if spec.problem.startswith("portfolio") else 0.1)
    rows = []
    for i in range(t.size):
        rows.append({
            "problem": spec.problem, "algorithm": spec.algorithm, "seed": spec.seed, "iteration": i,
            "alpha": alpha,
            "target": "worst_case" if worst else "var", "optimum": 1.0,
            "x": xs[i].tolist() if i else [], "z": zs[i].tolist() if i else [], "y": 0.0 if i else None,
            "x_rec": xs[max(i, 1)].tolist(), "var_rec": 1.0 - regret[i], "worst_rec": 1.0 - regret[i],
            "regret": float(regret[i]), "n_obs": 10 + i, "fit_refit": i % 3 == 0, "fit_ok": True,
            "t_fit_s": float(rng.lognormal(np.log(0.02), 0.5)),
            "t_acq_s": float(rng.lognormal(np.log(acq), 0.3)) if i else None,
            "t_rec_s": 0.01, "t_eval_s": 1e-4 if i else None,
        })
    metadata = {"spec": json.loads(spec.to_json()), "target": rows[0]["target"], "optimum": {"value": 1.0},
                "iterations": iterations, "wall_time_s": float(sum(r["t_acq_s"] or 0 for r in rows)),
                "provenance": info}
    return CellResult(rows, metadata)


def synthesize(out: Path) -> int:
    """Write the paper grid's cells under ``out``; the last cell is a failure record instead."""
    grid = paper_grid()
    info = provenance()
    write_manifest(out, grid.name, list(grid.cells))
    for spec in grid.cells[:-1]:
        write_atomic(store_table(synthetic_cell(spec, info)), cell_path(out, spec))
    last = grid.cells[-1]
    write_failure(out, last, "RuntimeError: synthetic failure", "Traceback: (synthetic)",
                  {"spec_hash": spec_hash(last)})
    return len(grid.cells) - 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, default=None,
                        help="write the synthetic results here and keep them")
    parser.add_argument("--repeat", type=int, default=1, help="time the command this many times")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = args.keep or Path(tmp) / "results"
        start = time.perf_counter()
        n = synthesize(results)
        print(f"synthesized {n} cells in {time.perf_counter() - start:.1f} s under {results}")
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            report = str(Path(tmp) / "report")
            command = [sys.executable, "-m", "analysis.report", str(results), "--out", report]
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - start)
        worst = max(times)
        print(f"python -m analysis.report on {n} cells (a fresh process, imports included): "
              + ", ".join(f"{s:.1f} s" for s in times) + f"; budget {BUDGET_S:.0f} s: "
              + ("within" if worst <= BUDGET_S else "OVER"))
    return 0 if worst <= BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
