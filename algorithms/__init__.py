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
from algorithms.registry import ALGORITHMS

__all__ = ["ALGORITHMS", "Algorithm", "Proposal", "Recommendation", "build_algorithm",
           "check_algorithm", "supports", "z_kind"]
