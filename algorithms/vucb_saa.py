"""``vucb-prob-saa``: V-UCB Prob for a continuous Z by sample-average approximation (beyond the paper).

Each iteration fixes N quasi-random draws of Z (scrambled Sobol points, seeded by the iteration's
shared x-search seed, pushed through the quantile function of Z: the same draws for every x) and
treats them as a discrete Z with masses 1/N. Then everything is as for a discrete Z
(:class:`algorithms.vucb.VUCB`): the exact weighted quantile of u over the draws, maximized by
quasi-random scoring plus L-BFGS-B through the selected order statistic, the lacing values among
the draws, and among them the one of largest density p(z). Fresh draws each iteration keep the
sampling error from steering every iteration the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from algorithms.base import Algorithm, Proposal, positive_int, registered
from algorithms.cost import ProblemSize
from algorithms.gp import PosteriorMarginals
from algorithms.options import Option
from algorithms.vucb_common import (
    VUCB_BETA,
    VUCB_GP,
    VUCB_PAPER,
    beta_option,
    beta_schedule,
    check_search_options,
    discrete_step,
    pick_lacing_value,
    search_options,
    search_seconds,
    var_upper_function,
)
from problems import ContinuousZ, Problem
from problems.seeding import derive_seed


@registered
class VUCBProbSAA(Algorithm):
    """V-UCB Prob on N quasi-random draws of a continuous Z per iteration; its options
    (:attr:`options`) are ``vucb-prob``'s on a discrete Z and N, ``n_samples``."""

    name = "vucb-prob-saa"
    source = (f"This project's, beyond the paper: V-UCB Prob of {VUCB_PAPER}, Algorithm 1, on draws of a "
              "continuous Z")
    deviations = (
        "The paper's continuous-Z steps (LNSO, pinball-loss VaR estimates, the lacing-value search) are "
        "replaced by N = 256 scrambled Sobol draws of Z an iteration, of mass 1/N each, handled as a "
        "discrete Z (the lacing value: the drawn one of largest density).",
        VUCB_GP, VUCB_BETA,
    )
    z_kinds = frozenset({"continuous"})
    z_sample_options = ("n_samples",)

    @classmethod
    def proposal_cost(cls, z_kind: str) -> tuple[float, float, float, float]:
        """See :meth:`Algorithm.proposal_cost`: V-UCB's exact search on the sampled support."""
        return (0.05, 0.12, 0.5, 1.0)

    options: ClassVar[tuple[Option, ...]] = (
        beta_option(),
        Option("n_samples", int, 256, "N, the draws of Z of an iteration (scrambled Sobol through Z's "
               "quantile function, the same for every x), each of mass 1/N.", low=1),
        *search_options())

    @classmethod
    def iteration_seconds(cls, size: ProblemSize, options: Mapping[str, object]) -> float:
        """See :mod:`algorithms.cost`: V-UCB's x search over N draws, 0.15 s at N = 256 (0.13-0.23 s
        an iteration measured in all), in proportion to N."""
        return search_seconds(options, size.d_x, 0.15) * options["n_samples"] / 256

    def __init__(self, problem: Problem, seed_root: int, beta: str | float = "paper",
                 n_samples: int = 256, n_raw: int | None = None, n_restarts: int = 5,
                 maxiter: int = 200) -> None:
        super().__init__(problem, seed_root)
        if not isinstance(problem.z, ContinuousZ):
            raise ValueError(f"{self.name} needs a continuous Z; {problem.name} has a discrete one")
        positive_int(self.name, "n_samples", n_samples)
        check_search_options(self.name, n_raw, n_restarts, maxiter)
        self.z = problem.z
        self.beta = beta_schedule(beta)
        self.n_samples = n_samples
        self.n_raw = n_raw or 256 * problem.d_x
        self.n_restarts = n_restarts
        self.maxiter = maxiter

    def samples(self, t: int) -> Tensor:
        """``N x d_z`` draws of Z of iteration ``t`` (scrambled Sobol through the quantile function)."""
        return self.z.qmc_points(self.n_samples, derive_seed(self.search_seed(t), "saa"))

    def propose(self, model: SingleTaskGP, t: int) -> Proposal:
        beta = self.beta(t)
        points = self.samples(t)
        masses = torch.full((points.shape[0],), 1.0 / points.shape[0], dtype=torch.float64)
        x_t, mask, var_l, var_u = discrete_step(model, points, masses, self.problem.alpha, beta,
                                                self.problem.d_x, self.search_seed(t), self.n_raw,
                                                self.n_restarts, self.maxiter, t)
        # V-UCB Prob's rule with the density p(z) of each draw in place of a mass
        index = pick_lacing_value(mask, self.z.density(points), self.choice_generator(t))
        info = {"beta": beta, "lv_count": int(mask.sum()), "var_upper": var_u, "var_lower": var_l}
        return Proposal(x_t, points[index].clone(), info, lower_bound=var_l)

    def acquisition_function(self, model: SingleTaskGP, t: int) -> Callable[[Tensor], Tensor]:
        """VaR_alpha(u_{t-1}(x, Z)) over the iteration's N draws."""
        points = self.samples(t)
        masses = torch.full((points.shape[0],), 1.0 / points.shape[0], dtype=torch.float64)
        return var_upper_function(PosteriorMarginals(model), points, masses, self.problem.alpha,
                                  self.beta(t))

