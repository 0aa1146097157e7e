"""StableOpt (Bogunovic et al., 2018), the alpha -> 0 limit of V-UCB (docs/conventions.md section 6).

x_t = argmax_x min_{z in Dz} u_{t-1}(x, z);  z_t = argmin_{z in Dz} l_{t-1}(x_t, z), exact ties broken
uniformly at random.
Recommendation: argmax over observed x of min_z mu_{t-1}(x, z).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import ClassVar

import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from algorithms.base import Algorithm, Proposal, Recommendation, registered
from algorithms.cost import ProblemSize
from algorithms.gp import CELL_GP, PosteriorMarginals
from algorithms.options import Option
from algorithms.search import maximize_x
from algorithms.vucb_common import (
    VUCB_PAPER,
    beta_option,
    beta_schedule,
    check_search_options,
    require_discrete,
    search_options,
    search_seconds,
)
from problems import Problem
from problems.measures import WORST_CASE


@registered
class StableOpt(Algorithm):
    """StableOpt on a discrete Z. Its options (:attr:`options`) are V-UCB's
    (:class:`algorithms.vucb.VUCB`) on a discrete Z, with the same defaults, so that the two
    searches coincide."""

    name = "stableopt"
    source = ('Bogunovic, Scarlett, Jegelka & Cevher, "Adversarially Robust Optimization with Gaussian '
              f'Processes", NeurIPS 2018, as the alpha -> 0 limit of V-UCB in {VUCB_PAPER} (Corollary 2); no '
              "code read (the re-implementation `fraunhofer-iais/Robust-Entropy-Search` is AGPL-3.0)")
    deviations = (
        "Run in the V-UCB paper's form, on a discrete Z only: x_t = argmax_x min_z u(x, z) and z_t = "
        "argmin_z l(x_t, z) over the support of Z.",
        "beta_t and the x search are V-UCB's (2 log(t^2 pi^2 / 0.6), scrambled Sobol scoring and L-BFGS-B) "
        "and exact ties of z_t are broken from V-UCB Unif's random stream, so that V-UCB below the "
        "smallest mass picks the same queries.",
        f"{CELL_GP}.",
    )
    z_kinds = frozenset({"discrete"})
    target = WORST_CASE  # max_x min_z f(x, z)

    @classmethod
    def proposal_cost(cls, z_kind: str) -> tuple[float, float, float, float]:
        """See :meth:`Algorithm.proposal_cost`: as V-UCB's exact search."""
        return (0.05, 0.1, 0.5, 1.0)

    options: ClassVar[tuple[Option, ...]] = (beta_option(), *search_options(scored=" by min_z u(x, z)"))

    @classmethod
    def iteration_seconds(cls, size: ProblemSize, options: Mapping[str, object]) -> float:
        """See :mod:`algorithms.cost`: V-UCB's x search."""
        return search_seconds(options, size.d_x)

    def __init__(self, problem: Problem, seed_root: int, beta: str | float = "paper",
                 n_raw: int | None = None, n_restarts: int = 5, maxiter: int = 200) -> None:
        super().__init__(problem, seed_root)
        self.z = require_discrete(problem, self.name)
        self.beta = beta_schedule(beta)
        check_search_options(self.name, n_raw, n_restarts, maxiter)
        self.n_raw = n_raw or 256 * problem.d_x
        self.n_restarts = n_restarts
        self.maxiter = maxiter

    def propose(self, model: SingleTaskGP, t: int) -> Proposal:
        beta = self.beta(t)
        points = self.z.points
        marginals = PosteriorMarginals(model)
        min_upper = self._min_upper(marginals, beta)
        x_t, _ = maximize_x(model, min_upper, self.problem.d_x, self.search_seed(t),
                            self.n_raw, self.n_restarts, self.maxiter)
        with torch.no_grad():
            l, _, u = marginals.grid_bounds(x_t.unsqueeze(0), points, beta)
        # Exact minimizers (ties happen where the kernel underflows and l is the prior's) are
        # chosen uniformly with the shared stream, as V-UCB Unif chooses among lacing values.
        minimizers = torch.nonzero(l[0] == l[0].min()).squeeze(-1)
        pick = torch.randint(minimizers.numel(), (1,), generator=self.choice_generator(t))
        index = int(minimizers[pick])
        info = {"beta": beta, "var_upper": float(u[0].min()), "var_lower": float(l[0, index])}
        return Proposal(x_t, points[index].clone(), info, lower_bound=info["var_lower"])

    def _min_upper(self, marginals: PosteriorMarginals, beta: float) -> Callable[[Tensor], Tensor]:
        """x -> min_z u_{t-1}(x, z) over the support, ``b x d_x`` -> ``b``."""
        width = math.sqrt(beta)

        def min_upper(X: Tensor) -> Tensor:
            mean, std = marginals.grid(X, self.z.points)
            return (mean + width * std).min(dim=-1).values

        return min_upper

    def acquisition_function(self, model: SingleTaskGP, t: int) -> Callable[[Tensor], Tensor]:
        """min_z u_{t-1}(x, z), the function StableOpt's x-search maximizes."""
        return self._min_upper(PosteriorMarginals(model), self.beta(t))

    def recommend(self, model: SingleTaskGP, train_X: Tensor) -> Recommendation:
        xs = self.observed_x(train_X)
        with torch.no_grad():
            mean = PosteriorMarginals(model).grid_mean(xs, self.z.points)
            values = mean.min(dim=-1).values
        i = int(values.argmax())
        return Recommendation(xs[i].clone(), {"var_mean_rec": float(values[i])})
