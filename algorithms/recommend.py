"""The shared recommendation rule: among the observed x, the one whose model mean has the best exact
risk measure over Z, as the paper's experiments recommend (Nguyen et al., 2021, Section 5).

Every algorithm recommends by it (:meth:`algorithms.base.Algorithm.recommend`, on the values of
:func:`risk_of_mean`) unless it declares its own rule: rho-KG^apx (BoRisk's estimator over the past
x), StableOpt (the worst case of the mean) and ``botorch-risk`` with ``recommendation = "tutorial"``.
"""

from __future__ import annotations

import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from algorithms.gp import PosteriorMarginals
from problems import DiscreteZ, Problem
from problems.measures import risk_measure

#: Equal-mass grid per axis on which VaR_alpha(mu(x, Z)) is taken for the recommendation under a
#: continuous Z (quantile level within 1 / n per axis), by d_z.
RECOMMEND_GRID = {1: 512, 2: 32}


def risk_of_mean(problem: Problem, model: SingleTaskGP, xs: Tensor, risk: str = "var") -> Tensor:
    """rho(mu_{t-1}(x, Z)) at each of ``xs`` (``k x d_x``) -> ``k``, for the risk measure ``risk`` (a
    name of :data:`problems.measures.RISK_MEASURES`): VaR_alpha, the paper's experiments' rule;
    CVaR_alpha, CV-UCB's (Nguyen et al., 2021b); the mean. The shared rule recommends the argmax
    (:meth:`algorithms.base.Algorithm.recommend`).

    A continuous Z is replaced by its equal-mass grid (:data:`RECOMMEND_GRID`).
    """
    if isinstance(problem.z, DiscreteZ):
        z = problem.z
    else:
        z = problem.z.equal_mass_grid(RECOMMEND_GRID.get(problem.d_z, 10))  # 10^d_z beyond d_z = 2
    with torch.no_grad():
        mean = PosteriorMarginals(model).grid_mean(xs, z.points)
        return risk_measure(risk).of_distribution(mean, z.masses, problem.alpha)
