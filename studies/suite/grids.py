"""The suite's grid: each of the field's problems at its source's risk measures, alpha and budget,
against every method that optimizes that measure, 10 seeds (issue 39 item 11).

Per problem (its alpha is the problem's, which translates its source's; ``problems/<module>.py``):

* ``branin-williams-2-2``: VaR and CVaR at 0.3 (BoRisk's 0.7 of a minimized F), 120 iterations (its
  rho-KG^apx runs);
* ``hartmann6-5-1``, ``hartmann6-1-5``: CVaR at 0.1, 100 iterations (the source's code gives none);
* ``yacht-5-1``: CVaR at 0.3, 60 iterations (the defaults of the source's CV-UCB runner);
* ``marzat-f6-4-3``: CVaR at 0.25 (BoRisk's 0.75), 100 iterations, and rho-KG^apx with BoRisk's 40
  samples of W an iteration (``num_w_samples``; the other methods keep their own sets of Z);
* ``newsvendor-1-2``: CVaR at 0.1 (BoRisk's 0.9), 50 iterations (its runner's).

Methods: on VaR cells V-UCB Prob, rho-KG^apx, the one-shot rho-KG, BoTorch's risk-averse BO, RAHBO
and random search; on CVaR cells CV-UCB, CV-TS and the same others (V-UCB Prob optimizes VaR only,
CV-UCB and CV-TS CVaR only). Every method at its defaults, the full effort of its source, but for
the options of :data:`OPTIONS`.
"""

from __future__ import annotations

from harness.grid import Grid, cell_block
from harness.spec import CellSpec

SEEDS = 10
#: problem -> (risk measures, iterations)
PROBLEMS: dict[str, tuple[tuple[str, ...], int]] = {
    "branin-williams-2-2": (("var", "cvar"), 120),
    "hartmann6-5-1": (("cvar",), 100),
    "hartmann6-1-5": (("cvar",), 100),
    "yacht-5-1": (("cvar",), 60),
    "marzat-f6-4-3": (("cvar",), 100),
    "newsvendor-1-2": (("cvar",), 50),
}
#: (problem, method) -> options other than the method's defaults: where a problem's source sets them
OPTIONS: dict[tuple[str, str], dict] = {
    ("marzat-f6-4-3", "rhokg-apx"): {"num_w_samples": 40},  # BoRisk's f6 runs: 40 fresh w
}
#: risk measure -> the methods that optimize it
METHODS: dict[str, tuple[str, ...]] = {
    "var": ("vucb-prob", "rhokg-apx", "rhokg-oneshot", "botorch-risk", "rahbo", "random"),
    "cvar": ("cvucb", "cvts", "rhokg-apx", "rhokg-oneshot", "botorch-risk", "rahbo", "random"),
}


def suite_cells(seeds: range = range(SEEDS)) -> list[CellSpec]:
    """Every problem x its risk measures x the methods of that measure x ``seeds``."""
    return [cell for problem, (risks, iterations) in PROBLEMS.items() for risk in risks
            for method in METHODS[risk]
            for cell in cell_block([problem], [method], seeds, iterations,
                                   options=OPTIONS.get((problem, method)), risk=risk)]


def suite_grid() -> Grid:
    """The suite at full effort, 10 seeds."""
    return Grid("suite", tuple(suite_cells()), "the field's problems (BoRisk, the CV-UCB paper) at their "
                "sources' risk measures and budgets x every method of the measure, 10 seeds")


GRIDS = {"suite": suite_grid}
