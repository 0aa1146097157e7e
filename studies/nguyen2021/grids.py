"""The paper study's grids: every figure of the paper (``paper``, and ``quick`` at 3 seeds and a
reduced search effort), the CVaR and BoTorch tables (``cvar``), the sensitivity of the verdicts
(``sensitivity``) and the timing cells of the complexity study (``complexity``). Their cells are the
cells the harness ran before the grids moved here: same specs, same hashes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from harness.grid import BELOW_MIN_MASS, Grid, cell_block, smoke_options
from harness.spec import CellSpec
from studies.nguyen2021.complexity import complexity_grid

SYNTHETIC_DISCRETE = ("branin-1-1-discrete", "goldstein-1-1-discrete", "hartmann-1-2-discrete",
                      "hartmann-2-1-discrete")
SYNTHETIC_CONTINUOUS = ("branin-1-1-continuous", "goldstein-1-1-continuous",
                        "hartmann-1-2-continuous", "hartmann-2-1-continuous")

#: Iterations of the paper grid, docs/conventions.md section 2 (the paper is silent; authors' runner: 60).
PAPER_ITERATIONS = {**dict.fromkeys(SYNTHETIC_DISCRETE + SYNTHETIC_CONTINUOUS, 60),
                    "portfolio-3-2": 80, "robot-push-3-2": 100}
PAPER_SEEDS = 10

def _figure_cells(seeds: Iterable[int], effort: Callable[[str, bool], dict | None]) -> list[CellSpec]:
    """The cells of every figure of the paper (Figures 3, 4, 5 and the alpha -> 0 study) and random
    search on every problem, for ``seeds``; ``effort(algorithm, continuous)`` gives the options of an
    algorithm on a problem with a continuous Z or not (None: its defaults)."""
    t = PAPER_ITERATIONS

    def panel(problems: Iterable[str], algorithms: Iterable[str], alpha: float | str | None = None,
              ) -> list[CellSpec]:
        return [cell for problem in problems for algorithm in algorithms
                for cell in cell_block([problem], [algorithm], seeds, t, alpha=alpha,
                                  options=effort(algorithm, problem in SYNTHETIC_CONTINUOUS))]

    return (
        # Figure 3: discrete Z
        panel(SYNTHETIC_DISCRETE, ["vucb-unif", "vucb-prob", "rhokg-apx"])
        # Figure 4: continuous Z
        + panel(SYNTHETIC_CONTINUOUS, ["vucb-prob", "rhokg-apx"])
        # Figure 5: simulated problems
        + panel(["portfolio-3-2"], ["vucb-prob", "rhokg-apx"])
        + panel(["robot-push-3-2"], ["vucb-unif", "vucb-prob", "rhokg-apx"])
        # alpha -> 0: every method at the same alpha below the smallest mass, worst-case target
        + panel(SYNTHETIC_DISCRETE, ["stableopt", "vucb-unif", "vucb-prob"], alpha=BELOW_MIN_MASS)
        # the floor the paper does not show: random search on every problem (it costs nothing)
        + panel(SYNTHETIC_DISCRETE + SYNTHETIC_CONTINUOUS + ("portfolio-3-2", "robot-push-3-2"),
                ["random"])
        + panel(SYNTHETIC_DISCRETE, ["random"], alpha=BELOW_MIN_MASS)
    )


def paper_grid() -> Grid:
    """Every figure of the paper (Figures 3, 4, 5 and the alpha -> 0 study), 10 seeds each."""
    cells = _figure_cells(range(PAPER_SEEDS), lambda algorithm, continuous: None)
    return Grid("paper", tuple(cells), "Figures 3, 4, 5 and the alpha -> 0 study, random search on "
                "every problem, 10 seeds")


#: The paper-extra grid's seeds: the paper's ten (whose cells it shares) and twenty more.
EXTRA_SEEDS = 30
#: The series of the paper-extra grid, (problem, algorithms): the sub-claims that the published run
#: (docs/reproduction/paper, 10 seeds) left inconclusive on the paper's statistic (final log10 regret)
#: and that 30 seeds would decide with 80 % power by its power analysis (``seeds_80`` <= 30 in its
#: claims.csv: C3 on Hartmann-(1,2) discrete, 21 seeds; C4 on Goldstein-Price continuous, 20), with
#: random search on both problems (the study's baseline, nearly free). The rest need more than 30
#: seeds on that statistic (C1 on Goldstein-Price discrete, 43; C9's inconclusive ones, 34-55) or
#: cannot be decided by seeds (an effect on the wrong side has no power).
EXTRA_SERIES = (("hartmann-1-2-discrete", ("vucb-unif", "vucb-prob", "random")),
                ("goldstein-1-1-continuous", ("vucb-prob", "rhokg-apx", "random")))


def paper_extra_grid() -> Grid:
    """More seeds where they decide (:data:`EXTRA_SERIES`): seeds 0-29 at the paper grid's settings.
    Its cells of seeds 0-9 are the paper grid's (same spec and hash): copied from the published
    folder, only seeds 10-29 run (about 1.2 CPU-hours)."""
    seeds = range(EXTRA_SEEDS)
    cells = [cell for problem, algorithms in EXTRA_SERIES
             for cell in cell_block([problem], algorithms, seeds, PAPER_ITERATIONS)]
    return Grid("paper-extra", tuple(cells), f"the sub-claims that {EXTRA_SEEDS} seeds would decide: "
                "C3 on Hartmann-(1,2) discrete and C4 on Goldstein-Price continuous, with random search, "
                f"seeds 0-{EXTRA_SEEDS - 1}, the paper's settings")


#: Seeds of the quick grid.
QUICK_SEEDS = 3


def quick_grid() -> Grid:
    """The paper grid's shape (every panel of Figures 3-5 and the alpha -> 0 study, random search
    included) with :data:`QUICK_SEEDS` seeds, the paper's iterations and the smoke grid's reduced
    search effort for rho-KG^apx and for V-UCB's LNSO on a continuous Z (:func:`smoke_options`; the
    estimators themselves are unchanged). About an hour of one core: every figure in about half an
    hour on a 2-core laptop. Its cells with default options are the paper grid's cells (same spec
    and hash), so both grids can share one results folder."""
    cells = _figure_cells(range(QUICK_SEEDS), smoke_options)
    return Grid("quick", tuple(cells), f"the paper grid's panels, {QUICK_SEEDS} seeds, the paper's "
                "iterations, rho-KG^apx and LNSO at the smoke grid's reduced search effort")


#: The CVaR grid's problems: the four discrete synthetic ones and one continuous (Branin).
CVAR_PROBLEMS = (*SYNTHETIC_DISCRETE, "branin-1-1-continuous")
#: botorch-risk's effort in the CVaR grid: half the tutorial's fantasies (8 of 16), 4 restarts and
#: 64 raw samples (of 10 and 128): a median 1.8-2.9 s per proposal in the grid against about 6 s at
#: the tutorial's effort (benchmarks/botorch_risk_proposal.py).
CVAR_BOTORCH_OPTIONS = {"num_fantasies": 8, "num_restarts": 4, "raw_samples": 64}


def cvar_grid() -> Grid:
    """The CVaR and BoTorch tables of docs/how-to/cvar.md: on :data:`CVAR_PROBLEMS`, seeds 0-9, the
    paper's iterations,

    * CVaR (``risk = "cvar"``): cvucb (the paper's beta_t, and the authors' script's constant
      ``beta = "authors"``), rhokg-apx (the smoke grid's search effort, as the quick grid),
      botorch-risk (:data:`CVAR_BOTORCH_OPTIONS`) and random;
    * VaR: botorch-risk (the same effort) beside vucb-prob and random, which are the paper grid's
      cells (same spec and hash: the two grids can share a folder).
    """
    seeds = range(PAPER_SEEDS)
    t = PAPER_ITERATIONS
    rhokg = smoke_options("rhokg-apx", False)
    cvar_series = [("cvucb", None), ("cvucb", {"beta": "authors"}), ("rhokg-apx", rhokg),
                   ("botorch-risk", CVAR_BOTORCH_OPTIONS), ("random", None)]
    var_series = [("vucb-prob", None), ("botorch-risk", CVAR_BOTORCH_OPTIONS), ("random", None)]
    cells = []
    for risk, series in (("cvar", cvar_series), ("var", var_series)):
        for problem in CVAR_PROBLEMS:
            for algorithm, options in series:
                cells += cell_block([problem], [algorithm], seeds, t, options=options, risk=risk)
    return Grid("cvar", tuple(cells), "CVaR (cvucb with the paper's and the authors' beta, rhokg-apx, "
                "botorch-risk, random) and VaR (botorch-risk beside vucb-prob and random) on the discrete "
                f"synthetic problems and Branin continuous, {PAPER_SEEDS} seeds")


#: The sensitivity grid's problems: where the paper's C1 and C2 are decided on a 1-D and a 2-D Z.
SENSITIVITY_PROBLEMS = ("branin-1-1-discrete", "hartmann-1-2-discrete")
#: The reduced rho-KG^apx search effort of the sensitivity grid (the smoke grid's; the estimator,
#: K, M and the two-time-scale rule are unchanged): about 0.5 s an iteration instead of 7-10 s.
SENSITIVITY_RHOKG_OPTIONS = {"restarts_per_dim": 2, "raw_per_restart": 10, "maxiter": 100}


def sensitivity_grid() -> Grid:
    """How the verdicts of C1-C3 move with the settings the paper leaves open or its code changes:
    Branin-(1,1) and Hartmann-(1,2) discrete, seeds 0-9, T = 60:

    * vucb-unif and vucb-prob x beta {paper, authors} x gp {paper, borisk};
    * rhokg-apx and rhokg-apx-released x gp {paper, borisk} at a reduced search effort
      (:data:`SENSITIVITY_RHOKG_OPTIONS`);
    * random x gp {paper, borisk};
    * the decisive full-effort pair: rhokg-apx and rhokg-apx-released at BoRisk's search effort on
      Hartmann-(1,2) with the paper's GP (its rhokg-apx cells are the paper grid's).

    The default-setting cells (gp paper, beta paper, full effort) are the paper grid's cells, same
    spec and hash, so both grids can share one results folder.
    """
    seeds, t = range(PAPER_SEEDS), PAPER_ITERATIONS
    problems = SENSITIVITY_PROBLEMS
    cells: list[CellSpec] = []
    for gp in ("paper", "borisk"):
        for beta in ({}, {"beta": "authors"}):
            cells += cell_block(problems, ["vucb-unif", "vucb-prob"], seeds, t, options=beta, gp=gp)
        cells += cell_block(problems, ["rhokg-apx", "rhokg-apx-released"], seeds, t,
                        options=SENSITIVITY_RHOKG_OPTIONS, gp=gp)
        cells += cell_block(problems, ["random"], seeds, t, gp=gp)
    cells += cell_block(["hartmann-1-2-discrete"], ["rhokg-apx", "rhokg-apx-released"], seeds, t)
    return Grid("sensitivity", tuple(cells), "C1-C3 under beta {paper, authors} x gp {paper, borisk}, "
                "rho-KG^apx as released, random; Branin-(1,1) and Hartmann-(1,2) discrete, 10 seeds")


#: The study's named grids: name -> factory (the complexity grid's timing cells:
#: :mod:`studies.nguyen2021.complexity`).
GRIDS: dict[str, Callable[[], Grid]] = {"quick": quick_grid, "paper": paper_grid,
                                        "paper-extra": paper_extra_grid,
                                        "sensitivity": sensitivity_grid, "cvar": cvar_grid,
                                        "complexity": complexity_grid}
