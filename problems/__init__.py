"""Benchmark problems for VaR optimization: values with a vectorized f(x, z) and certified optima."""

from problems.base import Optimum, Problem
from problems.distributions import DiscreteZ, TruncatedNormalZ, gaussian_grid
from problems.plugins import PluginError
from problems.registry import PROBLEMS, build_problem, check_problem, get_problem, z_kind_of
from problems.risk import weighted_cvar, weighted_var

__all__ = [
    "PROBLEMS",
    "DiscreteZ",
    "Optimum",
    "PluginError",
    "Problem",
    "TruncatedNormalZ",
    "build_problem",
    "check_problem",
    "gaussian_grid",
    "get_problem",
    "weighted_cvar",
    "weighted_var",
    "z_kind_of",
]
