"""Cost of per-iteration checkpoints: the time ``run_cell`` spends packing its state after each
iteration (bytes handed to the grid, which stores them through an actor, off the cell's path).

    python benchmarks/checkpoint_overhead.py [--problem branin-1-1-discrete] [--iterations 60]

Prints the median and maximum seconds per checkpoint and its size, from a random-search cell
(cheap iterations, so the state grows as in any cell) and the median seconds per iteration of
rho-KG^apx at the paper's settings, from ``--results`` if given (a results folder), for scale.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import harness.cell as cell_module
from harness.cell import CellSpec, run_cell


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="branin-1-1-discrete")
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--results", default=None, help="a results folder with rho-KG^apx cells")
    args = parser.parse_args()
    torch.set_num_threads(1)
    times: list[float] = []
    sizes: list[int] = []
    pack = cell_module._pack

    def timed_pack(state: dict) -> bytes:
        start = time.perf_counter()
        data = pack(state)
        times.append(time.perf_counter() - start)
        sizes.append(len(data))
        return data

    cell_module._pack = timed_pack
    spec = CellSpec.make(args.problem, "random", 0, args.iterations)
    run_cell(spec, on_checkpoint=lambda data, t: None, checkpoint_every_s=0.0)
    print(f"{args.problem}, {args.iterations} iterations: {len(times)} checkpoints, "
          f"median {1e3 * statistics.median(times):.2f} ms, max {1e3 * max(times):.2f} ms, "
          f"size median {statistics.median(sizes) / 1e3:.1f} kB, max {max(sizes) / 1e3:.1f} kB")
    if args.results:
        from harness.frames import read_results

        frame = read_results(args.results)
        rho = frame[(frame.algorithm == "rhokg-apx") & (frame.problem == args.problem)]
        if len(rho):
            per_iteration = float(rho["t_acq_s"].median())
            print(f"rho-KG^apx median acquisition per iteration there: {per_iteration:.2f} s; one "
                  f"checkpoint is {100 * statistics.median(times) / per_iteration:.3f}% of it")


if __name__ == "__main__":
    main()
