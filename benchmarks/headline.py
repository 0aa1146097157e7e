"""The headline speed figures: one V-UCB Prob and one rho-KG^apx proposal at the paper's settings,
and their ratio, on one core.

    python benchmarks/headline.py [--problems ...] [--n-obs 40] [--repeats 3]

Each method proposes on the same controlled state: a GP fitted on ``--n-obs`` noisy observations at
uniform (x, z) (the complexity study's timing cells, ``harness.complexity``), with the problem's own
Z (|Dz| = 100 for Branin, 64 for Hartmann-(1,2)). V-UCB Prob at its defaults; rho-KG^apx at BoRisk's
paper settings (10 fantasies, 10 samples, 10 d restarts from 500 d raw samples, L-BFGS-B up to
1000 iterations, two-time-scale every 10th call). One untimed warm-up call, then ``--repeats`` timed
calls each; the table gives medians of wall-clock and CPU seconds. Prints the machine it ran on.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics

import torch

from harness.cell import CellSpec, run_cell
from problems import PROBLEMS, build_problem


def median_seconds(problem: str, algorithm: str, n_obs: int, repeats: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of one proposal."""
    n_z = build_problem(problem, with_optimum=False).z.points.shape[0]
    spec = CellSpec.make(problem, algorithm, 0, options={"n_obs": n_obs, "n_z": n_z, "repeats": repeats},
                         kind="timing")
    rows = [r for r in run_cell(spec).rows if r["what"] == "acquisition"]
    return (statistics.median(r["seconds"] for r in rows), statistics.median(r["cpu_seconds"] for r in rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    discrete = [name for name in PROBLEMS if build_problem(name, with_optimum=False).z.is_discrete]
    parser.add_argument("--problems", nargs="+", default=["branin-1-1-discrete", "hartmann-1-2-discrete"],
                        choices=discrete, metavar="PROBLEM", help="problems with a discrete Z")
    parser.add_argument("--n-obs", type=int, default=40, help="|D|, observations of the GP (default 40)")
    parser.add_argument("--repeats", type=int, default=3, help="timed proposals per method (default 3)")
    args = parser.parse_args()
    if args.n_obs < 1 or args.repeats < 1:
        parser.error("--n-obs and --repeats must be positive")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} cores, "
          f"load average {load:.1f}; torch {torch.__version__}, 1 thread; |D| = {args.n_obs}, "
          f"{args.repeats} timed proposals per method")
    print(f"{'problem':24} {'|Dz|':>5} {'vucb-prob wall':>15} {'rhokg-apx wall':>15} {'ratio':>7} "
          f"{'ratio (CPU)':>11}")
    for problem in args.problems:
        n_z = build_problem(problem, with_optimum=False).z.points.shape[0]
        v_wall, v_cpu = median_seconds(problem, "vucb-prob", args.n_obs, args.repeats)
        r_wall, r_cpu = median_seconds(problem, "rhokg-apx", args.n_obs, args.repeats)
        print(f"{problem:24} {n_z:5d} {v_wall:14.3f}s {r_wall:14.2f}s {r_wall / v_wall:7.0f} "
              f"{r_cpu / v_cpu:11.0f}", flush=True)


if __name__ == "__main__":
    main()
