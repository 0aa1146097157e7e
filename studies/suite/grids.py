"""The suite's grid: each of the field's problems at its source's risk measures, alpha and budget,
against every method that optimizes that measure, 10 seeds (issue 39 item 11).

Per problem (its alpha is the problem's, which translates its source's; ``problems/<module>.py``):

* ``branin-williams-2-2``: VaR and CVaR at 0.3 (BoRisk's 0.7 of a minimized F), 120 iterations (its
  rho-KG^apx runs);
* ``hartmann6-5-1``, ``hartmann6-1-5``: CVaR at 0.1, 100 iterations (the source's code gives none);
* ``yacht-5-1``: CVaR at 0.3, 60 iterations (the defaults of the source's CV-UCB runner);
* ``marzat-f6-4-3``: CVaR at 0.25 (BoRisk's 0.75), 100 iterations, and rho-KG^apx with BoRisk's 40
  samples of W an iteration (``num_w_samples``; the other methods keep their own sets of Z);
* ``newsvendor-1-2``: CVaR at 0.1 (BoRisk's 0.9), 50 iterations (its runner's);
* ``portfolio-3-2``: CVaR at 0.2 (BoRisk's 0.8 of a minimized -f), 80 iterations (BoRisk's
  ``runner_files/port_cvar-runner-*.py``, as the ICML 2021 paper's VaR runs): BoRisk's
  CVXPortfolio surrogate, which both sources optimize.

Methods: on VaR cells V-UCB Prob, rho-KG^apx, the one-shot rho-KG, BoTorch's risk-averse BO, RAHBO
and random search; on CVaR cells CV-UCB, CV-TS and the same others (V-UCB Prob optimizes VaR only,
CV-UCB and CV-TS CVaR only). Every method at its defaults, the full effort of its source, but for
the options of :data:`OPTIONS` and the reduced effort of the methods of :data:`REDUCED`, whose
effect the grid ``suite-full-effort`` measures.
"""

from __future__ import annotations

from harness.grid import Grid, cell_block, smoke_options
from harness.spec import CellSpec
from problems import get_problem

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
}
#: (problem, method) -> options other than the method's defaults: where a problem's source sets them
OPTIONS: dict[tuple[str, str], dict] = {
    ("marzat-f6-4-3", "rhokg-apx"): {"num_w_samples": 40},  # BoRisk's f6 runs: 40 fresh w
}
#: The methods the suite runs at their declared reduced effort (``reduced_options``, the smoke grid's):
#: at full effort the suite would take about 260 CPU-hours, nine tenths of them the two one-shot KGs
#: (5-340 s an iteration, growing with n), against about 18 at these efforts (``python -m harness.run
#: --grid suite --dry-run``). What the reduction changes is measured on :data:`SAMPLE`.
REDUCED = ("rhokg-apx", "rhokg-oneshot", "botorch-risk")
#: The sample of cells also run at full effort (grid ``suite-full-effort``): the cheapest problems,
#: where the full effort costs minutes a cell, 6 seeds (the fewest on which a two-sided signed-rank
#: test can find a difference at 0.05: its smallest p is 2/2^6)
SAMPLE: dict[str, tuple[str, ...]] = {"yacht-5-1": REDUCED, "hartmann6-5-1": ("rhokg-apx",)}
SAMPLE_SEEDS = range(6)
#: risk measure -> the methods that optimize it
METHODS: dict[str, tuple[str, ...]] = {
    "var": ("vucb-prob", "rhokg-apx", "rhokg-oneshot", "botorch-risk", "rahbo", "random"),
    "cvar": ("cvucb", "cvts", "rhokg-apx", "rhokg-oneshot", "botorch-risk", "rahbo", "random"),
}


def options(problem: str, method: str, full: bool = False) -> dict | None:
    """The options of ``method`` on ``problem`` in the suite: the problem's own (:data:`OPTIONS`),
    with the method's reduced effort for the problem's kind of Z unless ``full``."""
    chosen = dict(OPTIONS.get((problem, method), {}))
    if method in REDUCED and not full:
        chosen.update(smoke_options(method, not get_problem(problem).z.is_discrete) or {})
    return chosen or None


def suite_cells(seeds: range = range(SEEDS)) -> list[CellSpec]:
    """Every problem x its risk measures x the methods of that measure x ``seeds``."""
    return [cell for problem, (risks, iterations) in PROBLEMS.items() for risk in risks
            for method in METHODS[risk]
            for cell in cell_block([problem], [method], seeds, iterations,
                                   options=options(problem, method), risk=risk)]


def sample_grid() -> Grid:
    """The suite's sample at full effort: what the reduced effort changes (:data:`SAMPLE`)."""
    cells = [cell for problem, methods in SAMPLE.items() for risk in PROBLEMS[problem][0]
             for method in methods if method in METHODS[risk]
             for cell in cell_block([problem], [method], SAMPLE_SEEDS, PROBLEMS[problem][1],
                                    options=options(problem, method, full=True), risk=risk)]
    return Grid("suite-full-effort", tuple(cells), "the suite's reduced-effort methods at full effort on "
                "its cheapest problems, seeds 0-5: the sample the reduction is measured on")


def suite_grid() -> Grid:
    """The suite at full effort, 10 seeds."""
    return Grid("suite", tuple(suite_cells()), "the field's problems (BoRisk, the CV-UCB paper) at their "
                "sources' risk measures and budgets x every method of the measure, 10 seeds; rho-KG^apx and "
                "the one-shot KGs at their reduced effort")


GRIDS = {"suite": suite_grid, "suite-full-effort": sample_grid}
