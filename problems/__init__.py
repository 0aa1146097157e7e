"""Benchmark problems for VaR optimization: values with a vectorized f(x, z) and certified optima."""

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
