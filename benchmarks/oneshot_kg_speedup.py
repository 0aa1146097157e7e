"""The one-shot knowledge gradients (``rhokg-oneshot``, ``botorch-risk``) at full effort: BoTorch's
fantasy models (``engine = "botorch"``) against the closed form (``engine = "fused"``), side by
side in one run, on the same work.

    python benchmarks/oneshot_kg_speedup.py [--cases PROBLEM/METHOD/RISK/N ...] [--gradient released]

For each case (by default each suite problem's one-shot methods at |D| = the initial design plus
half the suite's iterations, the middle of a run; a random design of |D| noisy observations and the
harness's GP fitted to it) it runs one whole fused ``propose`` and records every call it makes of
the one-shot KG and of its inner value function (the raw samples' scores, the value function's
starts and L-BFGS-B steps, the one-shot L-BFGS-B steps with their gradients, the support scan).
Then it replays that same sequence of calls on both engines, alternating, and prints

* ``calls``: the KG and value-function calls of the proposal (with a gradient / without);
* ``replay``: the seconds of the sequence on each engine and their ratio: the same computation,
  input for input, so the ratio is the speed-up of a proposal whose L-BFGS-B steps fall the same way;
* ``propose``: the seconds of whole proposals, each engine once, and ``|dx|``, the largest difference
  of their (x, z): the engines agree to rounding, and L-BFGS-B carries a last-bit difference where
  the objective has kinks (VaR above all), so these are two searches, not one.

Torch runs on one thread, as in a grid. Both engines run in the same process, alternating, so the
ratio holds whatever else the machine does; the seconds do not.
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import time
import warnings
from collections.abc import Iterator

import torch
from botorch.acquisition.knowledge_gradient import _get_value_function
from linear_operator.utils.warnings import NumericalWarning
from states import fitted_state  # a sibling module: the benchmarks run as scripts

from algorithms.oneshot_fused import FusedOneShotKG, FusedValueFunction
from algorithms.registry import algorithm_factory
from problems import get_problem
from problems.float64 import default_float64
from studies.suite.grids import METHODS, PROBLEMS

ONE_SHOT = ("rhokg-oneshot", "botorch-risk")
Call = tuple[str, torch.Tensor, bool]  # (which function, its input, with a gradient)


def suite_cases() -> list[tuple[str, str, str, int]]:
    """(problem, method, risk, |D|): the suite's one-shot cells at the middle of their runs."""
    cases = []
    for name, (risks, iterations) in PROBLEMS.items():
        n = get_problem(name).n_init + iterations // 2
        cases += [(name, method, risk, n) for risk in risks for method in ONE_SHOT if method in METHODS[risk]]
    return cases


def state(name: str, n: int):
    """The problem and a fitted GP on ``n`` noisy observations at a random design."""
    return fitted_state(name, n, "oneshot-benchmark")


@contextlib.contextmanager
def recording(calls: list[Call]) -> Iterator[None]:
    """Record every call of the fused KG and value function (their inputs as given)."""
    originals = {cls: cls.forward for cls in (FusedOneShotKG, FusedValueFunction)}

    def wrap(cls, name):
        def forward(self, X):
            calls.append((name, X.detach().clone(), X.requires_grad))
            return originals[cls](self, X)
        return forward

    FusedOneShotKG.forward = wrap(FusedOneShotKG, "kg")
    FusedValueFunction.forward = wrap(FusedValueFunction, "value")
    try:
        yield
    finally:
        for cls, forward in originals.items():
            cls.forward = forward


def replay(functions: dict, calls: list[Call]) -> float:
    """Seconds to make ``calls`` on ``functions`` (``{"kg": ..., "value": ...}``), gradients included."""
    start = time.perf_counter()
    for name, X, with_gradient in calls:
        if with_gradient:
            leaf = X.clone().requires_grad_(True)
            torch.autograd.grad(functions[name](leaf).sum(), leaf)
        else:
            with torch.no_grad():
                functions[name](X)
    return time.perf_counter() - start


def run_case(name: str, method: str, risk: str, n: int, gradient: str) -> None:
    problem, model = state(name, n)
    algorithms = {engine: algorithm_factory(method)(problem, 0, risk=risk, engine=engine, gradient=gradient)
                  for engine in ("botorch", "fused")}
    calls: list[Call] = []
    seconds, proposals = {}, {}
    for engine, algorithm in algorithms.items():
        start = time.perf_counter()
        with recording(calls) if engine == "fused" else contextlib.nullcontext(), algorithm._gradient_mode():
            proposal = algorithm.propose(model, 1)
        seconds[engine] = time.perf_counter() - start
        proposals[engine] = torch.cat([proposal.x, proposal.z])
    reference = algorithms["botorch"].acquisition_function(model, 1)
    fused = algorithms["fused"].acquisition_function(model, 1)
    functions = {
        "botorch": {"kg": reference, "value": _get_value_function(
            model=reference.model, objective=reference.objective, sampler=reference.inner_sampler,
            project=reference.project)},
        "fused": {"kg": fused, "value": fused.value_function()},
    }
    replayed = {}
    with algorithms["botorch"]._gradient_mode():
        for engine in ("botorch", "fused"):
            replayed[engine] = replay(functions[engine], calls)
    with_gradient = sum(c[2] for c in calls)
    dx = float((proposals["botorch"] - proposals["fused"]).abs().max())
    ratio = replayed["botorch"] / replayed["fused"]
    print(f"{name:20s} {method:14s} {risk:4s} {n:4d} | {with_gradient:5d} {len(calls) - with_gradient:5d} | "
          f"{replayed['botorch']:8.1f} {replayed['fused']:7.1f} {ratio:6.1f} | "
          f"{seconds['botorch']:8.1f} {seconds['fused']:7.1f} | {dx:.1e}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="*", default=None, metavar="PROBLEM/METHOD/RISK/N",
                        help="cases to run (default: the suite's one-shot cells at mid-run)")
    parser.add_argument("--gradient", default="released", choices=["released", "exact"])
    args = parser.parse_args()
    cases = suite_cases() if not args.cases else [
        (p, m, r, int(n)) for p, m, r, n in (c.split("/") for c in args.cases)]
    torch.set_num_threads(1)
    warnings.simplefilter("ignore", NumericalWarning)  # jitter notes inside BoTorch's fantasies
    warnings.simplefilter("ignore", RuntimeWarning)  # L-BFGS-B's retries
    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}, 1 thread; "
          f"gradient {args.gradient}")
    print(f"{'problem':20s} {'method':14s} {'risk':4s} {'|D|':>4s} | calls: grad  none | replay (s): botorch "
          f"fused ratio | propose (s): botorch fused | |dx|")
    with default_float64():
        for case in cases:
            run_case(*case, args.gradient)


if __name__ == "__main__":
    main()
