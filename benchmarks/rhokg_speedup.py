"""rho-KG^apx per iteration, old style against new, measured in one run: where a proposal's time
goes, how much the pruned search over S saves, and that it proposes the same point.

    python benchmarks/rhokg_speedup.py [--problems ...] [--sizes N ...] [--repeats 2]

For each problem and number of observations |D| (default: the initial design plus half the
problem's iterations, the middle of a paper-grid run; a random design, noisy observations, a
fitted GP), it runs whole ``propose`` calls at BoRisk's paper settings, alternating

* ``old``: every x' of S estimated for every candidate (``RhoKGAcquisition.prune = False``: the
  search as it was before the pruning);
* ``new``: past x' that provably cannot hold the max over S skipped (the default),

and prints the median seconds of each, their ratio (old / new), the split of the new proposal into
its phases (setup of the iteration's estimator, raw-sample scoring with 4 fantasies, the first
L-BFGS-B phase, the refinement), a recommendation and a GP refit, and whether old and new
proposed the same (x, z) to the last bit (they must: the pruning changes no value and no gradient).
Torch runs on one thread, as in the grid. Other processes on the machine slow both styles alike;
the ratio is what to read.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import torch
from rhokg_iteration import state  # the same random-design states (run as a script: same folder)

from algorithms.gp import fit_gp
from algorithms.rhokg import RhoKGAcquisition, RhoKGApx
from problems import get_problem


class PhaseTimer:
    """Wraps an algorithm's setup and L-BFGS-B phases (instance attributes) to time them."""

    def __init__(self, algorithm: RhoKGApx) -> None:
        self.seconds: dict[str, float] = {}
        setup, optimize = algorithm._iteration_estimator, algorithm._optimize

        def timed_setup(*args, **kwargs):
            start = time.perf_counter()
            result = setup(*args, **kwargs)
            self._add("setup", start)
            return result

        def timed_optimize(acq, starts, bounds, maxiter, fix_w):
            start = time.perf_counter()
            result = optimize(acq, starts, bounds, maxiter, fix_w)
            self._add("refine" if maxiter == algorithm.maxiter else "first", start)
            return result

        algorithm._iteration_estimator, algorithm._optimize = timed_setup, timed_optimize

    def _add(self, key: str, start: float) -> None:
        self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", nargs="+",
                        default=["hartmann-1-2-discrete", "portfolio-3-2", "robot-push-3-2"])
    parser.add_argument("--sizes", nargs="+", type=int, default=None,
                        help="|D| values (default: n_init + iterations / 2 of each problem)")
    parser.add_argument("--repeats", type=int, default=2, help="proposals per style and size")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load average {load:.1f}, "
          f"torch {torch.__version__}, 1 thread")
    print(f"{'problem':22} {'|D|':>4} {'old':>8} {'new':>8} {'ratio':>6}  new = setup + raw + first "
          f"+ refine | {'rec':>5} {'refit':>5}  same (x, z)")
    for name in args.problems:
        p0 = get_problem(name)
        sizes = args.sizes or [p0.n_init + p0.iterations // 2]
        for n in sizes:
            p, model = state(name, n)
            times: dict[str, list[float]] = {"old": [], "new": []}
            phases: list[dict[str, float]] = []
            same = True
            for t in range(1, args.repeats + 1):
                proposals = {}
                for style in ("old", "new") if t % 2 else ("new", "old"):
                    algorithm = RhoKGApx(p, seed_root=0)
                    timer = PhaseTimer(algorithm)
                    RhoKGAcquisition.prune = style == "new"
                    start = time.perf_counter()
                    proposals[style] = algorithm.propose(model, t)
                    times[style].append(time.perf_counter() - start)
                    if style == "new":
                        phases.append({**timer.seconds, "total": times[style][-1]})
                RhoKGAcquisition.prune = True
                a, b = proposals["old"], proposals["new"]
                same &= torch.equal(a.x, b.x) and torch.equal(a.z, b.z)
            start = time.perf_counter()
            RhoKGApx(p, seed_root=0).recommend(model, model.train_inputs[0])
            rec = time.perf_counter() - start
            start = time.perf_counter()
            fit_gp(model.train_inputs[0], model.train_targets.unsqueeze(-1), model, refit=True,
                   generator=torch.Generator().manual_seed(1))
            refit = time.perf_counter() - start
            old, new = statistics.median(times["old"]), statistics.median(times["new"])
            ph = {k: statistics.median(d.get(k, 0.0) for d in phases)
                  for k in ("setup", "first", "refine", "total")}
            raw = ph["total"] - ph["setup"] - ph["first"] - ph["refine"]
            print(f"{name:22} {n:4d} {old:7.2f}s {new:7.2f}s {old / new:6.2f}  {ph['setup']:.2f} + "
                  f"{raw:.2f} + {ph['first']:.2f} + {ph['refine']:.2f} | {rec:5.2f} {refit:5.2f}  "
                  f"{'yes' if same else 'NO'}", flush=True)


if __name__ == "__main__":
    main()
