"""The suite's grid: each of the field's problems at its source's risk measures, alpha and budget,
against every method that optimizes that measure, 10 seeds (issue 39 item 11).

Per problem (its alpha is the problem's, which translates its source's; ``problems/<module>.py``):

* ``branin-williams-2-2``: VaR and CVaR at 0.3 (BoRisk's 0.7 of a minimized F), 120 iterations (its
  rho-KG^apx runs);
* ``hartmann6-5-1``, ``hartmann6-1-5``: CVaR at 0.1, 100 iterations (the source's code gives none);
* ``yacht-5-1``: CVaR at 0.3, 60 iterations (the defaults of the source's CV-UCB runner);
* ``marzat-f6-4-3``: CVaR at 0.25 (BoRisk's 0.75), 100 iterations, and rho-KG^apx with BoRisk's 40
  samples of W an iteration (``num_w_samples``; the other methods keep their own sets of Z);
* ``newsvendor-1-2``: CVaR at 0.1 (BoRisk's 0.9), 50 iterations after BoRisk's initial design of
  2 d + 2 = 8 points (its runner's; the problem's own design has 6: :data:`N_INIT`);
* ``portfolio-3-2``: CVaR at 0.2 (BoRisk's 0.8 of a minimized -f), 80 iterations (BoRisk's
  ``runner_files/port_cvar-runner-*.py``, as the ICML 2021 paper's VaR runs): BoRisk's
  CVXPortfolio surrogate;
* ``portfolio-cvucb-3-2``: CVaR at 0.1, 60 iterations from 2 initial points (the CV-UCB paper's
  runner's defaults): the CV-UCB paper's own surrogate of the same back-tests (an SE-kernel GP,
  refitted) on its weighted 5 x 5 grid of Z.

Methods: on VaR cells V-UCB Prob, rho-KG^apx, the one-shot rho-KG, BoTorch's risk-averse BO, RAHBO
and random search; on CVaR cells CV-UCB, CV-TS and the same others (V-UCB Prob optimizes VaR only,
CV-UCB and CV-TS CVaR only). Every method at the full effort of its source (its defaults), with the
options of :data:`OPTIONS`: where a problem's source sets one, CV-UCB and CV-TS with their authors'
constant beta (their scripts' ``--beta 3.0``, a width beta^(1/2) = 3: ``beta = "authors"``), and the
one-shot KGs' fused engine with the exact gradient (:data:`ONE_SHOT_OPTIONS`).
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
    "portfolio-3-2": (("cvar",), 80),
    "portfolio-cvucb-3-2": (("cvar",), 60),
}
#: The one-shot KGs' options on every problem: BoTorch's computation by the fused engine
#: (:mod:`algorithms.oneshot_fused`, the same values and gradients, 2-10 times faster), optimized with
#: the value's exact gradient (BoTorch 0.18.1 with GPyTorch 1.15.2 drops part of it in the query;
#: ``gradient = "released"`` keeps BoTorch's). The tutorial's effort is their defaults.
ONE_SHOT_OPTIONS = {"engine": "fused", "gradient": "exact"}
#: CV-UCB's and CV-TS's options on every problem: their authors' constant beta (the source's run
#: scripts pass ``--beta 3.0``, which multiplies sigma), not V-UCB's schedule, their default.
AUTHORS_BETA = {"beta": "authors"}
#: (problem, method) -> options other than the method's defaults: where a problem's source sets them,
#: CV-UCB's and CV-TS's beta, and the one-shot KGs' engine and gradient everywhere
OPTIONS: dict[tuple[str, str], dict] = {
    ("marzat-f6-4-3", "rhokg-apx"): {"num_w_samples": 40},  # BoRisk's f6 runs: 40 fresh w
    **{(problem, method): dict(ONE_SHOT_OPTIONS) for problem in PROBLEMS
       for method in ("rhokg-oneshot", "botorch-risk")},
    **{(problem, method): dict(AUTHORS_BETA) for problem in PROBLEMS for method in ("cvucb", "cvts")},
}
#: problem -> its initial design's size where the source's differs from the problem's own:
#: BoRisk's runners start from 2 d + 2 points (d = d_x + d_z).
N_INIT: dict[str, int] = {"newsvendor-1-2": 8}
#: risk measure -> the methods that optimize it
METHODS: dict[str, tuple[str, ...]] = {
    "var": ("vucb-prob", "rhokg-apx", "rhokg-oneshot", "botorch-risk", "rahbo", "random"),
    "cvar": ("cvucb", "cvts", "rhokg-apx", "rhokg-oneshot", "botorch-risk", "rahbo", "random"),
}


def options(problem: str, method: str) -> dict | None:
    """The options of ``method`` on ``problem`` in the suite (:data:`OPTIONS`), None for its defaults."""
    return dict(OPTIONS[(problem, method)]) if (problem, method) in OPTIONS else None


def suite_cells(seeds: range = range(SEEDS)) -> list[CellSpec]:
    """Every problem x its risk measures x the methods of that measure x ``seeds``."""
    return [cell for problem, (risks, iterations) in PROBLEMS.items() for risk in risks
            for method in METHODS[risk]
            for cell in cell_block([problem], [method], seeds, iterations,
                                   options=options(problem, method), risk=risk,
                                   n_init=N_INIT.get(problem))]


def suite_grid() -> Grid:
    """The suite at full effort, 10 seeds."""
    return Grid("suite", tuple(suite_cells()), "the field's problems (BoRisk, the CV-UCB paper) at their "
                "sources' risk measures and budgets x every method of the measure at its source's full "
                "effort, 10 seeds")


GRIDS = {"suite": suite_grid}
