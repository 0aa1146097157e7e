"""Algorithms for VaR optimization: V-UCB, StableOpt, random search, on one shared GP model."""

from algorithms.base import Algorithm, Proposal, Recommendation
from algorithms.registry import ALGORITHMS

__all__ = ["ALGORITHMS", "Algorithm", "Proposal", "Recommendation"]
