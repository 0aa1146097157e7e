"""Distributions of the environmental random variable Z.

Two kinds, both frozen values:

* :class:`DiscreteZ`: a finite support ``points`` (``n x d_z``) with probability ``masses`` (``n``).
  VaR of f(x, Z) is exact: evaluate f on the support and take the weighted lower quantile.
* :class:`TruncatedNormalZ`: independent coordinates, each N(mean, std^2) truncated to
  [lower, upper]; :class:`UniformZ`: independent uniforms on [lower, upper] (both
  :class:`ContinuousZ`). VaR of f(x, Z) has no closed form: the true VaR (for regret) comes from the
  quadrature of :meth:`TruncatedNormalZ.quadrature_grid` (see :meth:`problems.base.Problem.var`);
  :meth:`TruncatedNormalZ.equal_mass_grid` is a cheaper, coarser discretization (recommendations).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

import torch
from torch import Tensor

from problems.risk import weighted_var


@dataclass(frozen=True, eq=False)
class DiscreteZ:
    """A discrete Z: support points with probability masses.

    Attributes:
        points: ``n x d_z`` support, in [0, 1]-scaled coordinates.
        masses: ``n`` probabilities summing to one.
    """

    points: Tensor
    masses: Tensor
    #: The smallest mass as recorded where the masses come from a vectorized computation whose last
    #: bit depends on the host's kernels (:func:`gaussian_grid`): a grid's alpha below it
    #: (``below-min-mass``) is part of a cell's spec, so it must not move with the host. None: the
    #: smallest of ``masses``.
    recorded_min_mass: float | None = None

    def __post_init__(self) -> None:
        if self.points.ndim != 2 or self.masses.shape != self.points.shape[:1]:
            raise ValueError("points must be n x d_z and masses n")
        if (self.masses < 0).any() or not math.isclose(float(self.masses.sum()), 1.0, abs_tol=1e-9):
            raise ValueError("masses must be non-negative and sum to one")

    @property
    def d_z(self) -> int:
        return self.points.shape[-1]

    @property
    def size(self) -> int:
        """``|Dz|``, the number of support points."""
        return self.points.shape[0]

    @property
    def is_discrete(self) -> bool:
        return True

    @property
    def min_mass(self) -> float:
        """The smallest mass: any alpha at or below it makes VaR the minimum over the support
        (:attr:`recorded_min_mass` where it is recorded)."""
        return float(self.masses.min()) if self.recorded_min_mass is None else self.recorded_min_mass

    def sample(self, n: int, generator: torch.Generator) -> Tensor:
        """``n x d_z`` draws from p(z)."""
        idx = torch.multinomial(self.masses, n, replacement=True, generator=generator)
        return self.points[idx]

    def sample_support(self, n: int, generator: torch.Generator) -> Tensor:
        """``n x d_z`` support points drawn uniformly (the initial design covers the support)."""
        idx = torch.randint(self.size, (n,), generator=generator)
        return self.points[idx]

    def var(self, values: Tensor, alpha: float) -> Tensor:
        """VaR of ``values`` (``batch x n``, one column per support point) under the masses."""
        return weighted_var(values, self.masses, alpha)


def _ndtr(x: Tensor) -> Tensor:
    return torch.special.ndtr(x)


class ContinuousZ(ABC):
    """What every continuous Z shares: a box ``[lower, upper]^d_z`` and a coordinate-wise quantile
    function :meth:`icdf` of independent coordinates. Everything else (draws, the quadrature nodes
    of the true VaR, quasi-random nodes, equal-mass grids) is written once here in terms of them.

    Subclasses are frozen dataclasses with the fields ``d_z``, ``lower`` and ``upper`` and the
    methods :meth:`icdf` and :meth:`density`: :class:`TruncatedNormalZ` and :class:`UniformZ`.
    """

    d_z: int
    lower: float
    upper: float
    #: What the distribution is, in a few words (tables and listings).
    kind: ClassVar[str] = "continuous"

    @abstractmethod
    def icdf(self, u: Tensor) -> Tensor:
        """Quantile function applied coordinate-wise to ``u`` in [0, 1] (``... x d_z``)."""

    @abstractmethod
    def density(self, z: Tensor) -> Tensor:
        """Joint density at ``z`` (``batch x d_z`` -> ``batch``); zero outside the support."""

    @property
    def is_discrete(self) -> bool:
        return False

    @property
    def bounds(self) -> Tensor:
        """``2 x d_z`` support box."""
        return torch.tensor([[self.lower] * self.d_z, [self.upper] * self.d_z], dtype=torch.float64)

    def sample(self, n: int, generator: torch.Generator) -> Tensor:
        """``n x d_z`` draws, by inverting the CDF."""
        u = torch.rand(n, self.d_z, generator=generator, dtype=torch.float64)
        return self.icdf(u)

    def sample_support(self, n: int, generator: torch.Generator) -> Tensor:
        """``n x d_z`` points uniform on the support box (the initial design covers the support)."""
        u = torch.rand(n, self.d_z, generator=generator, dtype=torch.float64)
        return self.lower + (self.upper - self.lower) * u

    def quadrature_grid(self, n_nodes: int) -> Tensor:
        """Nodes of the VaR quadrature (see :func:`problems.risk.piecewise_linear_var`).

        In the probability scale u = CDF(z) (uniform on [0, 1]^d_z) every coordinate gets
        ``n_nodes`` equally spaced nodes, ends included (f is interpolated linearly between them:
        on segments for d_z = 1, on two triangles per grid cell for d_z = 2).

        Returns:
            ``n_nodes x d_z`` (d_z = 1) or ``n_nodes x n_nodes x d_z`` (d_z = 2) nodes in z.
        """
        axis = self.icdf(torch.linspace(0.0, 1.0, n_nodes, dtype=torch.float64))
        if self.d_z == 1:
            return axis.unsqueeze(-1)
        if self.d_z != 2:
            raise NotImplementedError("quadrature for d_z > 2 is not implemented")
        return torch.stack(torch.meshgrid(axis, axis, indexing="ij"), dim=-1)

    def qmc_points(self, n: int, seed: int = 0) -> Tensor:
        """``n x d_z`` quasi-random draws (a scrambled Sobol sequence, mapped by :meth:`icdf`).
        With the default seed: the nodes of the true VaR when d_z > 2, where no product quadrature
        is affordable (see :meth:`problems.base.Problem.var`); with an iteration's seed, the draws
        an algorithm treats as a discrete Z for an iteration (V-UCB SAA, CV-UCB, BoTorch's w set).
        Deterministic for a seed."""
        engine = torch.quasirandom.SobolEngine(self.d_z, scramble=True, seed=seed)
        return self.icdf(engine.draw(n, dtype=torch.float64))

    def sample_support_qmc(self, n: int) -> Tensor:
        """``n x d_z`` quasi-random points spread evenly over the support box (fixed seed): the
        starts of the worst-case search when d_z > 2."""
        engine = torch.quasirandom.SobolEngine(self.d_z, scramble=True, seed=0)
        return self.lower + (self.upper - self.lower) * engine.draw(n, dtype=torch.float64)

    def equal_mass_grid(self, n_per_axis: int) -> DiscreteZ:
        """A product grid whose cells carry equal mass: the midpoint quantiles of each axis.

        VaR of the gridded distribution converges to the true VaR as the grid grows (error of the
        quantile level at most 1 / n_per_axis per axis).
        """
        u = (torch.arange(n_per_axis, dtype=torch.float64) + 0.5) / n_per_axis
        axis = self.icdf(u)
        mesh = torch.meshgrid(*([axis] * self.d_z), indexing="ij")
        points = torch.stack([m.reshape(-1) for m in mesh], dim=-1)
        masses = torch.full((points.shape[0],), 1.0 / points.shape[0], dtype=torch.float64)
        return DiscreteZ(points, masses)


@dataclass(frozen=True, eq=False)
class TruncatedNormalZ(ContinuousZ):
    """Independent truncated normals, one per coordinate of Z.

    Attributes:
        d_z: dimension.
        mean, std: location and scale of the untruncated normal (same on every coordinate).
        lower, upper: truncation bounds (same on every coordinate).
    """

    kind: ClassVar[str] = "truncated normal"
    d_z: int
    mean: float = 0.5
    std: float = 0.125
    lower: float = 0.25
    upper: float = 0.75
    _cdf_bounds: tuple[float, float] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        a = float(_ndtr(torch.tensor((self.lower - self.mean) / self.std, dtype=torch.float64)))
        b = float(_ndtr(torch.tensor((self.upper - self.mean) / self.std, dtype=torch.float64)))
        object.__setattr__(self, "_cdf_bounds", (a, b))

    def icdf(self, u: Tensor) -> Tensor:
        """Quantile function applied coordinate-wise to ``u`` in [0, 1]."""
        a, b = self._cdf_bounds
        return self.mean + self.std * torch.special.ndtri(a + u * (b - a))

    def density(self, z: Tensor) -> Tensor:
        """Joint density at ``z`` (``batch x d_z``); zero outside the support."""
        a, b = self._cdf_bounds
        std_normal = torch.exp(-0.5 * ((z - self.mean) / self.std) ** 2) / math.sqrt(2 * math.pi)
        per_coord = std_normal / (self.std * (b - a))
        inside = (z >= self.lower) & (z <= self.upper)
        return torch.where(inside, per_coord, torch.zeros_like(per_coord)).prod(dim=-1)


@dataclass(frozen=True, eq=False)
class UniformZ(ContinuousZ):
    """Independent uniforms on ``[lower, upper]``, one per coordinate of Z (BoRisk's continuous W:
    Marzat's f6, the newsvendor's demand parameters).

    Attributes:
        d_z: dimension.
        lower, upper: the support of every coordinate, in [0, 1]-scaled coordinates.
    """

    kind: ClassVar[str] = "uniform"
    d_z: int
    lower: float = 0.0
    upper: float = 1.0

    def __post_init__(self) -> None:
        if not self.lower < self.upper:
            raise ValueError(f"UniformZ needs lower < upper, got [{self.lower}, {self.upper}]")

    def icdf(self, u: Tensor) -> Tensor:
        """Quantile function applied coordinate-wise to ``u`` in [0, 1]: an affine map."""
        return self.lower + (self.upper - self.lower) * u

    def density(self, z: Tensor) -> Tensor:
        """Joint density at ``z`` (``batch x d_z``): ``(upper - lower)^-d_z`` inside the box, zero
        outside."""
        inside = ((z >= self.lower) & (z <= self.upper)).all(dim=-1)
        value = (self.upper - self.lower) ** (-self.d_z)
        return torch.where(inside, z.new_full(inside.shape, value), z.new_zeros(inside.shape))


#: The smallest mass of :func:`gaussian_grid`'s Z by (points per axis, d_z, center, width), as the
#: paper grid first computed it (torch's softmax with AVX-512 kernels): with AVX2 kernels the last
#: bit of Hartmann-(1,2)'s differs, and half of it is the alpha of the paper's alpha -> 0 cells, so
#: their spec hashes would have moved with the host. tests/problems/test_distributions.py checks
#: these against an independent 200-bit computation (a relative difference below 1e-13).
GAUSSIAN_GRID_MIN_MASS = {(100, 1, 0.5, 0.1): 7.914579056076326e-13,
                          (8, 2, 0.5, 0.1): 1.2936897207992701e-22}


def gaussian_grid(n_per_axis: int, d_z: int, center: float = 0.5, width: float = 0.1) -> DiscreteZ:
    """The synthetic problems' discrete Z: ``linspace(0, 1, n)`` on each axis, masses proportional
    to exp(-||z - center||^2 / width^2) (docs/conventions.md section 2); its smallest mass recorded
    where :data:`GAUSSIAN_GRID_MIN_MASS` has it."""
    axis = torch.linspace(0.0, 1.0, n_per_axis, dtype=torch.float64)
    mesh = torch.meshgrid(*([axis] * d_z), indexing="ij")
    points = torch.stack([m.reshape(-1) for m in mesh], dim=-1)
    logits = -((points - center) ** 2).sum(-1) / width**2
    masses = torch.softmax(logits, dim=0)
    return DiscreteZ(points, masses, GAUSSIAN_GRID_MIN_MASS.get((n_per_axis, d_z, center, width)))
