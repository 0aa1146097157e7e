"""rho-KG^apx per iteration, old style against new, measured in one run: where a proposal's time
goes, how much the pruned search over S saves, and that it proposes the same point.

    python benchmarks/rhokg_speedup.py [--problems ...] [--risk var|cvar] [--sizes N ...] [--repeats 2]

For each problem and number of observations |D| (default: the initial design plus half the
problem's iterations, the middle of a paper-grid run; a random design, noisy observations, a
fitted GP), it runs whole ``propose`` calls at BoRisk's paper settings, alternating

* ``old``: every x' of S estimated for every candidate (``RhoKGAcquisition.prune = False``: the
  search as it was before the pruning);
* ``range`` (CVaR only): pruned with the range bounds that VaR's pruning uses
  (:func:`~algorithms.rhokg_estimator.estimate_bounds`, the estimator's ``attained`` unset), as
  CVaR was pruned before the coherent bounds;
* ``new``: past x' that provably cannot hold the max over S skipped (the default; for CVaR by the
  coherent bounds, :func:`~algorithms.rhokg_estimator.coherent_bounds`),

and prints the median seconds of each, their ratios (old / new, range / new), the split of the new
proposal into its phases (setup of the iteration's estimator, raw-sample scoring with 4 fantasies,
the first L-BFGS-B phase, the refinement), a recommendation and a GP refit, and whether all styles
proposed the same (x, z) to the last bit (they must: the pruning changes no value and no gradient).
``--risk cvar --problems hartmann6-1-5`` is the suite's costliest rho-KG^apx group.
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


def styled(p, risk: str, style: str) -> RhoKGApx:
    """A fresh rho-KG^apx in ``style`` (module docstring); :attr:`RhoKGAcquisition.prune` is set."""
    algorithm = RhoKGApx(p, seed_root=0, risk=risk)
    RhoKGAcquisition.prune = style != "old"
    if style == "range":
        algorithm.attained = None  # the estimator then prunes with estimate_bounds
    return algorithm


def measure_case(p, model, risk: str, styles: tuple[str, ...], repeats: int) -> dict:
    """Median seconds of each style's proposals (alternated), the new proposal's phases, and whether
    every style proposed the same (x, z) to the last bit."""
    times: dict[str, list[float]] = {style: [] for style in styles}
    phases: list[dict[str, float]] = []
    same = True
    for t in range(1, repeats + 1):
        proposals = {}
        for style in styles if t % 2 else styles[::-1]:
            algorithm = styled(p, risk, style)
            timer = PhaseTimer(algorithm)
            start = time.perf_counter()
            proposals[style] = algorithm.propose(model, t)
            times[style].append(time.perf_counter() - start)
            if style == "new":
                phases.append({**timer.seconds, "total": times[style][-1]})
        RhoKGAcquisition.prune = True
        first = proposals["new"]
        same &= all(torch.equal(a.x, first.x) and torch.equal(a.z, first.z) for a in proposals.values())
    ph = {k: statistics.median(d.get(k, 0.0) for d in phases) for k in ("setup", "first", "refine", "total")}
    return {"seconds": {style: statistics.median(ts) for style, ts in times.items()}, "phases": ph,
            "same": same}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", nargs="+",
                        default=["hartmann-1-2-discrete", "portfolio-3-2", "robot-push-3-2"])
    parser.add_argument("--risk", default="var", choices=["var", "cvar"])
    parser.add_argument("--sizes", nargs="+", type=int, default=None,
                        help="|D| values (default: n_init + iterations / 2 of each problem)")
    parser.add_argument("--repeats", type=int, default=2, help="proposals per style and size")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    styles = ("old", "range", "new") if args.risk == "cvar" else ("old", "new")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load average {load:.1f}, "
          f"torch {torch.__version__}, 1 thread; {args.risk}")
    print(f"{'problem':22} {'|D|':>4} " + " ".join(f"{s:>8}" for s in styles) + f" {'old/new':>7}"
          + (f" {'range/new':>9}" if "range" in styles else "")
          + f"  new = setup + raw + first + refine | {'rec':>5} {'refit':>5}  same (x, z)")
    for name in args.problems:
        p0 = get_problem(name)
        for n in args.sizes or [p0.n_init + p0.iterations // 2]:
            p, model = state(name, n)
            case = measure_case(p, model, args.risk, styles, args.repeats)
            start = time.perf_counter()
            RhoKGApx(p, seed_root=0, risk=args.risk).recommend(model, model.train_inputs[0])
            rec = time.perf_counter() - start
            start = time.perf_counter()
            fit_gp(model.train_inputs[0], model.train_targets.unsqueeze(-1), model, refit=True,
                   generator=torch.Generator().manual_seed(1))
            refit = time.perf_counter() - start
            sec, ph = case["seconds"], case["phases"]
            raw = ph["total"] - ph["setup"] - ph["first"] - ph["refine"]
            ratios = f" {sec['old'] / sec['new']:7.2f}" + (
                f" {sec['range'] / sec['new']:9.2f}" if "range" in sec else "")
            print(f"{name:22} {n:4d} " + " ".join(f"{sec[s]:7.2f}s" for s in styles) + ratios
                  + f"  {ph['setup']:.2f} + {raw:.2f} + {ph['first']:.2f} + {ph['refine']:.2f} | "
                  f"{rec:5.2f} {refit:5.2f}  {'yes' if case['same'] else 'NO'}", flush=True)


if __name__ == "__main__":
    main()
