"""The study of Nguyen, Dai, Low and Jaillet, "Value-at-Risk Optimization with Gaussian Processes"
(ICML 2021): the paper's claims C1-C8 as typed comparisons, and ours, C9.

The statements quote or paraphrase the paper's Section 5 (Figures 3-5) and Corollary 2; how each is
tested is the engine's (:mod:`analysis.claims`).
"""

from __future__ import annotations

from harness.study import Beats, Cheaper, Claim, Figure, OnPar, SameQueries, Study
from studies.nguyen2021.complexity import COMPLEXITY
from studies.nguyen2021.grids import GRIDS

DISCRETE = ("branin-1-1-discrete", "goldstein-1-1-discrete", "hartmann-1-2-discrete",
            "hartmann-2-1-discrete")
CONTINUOUS = ("branin-1-1-continuous", "goldstein-1-1-continuous", "hartmann-1-2-continuous",
              "hartmann-2-1-continuous")
SIMULATED = ("portfolio-3-2", "robot-push-3-2")
VUCB = ("vucb-unif", "vucb-prob")
RHOKG = "rhokg-apx"

CLAIMS = (
    Claim("C1", "discrete Z: V-UCB Unif is on par with rho-KG^apx on Branin-(1,1) and Goldstein-Price-(1,1)",
          (OnPar(DISCRETE[:2], "vucb-unif", RHOKG),)),
    Claim("C2", "discrete Z: V-UCB Unif beats rho-KG^apx on Hartmann-(1,2) and Hartmann-(2,1)",
          (Beats(DISCRETE[2:], "vucb-unif", RHOKG),)),
    Claim("C3", "discrete Z: V-UCB Prob beats V-UCB Unif on the synthetic problems",
          (Beats(DISCRETE, "vucb-prob", "vucb-unif"),)),
    Claim("C4", "continuous Z: V-UCB Prob beats rho-KG^apx", (Beats(CONTINUOUS, "vucb-prob", RHOKG),)),
    Claim("C5", "portfolio: V-UCB beats rho-KG^apx", (Beats(("portfolio-3-2",), "vucb-prob", RHOKG),)),
    Claim("C6", "robot pushing: V-UCB beats rho-KG^apx, and Unif and Prob are close",
          (*(Beats(("robot-push-3-2",), v, RHOKG) for v in VUCB),
           OnPar(("robot-push-3-2",), "vucb-unif", "vucb-prob"))),
    # problem by problem, Unif then Prob on each: V-UCB below the smallest mass against StableOpt
    Claim("C7", "alpha -> 0: V-UCB selects the same queries as StableOpt",
          tuple(SameQueries((p,), v, "stableopt") for p in DISCRETE for v in VUCB)),
    # every problem rho-KG^apx ran on, each V-UCB variant run there (the paper has no Unif on a
    # continuous Z)
    Claim("C8", "V-UCB's per-iteration cost is lower than rho-KG^apx's", (Cheaper((), VUCB, RHOKG),)),
    Claim("C9", "(ours) V-UCB Prob beats random search",
          (Beats((*DISCRETE, *CONTINUOUS, *SIMULATED), "vucb-prob", "random"),)),
)

FIGURES = (
    Figure("fig3_discrete", "Figure 3: discrete Z (log10 regret, 70% band)", DISCRETE, (2, 2), "var",
           ("vucb-unif", "vucb-prob", RHOKG)),
    Figure("fig4_continuous", "Figure 4: continuous Z (log10 regret, 70% band)", CONTINUOUS, (2, 2), "var",
           ("vucb-prob", RHOKG)),
    Figure("fig5_simulated", "Figure 5: portfolio and robot pushing (log10 regret, 70% band)", SIMULATED,
           (1, 2), "var", ("vucb-unif", "vucb-prob", RHOKG)),
    Figure("fig_alpha0", "Worst-case target (the alpha -> 0 study; log10 worst-case regret, 70% band)",
           DISCRETE, (2, 2), "worst_case", ("stableopt", "vucb-unif", "vucb-prob")),
    # beyond the paper: the same layouts for CVaR (drawn when a folder has CVaR cells), with the cvar
    # grid's methods as the series a panel should show
    Figure("fig_cvar_discrete", "CVaR, discrete Z (log10 CVaR regret, 70% band)", DISCRETE, (2, 2), "cvar",
           ("cvucb", RHOKG, "botorch-risk"), always=False),
    Figure("fig_cvar_continuous", "CVaR, continuous Z (log10 CVaR regret, 70% band)", CONTINUOUS, (2, 2),
           "cvar", ("cvucb", RHOKG, "botorch-risk"), always=False),
    Figure("fig_cvar_simulated", "CVaR, portfolio and robot pushing (log10 CVaR regret, 70% band)",
           SIMULATED, (1, 2), "cvar", always=False),
)

STUDY = Study(
    name="nguyen2021",
    claims=CLAIMS,
    # BoRisk's code as released stands in for rho-KG^apx as a variant of it
    aliases={"rhokg-apx-released": RHOKG},
    # the reduced rho-KG^apx search effort of the smoke, quick and sensitivity grids
    named_options={"reduced effort": {"restarts_per_dim": 2, "raw_per_restart": 10, "maxiter": 100}},
    baseline="random",
    grids=GRIDS,
    figures=FIGURES,
    colours={"vucb-unif": 0, "vucb-prob": 1, "rhokg-apx": 2, "stableopt": 3, "cvucb": 4, "botorch-risk": 5,
             "random": 7},
    description="Value-at-Risk Optimization with Gaussian Processes (Nguyen, Dai, Low, Jaillet; ICML 2021)",
    # the paper's cost formulas (Section 3.2) against the timings of the complexity grid
    complexity=COMPLEXITY,
)
