"""Speed of the simulated problems' objectives, single-threaded.

    python benchmarks/simulated_problems.py [--simulations 2000] [--x 1000]

Prints milliseconds per robot-pushing simulation (uniform random starts and t_p, fresh simulations,
not the memo) and the seconds the portfolio surrogate takes for f on ``--x`` random x times the 100
z of its Z grid (after the one-off build of the GP weights, also printed).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from problems import build_problem
from problems.portfolio import surrogate
from problems.robot_push import _simulate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulations", type=int, default=2000)
    parser.add_argument("--x", type=int, default=1000)
    args = parser.parse_args()
    torch.set_num_threads(1)

    rng = np.random.default_rng(0)
    starts = rng.uniform([-5, -5, 1], [5, 5, 30], size=(args.simulations, 3)).tolist()
    per_block = []
    for block in np.array_split(np.arange(args.simulations), 10):
        t0 = time.perf_counter()
        for i in block:
            _simulate(*starts[i])
        per_block.append((time.perf_counter() - t0) / len(block) * 1e3)
    print(f"robot pushing: {statistics.median(per_block):.2f} ms per simulation (median of 10 blocks "
          f"of {args.simulations // 10}; min {min(per_block):.2f}, max {max(per_block):.2f}); "
          f"t_p uniform on [1, 30]: {10 * 15.5 + 100:.0f} steps on average")

    t0 = time.perf_counter()
    surrogate()
    print(f"portfolio: GP weights built in {time.perf_counter() - t0:.2f} s (once per process)")
    p = build_problem("portfolio-3-2", with_optimum=False)
    x = torch.rand(args.x, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        p.support_values(x)
        times.append(time.perf_counter() - t0)
    print(f"portfolio: f at {args.x} x times |Dz| = 100 in {min(times):.2f} s (best of 3; "
          f"{min(times) / (100 * args.x) * 1e6:.1f} us per (x, z))")


if __name__ == "__main__":
    main()
