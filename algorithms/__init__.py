"""Algorithms for VaR optimization: V-UCB, StableOpt, rho-KG^apx, random search, on one shared GP model."""

from algorithms.base import (
    Algorithm,
    Proposal,
    Recommendation,
    build_algorithm,
    check_algorithm,
    supports,
    z_kind,
)
from algorithms.registry import ALGORITHMS, algorithm_factory, is_algorithm

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "Proposal",
    "Recommendation",
    "algorithm_factory",
    "build_algorithm",
    "check_algorithm",
    "is_algorithm",
    "supports",
    "z_kind",
]
