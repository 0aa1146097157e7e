"""The committed optima table, recomputed: every grid-searched problem's search run again here.

    python benchmarks/optima_table.py [--problems NAME,...] [--targets var,worst_case,cvar]

For each problem (default: every problem whose entry the grid-and-zoom search makes, discrete and
continuous Z; the long searches of the problems that search their own optimum,
:func:`problems.registry.with_own_search`, are left out) it runs
:func:`problems.optima.search_problem` as ``python -m problems --write-optima`` does, and prints one
line per target: the fresh value, the stored one, their difference and the search's seconds. Exits 1
when a value differs from the table by more than the tolerance (1e-9 for a continuous Z, 1e-7 for a
discrete one, as the tests require).

The slow tests run these searches for the discrete problems but Hartmann-6 (1,5) and Hartmann-(2,1)
(40-45 s each) and for Branin-(1,1) with a continuous Z; those two and the continuous
Goldstein-Price and Hartmann searches (up to minutes each: every VaR is a quadrature) are here, so
that CI stays within its 30-minute budget and the whole table can still be checked in one command
(about 14 minutes on one core).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere: the packages of this checkout
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from problems import PROBLEMS, build_problem  # noqa: E402
from problems.optima import load_table, search_problem  # noqa: E402
from problems.registry import with_own_search  # noqa: E402

TARGETS = ("var", "worst_case", "cvar")


def searched_problems() -> list[str]:
    """Every registered problem whose table entry the grid-and-zoom search makes."""
    return [name for name in PROBLEMS if name not in with_own_search()]


def tolerance(problem) -> float:
    """How closely a fresh search must reproduce the table (the tests' tolerances)."""
    return 1e-7 if problem.z.is_discrete else 1e-9


def check(name: str, targets: tuple[str, ...]) -> bool:
    """Search ``name`` again, print a line per target, and say whether all agree with the table."""
    problem = build_problem(name, with_optimum=False)
    start = time.perf_counter()
    fresh = search_problem(problem, targets=targets)
    seconds = time.perf_counter() - start
    stored = load_table()[name]
    agree = True
    for target in targets:
        difference = abs(fresh[target]["value"] - stored[target]["value"])
        ok = difference <= tolerance(problem)
        agree &= ok
        print(f"{name:28s} {target:10s} fresh {fresh[target]['value']:+.12f}  stored "
              f"{stored[target]['value']:+.12f}  |diff| {difference:.1e}  {'ok' if ok else 'DIFFERS'}"
              f"  ({seconds:.0f} s for the problem)", flush=True)
    return agree


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default=None,
                        help="comma-separated problem names (default: every grid-searched problem)")
    parser.add_argument("--targets", default=",".join(TARGETS), help="comma-separated targets")
    args = parser.parse_args(argv)
    names = args.problems.split(",") if args.problems else searched_problems()
    unknown = [n for n in names if n not in PROBLEMS or n in with_own_search()]
    if unknown:
        parser.error(f"not grid-searched problems: {', '.join(unknown)}; valid: "
                     f"{', '.join(searched_problems())}")
    targets = tuple(args.targets.split(","))
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
    results = [check(name, targets) for name in names]
    print(f"{sum(results)} of {len(results)} problems reproduce the table")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
