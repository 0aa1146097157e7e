"""A researcher's own problem and algorithm, in a module outside the package: what the documentation's
"Your own problem" and "Your own algorithm" (docs/how-to/) describe, run by
``tests/harness/test_plugins.py`` from this folder as ``toy_plugin:toy_problem`` and ``toy_plugin:Toy``.

The problem: f(x, z) = -(x - 0.5)^2 - z on x in [0, 1], Z on {0, 0.5, 1} with masses 0.05, 0.65, 0.3,
alpha = 0.1. The lower 0.1-quantile of Z's outcomes is the value at z = 1 (f decreases in z and
P(Z = 1) = 0.3 >= 0.1), so VaR_0.1(f(x, Z)) = -(x - 0.5)^2 - 1: maximum -1 at x = 0.5. The worst case
is -(x - 0.5)^2 - 1 too (z = 1 is the worst); alpha exceeds the smallest mass, so the regret is
against VaR. ``toy_unknown`` is the same problem declaring its optimum unknown.
"""

from __future__ import annotations

import time
from dataclasses import replace

import torch
from torch import Tensor

from algorithms import Algorithm, Proposal, Recommendation
from problems import DiscreteZ, Optimum, Problem, weighted_var


def objective(u: Tensor) -> Tensor:
    """``batch x 2`` (x, z) -> ``batch``."""
    return -(u[..., 0] - 0.5) ** 2 - u[..., 1]


def toy_problem() -> Problem:
    z = DiscreteZ(torch.tensor([[0.0], [0.5], [1.0]], dtype=torch.float64),
                  torch.tensor([0.05, 0.65, 0.3], dtype=torch.float64))
    return Problem(name="toy", d_x=1, d_z=1, z=z, alpha=0.1, noise_std=0.01, n_init=3, iterations=4,
                   objective=objective, optimum=Optimum(var=-1.0, argmax_var=(0.5,), worst_case=-1.0,
                                                        argmax_worst_case=(0.5,)))


#: The same problem, as an object rather than a factory, with its optimum declared unknown.
toy_unknown = replace(toy_problem(), optimum=None)


class Toy(Algorithm):
    """Random x and z from the algorithm's own stream; recommends the observed x whose posterior
    mean has the largest VaR over Z."""

    name = "toy"
    z_kinds = frozenset({"discrete"})

    def propose(self, model, t: int) -> Proposal:
        x = torch.rand(self.problem.d_x, generator=self.rng, dtype=torch.float64)
        z = self.problem.z.sample(1, self.rng)[0]
        return Proposal(x, z, info={"draw": t})

    def recommend(self, model, train_X: Tensor) -> Recommendation:
        xs = self.observed_x(train_X)  # k x d_x
        points = self.problem.z.points  # |Dz| x d_z
        grid = torch.cat([xs[:, None, :].expand(-1, points.shape[0], -1),
                          points[None].expand(xs.shape[0], -1, -1)], dim=-1)
        mean = model.posterior(grid).mean.squeeze(-1)  # k x |Dz|
        var = weighted_var(mean, self.problem.z.masses, self.problem.alpha)
        return Recommendation(xs[var.argmax()], {"var_mean_rec": float(var.max())})


class Slow(Toy):
    """Toy at 0.2 s a proposal: a cell that runs long enough to be interrupted however fast or
    loaded the machine is (``tests/harness/test_cluster_recovery.py``)."""

    name = "slow"

    def propose(self, model, t: int) -> Proposal:
        time.sleep(0.2)
        return super().propose(model, t)


class NoName(Algorithm):
    """Forgets ``name``: the runner refuses it in one line before building it, so its methods,
    which only make the class concrete, are never called."""

    def propose(self, model, t: int) -> Proposal:
        raise NotImplementedError

    def recommend(self, model, train_X: Tensor) -> Recommendation:
        raise NotImplementedError


#: Not a problem at all.
not_a_problem = 42


class SuiteToy(Algorithm):
    """A researcher's method for the suite's problems (``docs/how-to/compare-with-suite.md``): random
    x and z (any kind of Z), for VaR and CVaR cells, recommending by the shared rule (the observed x
    whose posterior mean has the best exact value of the cell's risk measure)."""

    name = "suite-toy"
    risks = frozenset({"var", "cvar"})

    def propose(self, model, t: int) -> Proposal:
        x = torch.rand(self.problem.d_x, generator=self.rng, dtype=torch.float64)
        z = self.problem.z.sample(1, self.rng)[0]
        return Proposal(x, z, info={"draw": t})
