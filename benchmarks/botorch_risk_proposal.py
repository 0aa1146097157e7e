"""The seconds of one ``botorch-risk`` proposal on one core, by effort and data size.

    python benchmarks/botorch_risk_proposal.py [--problem branin-1-1-discrete] [--sizes 10 60]
        [--risk cvar] [--repeats 1]

For each data size |D|, fits the harness's GP on |D| random (x, z) with the problem's noise-free
values, then times ``BotorchRisk.propose`` at three efforts: the tutorial's (16 fantasies, 10
restarts, 128 raw samples), the ``cvar`` grid's (``studies.nguyen2021.grids.CVAR_BOTORCH_OPTIONS``) and the
smoke grid's. Prints the median over ``--repeats`` and the number of one-shot KG evaluations of
the last proposal (BoTorch's fixed cost per evaluation is what dominates).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
import warnings

import torch
from linear_operator.utils.warnings import NumericalWarning

from algorithms.botorch_risk import BotorchRisk
from algorithms.gp import fit_gp
from problems import get_problem
from problems.float64 import default_float64
from studies.nguyen2021.grids import CVAR_BOTORCH_OPTIONS

EFFORTS = {"tutorial": {}, "cvar grid": CVAR_BOTORCH_OPTIONS,
           "smoke grid": BotorchRisk.reduced_options("discrete")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problem", default="branin-1-1-discrete")
    parser.add_argument("--sizes", nargs="+", type=int, default=[10, 60])
    parser.add_argument("--risk", default="cvar", choices=["var", "cvar"])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore", NumericalWarning)  # BoTorch's jitter notes inside fantasize
    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}, 1 thread")
    print(f"{'effort':12s} {'|D|':>4s} {'seconds':>8s} {'KG evaluations':>15s}")
    with default_float64():
        problem = get_problem(args.problem)
        for size in args.sizes:
            g = torch.Generator().manual_seed(size)
            X = torch.rand(size, problem.d_x + problem.d_z, generator=g, dtype=torch.float64)
            if problem.z.is_discrete:
                X[:, problem.d_x:] = problem.z.points[torch.randint(problem.z.size, (size,), generator=g)]
            model, _ = fit_gp(X, problem.objective(X).unsqueeze(-1), None, refit=True, generator=g)
            for name, options in EFFORTS.items():
                algorithm = BotorchRisk(problem, 0, risk=args.risk, **options)
                calls = 0
                forward = type(algorithm._knowledge_gradient(model, 1)).forward

                def counted(self, X, _forward=forward):  # count the one-shot KG evaluations
                    nonlocal calls
                    calls += 1
                    return _forward(self, X)

                seconds = []
                for repeat in range(args.repeats):
                    calls = 0
                    cls = type(algorithm._knowledge_gradient(model, 1))
                    cls.forward = counted
                    try:
                        start = time.perf_counter()
                        algorithm.propose(model, 1 + repeat)
                        seconds.append(time.perf_counter() - start)
                    finally:
                        cls.forward = forward
                print(f"{name:12s} {size:4d} {statistics.median(seconds):8.2f} {calls:15d}", flush=True)


if __name__ == "__main__":
    main()
