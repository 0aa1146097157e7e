"""V-UCB's per-iteration acquisition time on one core, measured in real runs.

    python benchmarks/vucb_iteration.py [--problems ...] [--seeds 3] [--iterations 60]

For each problem, runs vucb-prob cells with torch pinned to one thread and prints the median and
interquartile range of ``t_acq_s`` (propose: the x-search over [0, 1]^d_x and the lacing values),
of ``t_fit_s`` (model update) and of ``t_rec_s`` (recommendation), over all iterations and seeds.
Target for |Dz| = 100: median acquisition at most 0.2 s.
"""

from __future__ import annotations

import argparse
import platform
import statistics

import torch

from harness.cell import CellSpec, run_cell
from problems import get_problem


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q1, q2, q3 = statistics.quantiles(values, n=4)
    return q1, q2, q3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", nargs="+", default=["branin-1-1-discrete",
                                                          "hartmann-1-2-discrete",
                                                          "hartmann-2-1-discrete"])
    parser.add_argument("--algorithm", default="vucb-prob")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=60)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"1 thread")
    print(f"{'problem':24} {'|Dz|':>5} {'acq median':>10} {'acq IQR':>15} {'fit median':>10} "
          f"{'rec median':>10}")
    for name in args.problems:
        rows = [r for s in range(args.seeds)
                for r in run_cell(CellSpec.make(name, args.algorithm, s, args.iterations)).rows
                if r["iteration"] > 0]
        acq = quartiles([r["t_acq_s"] for r in rows])
        fit = statistics.median(r["t_fit_s"] for r in rows)
        rec = statistics.median(r["t_rec_s"] for r in rows)
        size = get_problem(name).z.size
        print(f"{name:24} {size:5d} {acq[1]:9.3f}s {acq[0]:6.3f}-{acq[2]:.3f} s {fit:9.3f}s "
              f"{rec:9.3f}s")


if __name__ == "__main__":
    main()
