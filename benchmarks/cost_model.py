"""The cost model against measured cells: ``python benchmarks/cost_model.py [--iterations T]``.

Runs a few cells in this process, one after another (the methods of issue 39 on the suite's
problems, at their full effort unless a case says otherwise), and prints, per cell, the seconds the
cell took (the rows' fit, acquisition, recommendation and evaluation times summed), the seconds
``--dry-run`` estimates for the same spec (:func:`harness.grid.estimate_seconds`, before any
calibration from measured cells) and their ratio. The goal (issue 39 item 10) is every ratio within a
factor of 2; the script exits 1 otherwise. Measured figures depend on the machine and its load: run it
on an idle one and quote its output with the machine.
"""

from __future__ import annotations

import argparse
import sys

from harness.cell import run_cell
from harness.estimates import estimate_seconds
from harness.grid import smoke_options
from harness.schema import TIMINGS
from harness.spec import CellSpec
from problems import get_problem

#: (problem, algorithm, risk, iterations or "reduced"): the new methods on the suite's problems; the
#: cheap ones long enough that a cell's fixed part (its initial fit) does not decide the ratio, the
#: one-shot KGs (5-50 s an iteration) at ``--iterations``.
CASES = [
    ("yacht-5-1", "cvts", "cvar", 30),
    ("hartmann6-5-1", "cvts", "cvar", 30),
    ("branin-williams-2-2", "rahbo", "var", 40),
    ("yacht-5-1", "rahbo", "cvar", 40),
    ("yacht-5-1", "rhokg-oneshot", "cvar", None),
    ("branin-williams-2-2", "rhokg-oneshot", "var", None),
    ("hartmann6-5-1", "botorch-risk", "cvar", None),
    ("branin-williams-2-2", "botorch-risk", "var", None),
    # BoRisk's continuous problems (a uniform Z): f6 with its 80 initial points in 7 dimensions,
    # rho-KG^apx there with BoRisk's 40 samples of W as the suite runs it; the simulated newsvendor
    ("marzat-f6-4-3", "cvts", "cvar", 20),
    ("marzat-f6-4-3", "rhokg-apx", "cvar", 3),
    ("marzat-f6-4-3", "botorch-risk", "cvar", 3),
    ("newsvendor-1-2", "rhokg-apx", "cvar", 5),
    ("newsvendor-1-2", "rhokg-oneshot", "cvar", 3),
    # whole cells at the suite's reduced effort (the method's reduced_options, as the suite runs the
    # one-shot KGs), where per-iteration cost is the model's fixed part
    ("yacht-5-1", "rhokg-oneshot", "cvar", "reduced"),
    ("hartmann6-5-1", "botorch-risk", "cvar", "reduced"),
    ("branin-williams-2-2", "botorch-risk", "cvar", "reduced"),
]
#: options a case runs with, where the suite sets them
OPTIONS = {("marzat-f6-4-3", "rhokg-apx"): {"num_w_samples": 40}}


def measure(spec: CellSpec) -> float:
    """Seconds of the cell's rows (its own work, without process start-up)."""
    rows = run_cell(spec).rows
    return sum(row.get(key) or 0.0 for row in rows for key in TIMINGS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=6,
                        help="iterations of each one-shot KG cell (6)")
    parser.add_argument("--problem", action="append", default=None,
                        help="only the cases of this problem (repeatable; default: all)")
    args = parser.parse_args(argv)
    known = sorted({case[0] for case in CASES})
    for name in args.problem or []:
        if name not in known:
            parser.error(f"no case of problem {name!r}; the cases' problems: {', '.join(known)}")
    print(f"{'problem':22s} {'algorithm':15s} {'risk':5s} {'effort':8s} {'measured s':>11s} "
          f"{'estimate s':>11s} {'ratio':>6s}")
    worst = 1.0
    for problem, algorithm, risk, iterations in CASES:
        if args.problem and problem not in args.problem:
            continue
        options, effort = OPTIONS.get((problem, algorithm)), "full"
        if iterations == "reduced":  # the whole cell (the problem's own budget) at the reduced effort
            options = smoke_options(algorithm, not get_problem(problem).z.is_discrete)
            iterations, effort = None, "reduced"
        else:
            iterations = iterations or args.iterations
        spec = CellSpec.make(problem, algorithm, seed=0, iterations=iterations, risk=risk, options=options)
        measured, estimate = measure(spec), estimate_seconds(spec)
        ratio = measured / estimate
        worst = max(worst, ratio, 1 / ratio)
        print(f"{problem:22s} {algorithm:15s} {risk:5s} {effort:8s} {measured:11.1f} {estimate:11.1f} "
              f"{ratio:6.2f}",
              flush=True)
    print(f"largest factor between measured and estimated: {worst:.2f} (goal: at most 2)")
    return 0 if worst <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
