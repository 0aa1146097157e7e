"""Random search: x uniform on [0, 1]^d_x, z drawn from Z; recommends like V-UCB (VaR) or CV-UCB
(CVaR).

With the GP-based recommendation this is a strong floor on a one-dimensional x: every method must
beat it to be worth its cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import torch
from botorch.models import SingleTaskGP

from algorithms.base import Algorithm, Proposal, registered
from algorithms.cost import ProblemSize
from algorithms.options import Option


@registered
class RandomSearch(Algorithm):
    """Uniform x, z ~ p(z). No options. Optimizes VaR, CVaR or the mean: only the recommendation depends on
    the risk measure (argmax over the queried x of the risk measure of mu_{t-1}(x, Z))."""

    name = "random"
    source = ("This project's floor, beyond the paper: x uniform, z drawn from Z, and the recommendation "
              "rule of the V-UCB paper's experiments (the queried x of best risk measure of the posterior "
              "mean)")
    risks = frozenset({"var", "cvar", "mean"})

    @classmethod
    def proposal_cost(cls, z_kind: str) -> tuple[float, float, float, float]:
        """See :meth:`Algorithm.proposal_cost`: a draw."""
        return (0.001, 0.0, 0.0, 0.0)

    options: ClassVar[tuple[Option, ...]] = ()

    @classmethod
    def iteration_seconds(cls, size: ProblemSize, options: Mapping[str, object]) -> float:
        """See :mod:`algorithms.cost`: a draw, and the recommendation's argmax over the queried x
        (the harness's GP update and regret are the rest of its 0.05 s an iteration)."""
        return 0.0

    def propose(self, model: SingleTaskGP, t: int) -> Proposal:
        x = torch.rand(self.problem.d_x, generator=self.rng, dtype=torch.float64)
        z = self.problem.z.sample(1, self.rng)[0]
        return Proposal(x, z, {})

