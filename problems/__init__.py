"""Benchmark problems of risk-averse optimization: a vectorized f(x, z), the distribution of Z
(discrete or continuous), the risk measures of f under Z (VaR, CVaR, worst case, mean:
:mod:`problems.measures`) and certified optima (:mod:`problems.optima`); the V-UCB paper's
problems and the field's (BoRisk's, the CV-UCB paper's), registered by name in :data:`PROBLEMS`,
each with its source and deviations."""

from problems.base import Optimum, Problem
from problems.distributions import ContinuousZ, DiscreteZ, TruncatedNormalZ, UniformZ, gaussian_grid
from problems.plugins import PluginError
from problems.registry import PROBLEMS, build_problem, check_problem, get_problem, z_kind_of
from problems.risk import weighted_cvar, weighted_var

__all__ = [
    "PROBLEMS",
    "ContinuousZ",
    "DiscreteZ",
    "Optimum",
    "PluginError",
    "Problem",
    "TruncatedNormalZ",
    "UniformZ",
    "build_problem",
    "check_problem",
    "gaussian_grid",
    "get_problem",
    "weighted_cvar",
    "weighted_var",
    "z_kind_of",
]
