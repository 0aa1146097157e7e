"""Algorithms for VaR optimization: V-UCB, StableOpt, rho-KG^apx, random search, on one shared GP model."""

from algorithms.acquisition import VUCBAcquisition
from algorithms.base import (
    Algorithm,
    Proposal,
    Recommendation,
    build_algorithm,
    check_algorithm,
    supports,
    z_kind,
)
from algorithms.optimizer import Best, VaROptimizer
from algorithms.registry import ALGORITHMS, OptionDoc, algorithm_factory, describe_options

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "Best",
    "OptionDoc",
    "Proposal",
    "Recommendation",
    "VUCBAcquisition",
    "VaROptimizer",
    "algorithm_factory",
    "build_algorithm",
    "check_algorithm",
    "describe_options",
    "supports",
    "z_kind",
]
