"""Final log10 regret over seeds for a few (problem, algorithm) pairs, run in a process pool.

    python benchmarks/final_regret.py --problems branin-1-1-discrete hartmann-1-2-discrete \
        --algorithms vucb-prob vucb-unif stableopt random --seeds 10 --workers 2 --out results/final-regret

Each cell is written to the store like ``harness.run`` does (finished cells are reused), then the
table prints mean, standard deviation, median and range of log10 final regret per pair, and the
median per-iteration acquisition time. It predates the grid runner and stays for pairs the paper
grid leaves out (random search, other options); for grid cells, `python -m analysis.report` gives
the same figures (its "Final iteration" table) with 70% bands.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import pyarrow.parquet as pq
import torch

from harness.cell import CellSpec, run_cell
from harness.results import cell_path
from harness.store import write_cell


def _run(spec: CellSpec, out: Path) -> Path:
    torch.set_num_threads(1)
    path = cell_path(out, spec)
    if not path.exists():
        write_cell(out, spec, run_cell(spec))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", nargs="+", default=["branin-1-1-discrete",
                                                          "hartmann-1-2-discrete"])
    parser.add_argument("--algorithms", nargs="+",
                        default=["vucb-prob", "vucb-unif", "stableopt", "random"])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("results/final-regret"))
    args = parser.parse_args()
    specs = [CellSpec.make(p, a, s, args.iterations) for p in args.problems
             for a in args.algorithms for s in range(args.seeds)]
    paths: dict[CellSpec, Path] = {}
    with ProcessPoolExecutor(args.workers) as pool:
        futures = {pool.submit(_run, spec, args.out): spec for spec in specs}
        for i, future in enumerate(as_completed(futures), 1):
            spec = futures[future]
            paths[spec] = future.result()
            print(f"[{i}/{len(specs)}] {spec.problem} {spec.algorithm} seed {spec.seed}",
                  file=sys.stderr, flush=True)
    print(f"{'problem':24} {'algorithm':10} {'target':10} {'n':>3} {'mean':>7} {'sd':>6} "
          f"{'median':>7} {'min':>7} {'max':>7} {'acq s':>7}")
    for p in args.problems:
        for a in args.algorithms:
            frames = [pq.read_table(paths[s]).to_pandas() for s in specs
                      if s.problem == p and s.algorithm == a]
            finals = [f.iloc[-1] for f in frames]
            logs = [math.log10(r["regret"]) if r["regret"] > 0 else -math.inf for r in finals]
            acq = [t for f in frames for t in f["t_acq_s"].dropna()]
            print(f"{p:24} {a:10} {finals[0]['target']:10} {len(logs):3d} "
                  f"{statistics.fmean(logs):7.2f} {statistics.stdev(logs):6.2f} "
                  f"{statistics.median(logs):7.2f} {min(logs):7.2f} {max(logs):7.2f} "
                  f"{statistics.median(acq):7.3f}")


if __name__ == "__main__":
    main()
