"""The problem type: a value holding everything a run needs to know about a benchmark."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from problems.distributions import DiscreteZ, TruncatedNormalZ
from problems.seeding import generator

ZDistribution = DiscreteZ | TruncatedNormalZ

#: Equal-mass grid size per axis for the true VaR under a continuous Z (see
#: :meth:`TruncatedNormalZ.equal_mass_grid`).
CONTINUOUS_GRID_PER_AXIS = {1: 4001, 2: 301}


@dataclass(frozen=True)
class Optimum:
    """The optimization targets of a problem, at the problem's alpha.

    Attributes:
        var: max_x VaR_alpha(f(x, Z)).
        argmax_var: a maximizer, in [0, 1]-scaled x (length d_x).
        worst_case: max_x min_{z in support} f(x, z) (StableOpt's target, the alpha -> 0 limit).
        argmax_worst_case: a maximizer of the worst case.
    """

    var: float
    argmax_var: tuple[float, ...]
    worst_case: float
    argmax_worst_case: tuple[float, ...]


@dataclass(frozen=True)
class Problem:
    """A VaR benchmark: maximize VaR_alpha(f(x, Z)) over x in [0, 1]^d_x.

    Inputs of the objective are ``concat([x, z])`` on [0, 1]^(d_x + d_z), x leading.

    Attributes:
        name: registry name, e.g. ``branin-1-1-discrete``.
        d_x, d_z: dimensions of the decision x and the environment z.
        z: the distribution of Z.
        alpha: risk level in (0, 1).
        noise_std: standard deviation of the Gaussian observation noise.
        n_init: size of the initial design.
        iterations: default number of BO iterations after the initial design.
        objective: ``batch x (d_x + d_z)`` -> ``batch``, float64, vectorized, noise-free.
        optimum: the certified targets at ``alpha`` (``None`` until computed).
        description: one line on where the problem comes from.
    """

    name: str
    d_x: int
    d_z: int
    z: ZDistribution
    alpha: float
    noise_std: float
    n_init: int
    iterations: int
    objective: Callable[[Tensor], Tensor]
    optimum: Optimum | None = None
    description: str = ""

    def f(self, x: Tensor, z: Tensor) -> Tensor:
        """Noise-free f(x, z) for broadcastable ``... x d_x`` and ``... x d_z``; returns ``...``."""
        batch = torch.broadcast_shapes(x.shape[:-1], z.shape[:-1])
        xz = torch.cat([x.expand(*batch, self.d_x), z.expand(*batch, self.d_z)], dim=-1)
        return self.objective(xz)

    def support_values(self, x: Tensor) -> Tensor:
        """f(x, z) on the discrete support: ``batch x d_x`` -> ``batch x |Dz|``."""
        points = self._support().points
        return self.f(x.unsqueeze(-2), points)

    def _support(self) -> DiscreteZ:
        if isinstance(self.z, DiscreteZ):
            return self.z
        return self.z.equal_mass_grid(CONTINUOUS_GRID_PER_AXIS[self.d_z])

    def var(self, x: Tensor, alpha: float | None = None) -> Tensor:
        """True VaR_alpha(f(x, Z)) for ``batch x d_x`` -> ``batch`` (alpha defaults to the problem's).

        Exact for a discrete Z. For a continuous Z: VaR of an equal-mass product grid
        (:data:`CONTINUOUS_GRID_PER_AXIS`), accurate to the grid's resolution.
        """
        support = self._support()
        return support.var(self.support_values(x), self.alpha if alpha is None else alpha)

    def worst_case(self, x: Tensor) -> Tensor:
        """min over the support of f(x, z), ``batch x d_x`` -> ``batch``."""
        return self.support_values(x).min(dim=-1).values

    def initial_design(self, seed: int) -> tuple[Tensor, Tensor]:
        """The initial design of run ``seed``: ``n_init x d_x`` and ``n_init x d_z``.

        Depends on (problem name, seed) only, so every algorithm starts from the same points: x
        uniform on [0, 1]^d_x, z uniform over the support of Z (points for a discrete Z, the box for
        a continuous one), so that the first model sees the whole range of z.
        """
        g = generator(self.name, seed, "initial-design")
        x = torch.rand(self.n_init, self.d_x, generator=g, dtype=torch.float64)
        z = self.z.sample_support(self.n_init, g)
        return x, z

    def observe(self, x: Tensor, z: Tensor, noise: Tensor) -> Tensor:
        """Noisy observations y = f(x, z) + noise_std * noise, all of shape ``batch``."""
        return self.f(x, z) + self.noise_std * noise

