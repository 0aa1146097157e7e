"""rho-KG^apx per-iteration cost on one core: the batched implementation against the
straightforward one (BoTorch ``condition_on_observations`` and a loop over S), same estimator.

    python benchmarks/rhokg_iteration.py [--problems ...] [--sizes 20 40 60] [--repeats 1]

For each problem and number of observations |D| (a random design, noisy observations, a fitted GP):

* ``fast propose``: the measured time of a whole ``propose`` (raw scoring, restarts, L-BFGS-B,
  refinement) at the default (BoRisk paper) settings, the median over ``--repeats`` iterations;
* ``fast / cand`` and ``ref / cand``: the measured time of one acquisition value with the full
  search over S, per candidate, batched (16 candidates) and straightforward;
* ``ratio``: ref / fast per candidate;
* ``ref propose (proj.)``: the straightforward version's time for the same propose, projected from
  the candidate evaluations the fast propose made: each full search over S at ``ref / cand``, each
  two-time-scale reuse (one x' per fantasy) at ``ref / cand`` divided by |S|. It is a projection,
  not a measurement: a whole straightforward propose takes an hour or more.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch
from states import fitted_state  # a sibling module: the benchmarks run as scripts

from algorithms.rhokg import FastRhoKG, RhoKGAcquisition, RhoKGApx
from algorithms.rhokg_reference import reference_value  # the straightforward estimator


def state(name: str, n: int):
    """A fitted GP on ``n`` noisy observations at a random design of problem ``name``."""
    return fitted_state(name, n, "rhokg-benchmark")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", nargs="+",
                        default=["branin-1-1-discrete", "hartmann-1-2-discrete"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[20, 40, 60])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    print(f"machine: {platform.machine()}, torch {torch.__version__}, 1 thread")
    print(f"{'problem':24} {'|D|':>4} {'fast propose':>12} {'evals':>6} {'fast/cand':>10} "
          f"{'ref/cand':>9} {'ratio':>6} {'ref propose (proj.)':>20}")
    for name in args.problems:
        for n in args.sizes:
            p, model = state(name, n)
            algorithm = RhoKGApx(p, seed_root=0)
            counted = {"full": 0, "inner": 0}
            full, inner = FastRhoKG.fantasy_estimates, FastRhoKG.remembered_estimates

            def counting_full(self, candidates, *a, _f=full, counted=counted, **k):
                counted["full" if k.get("inner") is None else "inner"] += candidates.shape[0]
                return _f(self, candidates, *a, **k)

            def counting_inner(self, candidates, *a, _f=inner, counted=counted, **k):
                counted["inner"] += candidates.shape[0]
                return _f(self, candidates, *a, **k)

            FastRhoKG.fantasy_estimates, FastRhoKG.remembered_estimates = counting_full, counting_inner
            times = []
            for t in range(1, args.repeats + 1):
                start = time.perf_counter()
                algorithm.propose(model, t)
                times.append(time.perf_counter() - start)
            FastRhoKG.fantasy_estimates, FastRhoKG.remembered_estimates = full, inner
            evals = (counted["full"] + counted["inner"]) // args.repeats
            full_evals, inner_evals = counted["full"] // args.repeats, counted["inner"] // args.repeats
            fast_propose = statistics.median(times)

            train_X = model.train_inputs[0]
            est = algorithm.estimator(model, train_X, 1)
            _, xi, eps, _ = algorithm._base_samples(1, est.w.points.shape[0])
            candidates = torch.rand(16, p.d_x + p.d_z, generator=torch.Generator().manual_seed(n))
            if p.z.is_discrete:
                candidates[:, p.d_x:] = p.z.points[torch.randint(p.z.size, (16,))]
            acq = RhoKGAcquisition(model, est, xi, eps, 0.0, tts_frequency=1)
            with torch.no_grad():
                start = time.perf_counter()
                acq(candidates.unsqueeze(-2))
                fast_cand = (time.perf_counter() - start) / 16
            start = time.perf_counter()
            for c in candidates[:4]:
                reference_value(model, c, est.w, p.alpha, est.past_x, xi, eps, 0.0)
            ref_cand = (time.perf_counter() - start) / 4
            # a reused (two-time-scale) evaluation visits one x' per fantasy instead of all of S:
            # the straightforward version would pay about 1/|S| of a full one for it
            S = est.past_x.shape[0] + 1
            projected = full_evals * ref_cand + inner_evals * ref_cand / S
            print(f"{name:24} {n:4d} {fast_propose:11.1f}s {evals:6d} {fast_cand:9.4f}s "
                  f"{ref_cand:8.3f}s {ref_cand / fast_cand:6.0f} {projected:19.0f}s",
                  flush=True)


if __name__ == "__main__":
    main()
