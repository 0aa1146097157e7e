"""The methods of risk-averse Bayesian optimization, on one shared GP model (:mod:`algorithms.gp`),
registered by name in :data:`ALGORITHMS` (:mod:`algorithms.registry`): V-UCB Unif and Prob on a
discrete or continuous Z (LNSO) and its sample-average variant, StableOpt (its alpha -> 0 limit),
CV-UCB and CV-TS (CVaR), BoRisk's rho-KG^apx (as published and as released), BoTorch's one-shot
rho-KG and risk-averse KG (with a fused engine), RAHBO, and random search; each on the risk measures
it declares (VaR, CVaR, the mean: :mod:`problems.measures`), with its source and deviations."""

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
