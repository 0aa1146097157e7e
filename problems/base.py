"""The problem type: a value holding everything a run needs to know about a benchmark."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from problems.distributions import ContinuousZ, DiscreteZ
from problems.measures import risk_measure
from problems.risk import (
    piecewise_linear_cvar,
    piecewise_linear_var,
    triangulated_cvar,
    triangulated_var,
    weighted_cvar,
    weighted_var,
)
from problems.seeding import generator

ZDistribution = DiscreteZ | ContinuousZ

#: Quadrature nodes per axis of the true VaR under a continuous Z, by d_z (see
#: :meth:`ContinuousZ.quadrature_grid`, and :meth:`Problem.var` for the accuracy).
QUADRATURE = {1: 4097, 2: 257}
#: Quasi-random nodes of the true VaR under a continuous Z with d_z > 2 (accuracy: Problem.var).
QMC_NODES = 2**16
#: Node values held at once (``x`` chunks are sized to it), to bound memory.
QUADRATURE_CHUNK = 2**22
#: Worst case under a continuous Z: zoom rounds, points per axis, shrink factor per round.
WORST_CASE_ZOOM = (12, 9, 4)


def _simpson_weights(n: int) -> Tensor:
    """Composite Simpson weights of ``n`` (odd) equally spaced nodes on [0, 1]: ``n``, summing to 1."""
    weights = torch.ones(n, dtype=torch.float64)
    weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
    return weights / (3.0 * (n - 1))


@dataclass(frozen=True)
class Optimum:
    """The optimization targets of a problem, at the problem's alpha.

    A user's problem may know only some of them: what is None is unknown, and a regret against it is
    null (the registered problems know all six).

    Attributes:
        var: max_x VaR_alpha(f(x, Z)).
        argmax_var: a maximizer, in [0, 1]-scaled x (length d_x).
        worst_case: max_x min_{z in support} f(x, z) (StableOpt's target, the alpha -> 0 limit).
        argmax_worst_case: a maximizer of the worst case.
        lower_bound: True when the values are the best found by a search that cannot certify them
            (robot pushing: no closed form, every evaluation a simulation). A run that beats them has
            a negative regret, which then means the bound was beaten, not that the run is wrong.
        cvar: max_x CVaR_alpha(f(x, Z)), the optimum of the cells that optimize CVaR.
        argmax_cvar: a maximizer of CVaR.
        mean: max_x E_Z[f(x, Z)], the optimum of the cells that optimize the expectation.
        argmax_mean: a maximizer of the expectation.
    """

    var: float | None
    argmax_var: tuple[float, ...] | None = None
    worst_case: float | None = None
    argmax_worst_case: tuple[float, ...] | None = None
    lower_bound: bool = False
    cvar: float | None = None
    argmax_cvar: tuple[float, ...] | None = None
    mean: float | None = None
    argmax_mean: tuple[float, ...] | None = None

    def value(self, target: str) -> float | None:
        """The optimum of the risk measure named ``target`` (:data:`problems.measures.RISK_MEASURES`),
        None where it is unknown; ``ValueError`` for an unknown name."""
        return risk_measure(target).optimum(self)


@dataclass(frozen=True)
class Problem:
    """A VaR benchmark: maximize VaR_alpha(f(x, Z)) over x in [0, 1]^d_x.

    Inputs of the objective are ``concat([x, z])`` on [0, 1]^(d_x + d_z), x leading.

    Attributes:
        name: registry name, e.g. ``branin-1-1-discrete``.
        d_x, d_z: dimensions of the decision x and the environment z.
        z: the distribution of Z.
        alpha: risk level in (0, 1).
        noise_std: standard deviation of the Gaussian observation noise (0 for a problem whose
            observations come from a ``simulator``).
        n_init: size of the initial design.
        iterations: default number of BO iterations after the initial design.
        objective: ``batch x (d_x + d_z)`` -> ``batch``, float64, vectorized, noise-free.
        optimum: the targets at ``alpha``. A registered problem's come from ``optima.json``
            (:func:`problems.build_problem`); a user's problem declares its own, and ``None``
            declares them unknown (its cells run, their regret is null).
        description: one line on where the problem comes from.
        quadrature_nodes: nodes per axis of the true VaR under a continuous Z (default
            :data:`QUADRATURE` by d_z; more for an objective with sharp curvature in z).
        overhead_seconds: rough single-core seconds a BO iteration on this problem costs besides
            the algorithm's proposal (the model update and the regret of the recommendation, which
            evaluates f at all of Z): 0.05 s where f is cheap, more where it is a simulation. It
            sizes cost estimates (:func:`harness.grid.declared_rate`); it is not a result.
        simulator: for a problem whose observation is a simulation rather than f plus Gaussian
            noise (the newsvendor): ``batch x (d_x + d_z)`` inputs and ``batch x noise_draws``
            standard normal draws -> ``batch`` observations, whose expectation over the draws is
            ``objective`` (so f stays the noise-free truth that regret is measured on). It maps
            the normal draws to its own variates (``torch.special.ndtr`` gives uniforms), so the
            observation stream of a (problem, seed) is still one sequence of normal draws that
            every algorithm shares (common random numbers). None: y = f + noise_std * noise.
        noise_draws: standard normal draws per observation, given to ``simulator`` (1 without one).
        source: where the problem comes from, one line: the repository (with its commit where
            known) and file(s), and the paper. The study pages' table of sources shows it
            (``analysis/sources.py``); "" declares nothing, which the table says.
        deviations: every way this problem differs from its source, one short sentence each (a
            mapping of conventions that moves no number is not one); empty only where there is
            none.
        optimum_search: the problem's own optimum search, where the general one would cost too
            much (a 101^3 grid of simulations): called by :func:`problems.optima.search_problem` as
            ``optimum_search(problem, alpha, workers=, partial=, targets=)``, it returns an entry
            of ``optima.json``; None: the general search.
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
    quadrature_nodes: int | None = None
    overhead_seconds: float = 0.05
    simulator: Callable[[Tensor, Tensor], Tensor] | None = None
    noise_draws: int = 1
    source: str = ""
    deviations: tuple[str, ...] = ()
    optimum_search: Callable[..., dict] | None = None

    def f(self, x: Tensor, z: Tensor) -> Tensor:
        """Noise-free f(x, z) for broadcastable ``... x d_x`` and ``... x d_z``; returns ``...``."""
        batch = torch.broadcast_shapes(x.shape[:-1], z.shape[:-1])
        xz = torch.cat([x.expand(*batch, self.d_x), z.expand(*batch, self.d_z)], dim=-1)
        return self.objective(xz)

    def support_values(self, x: Tensor) -> Tensor:
        """f(x, z) on the discrete support: ``batch x d_x`` -> ``batch x |Dz|``."""
        if not isinstance(self.z, DiscreteZ):
            raise TypeError(f"{self.name} has a continuous Z: it has no finite support")
        return self.f(x.unsqueeze(-2), self.z.points)

    def var(self, x: Tensor, alpha: float | None = None) -> Tensor:
        """True VaR_alpha(f(x, Z)) for ``batch x d_x`` -> ``batch`` (alpha defaults to the problem's).

        Exact for a discrete Z. For a continuous Z, by quadrature in the probability scale
        u = CDF(z): f is evaluated on the nodes of :meth:`ContinuousZ.quadrature_grid`
        (:data:`QUADRATURE`), interpolated linearly along the last coordinate of u, and the exact
        quantile of that interpolant is taken (:func:`problems.risk.piecewise_linear_var`).
        Measured absolute error (``tests/problems/test_continuous.py``, against quadratures with
        4x (d_z = 1) or 2x (d_z = 2) the nodes, and a Monte Carlo of 2 x 10^6 draws): below 1e-6
        on every continuous problem (largest: 1.5e-7 Branin, 5e-8 Hartmann-(2,1), 6e-8
        Goldstein-Price with 16385 nodes, 3e-7 Hartmann-(1,2)).
        """
        alpha = self.alpha if alpha is None else alpha
        if isinstance(self.z, DiscreteZ):
            return self.z.var(self.support_values(x), alpha)
        if self.d_z > 2:
            return self._qmc_var(x, alpha)
        nodes = self.z.quadrature_grid(self.quadrature_nodes or QUADRATURE[self.d_z])
        chunk = max(1, QUADRATURE_CHUNK // nodes[..., 0].numel())
        out = []
        for part in x.split(chunk):
            if self.d_z == 1:
                values = self.f(part[:, None, :], nodes)  # chunk x n
                out.append(piecewise_linear_var(values.unsqueeze(-2), values.new_ones(1), alpha))
            else:
                values = self.f(part[:, None, None, :], nodes)  # chunk x n x n
                # the triangulation's error is c h^2 + o(h^2) (measured: 1.4e-5, 3.6e-6, 9e-7 at
                # 129, 257, 513 nodes), so one Richardson step on the grid and its every other
                # node removes the leading term at no extra evaluation of f
                fine = triangulated_var(values, alpha)
                coarse = triangulated_var(values[:, ::2, ::2], alpha)
                out.append(fine + (fine - coarse) / 3.0)
        return torch.cat(out) if out else x.new_empty(0)

    def cvar(self, x: Tensor, alpha: float | None = None) -> Tensor:
        """True CVaR_alpha(f(x, Z)), the lower-tail mean (1 / alpha) int_0^alpha VaR_u du, for
        ``batch x d_x`` -> ``batch`` (alpha defaults to the problem's).

        Exact for a discrete Z (:func:`problems.risk.weighted_cvar`). For a continuous Z, the
        exact lower-tail mean of the same interpolant as :meth:`var` (d_z = 1:
        :func:`~problems.risk.piecewise_linear_cvar`; d_z = 2:
        :func:`~problems.risk.triangulated_cvar` with the same Richardson step; d_z > 2: the
        equally weighted QMC nodes). Measured error: ``tests/problems/test_continuous.py``
        (against a finer quadrature and a Monte Carlo of 2 x 10^6 draws).
        """
        alpha = self.alpha if alpha is None else alpha
        if isinstance(self.z, DiscreteZ):
            return weighted_cvar(self.support_values(x), self.z.masses.to(x), alpha)
        if self.d_z > 2:
            nodes = self.z.qmc_points(QMC_NODES)
            masses = nodes.new_full((nodes.shape[0],), 1.0 / nodes.shape[0])
            chunk = max(1, QUADRATURE_CHUNK // nodes.shape[0])
            out = [weighted_cvar(self.f(part[:, None, :], nodes), masses, alpha) for part in x.split(chunk)]
            return torch.cat(out) if out else x.new_empty(0)
        nodes = self.z.quadrature_grid(self.quadrature_nodes or QUADRATURE[self.d_z])
        chunk = max(1, QUADRATURE_CHUNK // nodes[..., 0].numel())
        out = []
        for part in x.split(chunk):
            if self.d_z == 1:
                values = self.f(part[:, None, :], nodes)
                out.append(piecewise_linear_cvar(values.unsqueeze(-2), values.new_ones(1), alpha))
            else:
                values = self.f(part[:, None, None, :], nodes)
                fine = triangulated_cvar(values, alpha)
                coarse = triangulated_cvar(values[:, ::2, ::2], alpha)
                out.append(fine + (fine - coarse) / 3.0)
        return torch.cat(out) if out else x.new_empty(0)

    def _qmc_var(self, x: Tensor, alpha: float) -> Tensor:
        """VaR under a continuous Z with d_z > 2: the alpha-quantile of f(x, .) over
        :data:`QMC_NODES` scrambled Sobol draws of Z, equally weighted. Not a quadrature: its
        error is that of an empirical quantile of low-discrepancy points, measured below 2e-5 on
        d_z = 3 (``tests/problems/test_user_problems.py``: f = the min or the max of the
        coordinates of the default Z, whose quantiles are exact, at alpha from 0.05 to 0.5); a
        regret on such a problem is good to that accuracy, not to the 1e-6 of d_z <= 2."""
        nodes = self.z.qmc_points(QMC_NODES)  # n x d_z
        masses = nodes.new_full((nodes.shape[0],), 1.0 / nodes.shape[0])
        chunk = max(1, QUADRATURE_CHUNK // nodes.shape[0])
        out = [weighted_var(self.f(part[:, None, :], nodes), masses, alpha) for part in x.split(chunk)]
        return torch.cat(out) if out else x.new_empty(0)

    def mean(self, x: Tensor, alpha: float | None = None) -> Tensor:
        """True E_Z[f(x, Z)] for ``batch x d_x`` -> ``batch`` (``alpha`` is accepted and plays no part).

        Exact for a discrete Z (the measure of the support's values, as every measure is). For a
        continuous Z, Simpson's rule in the probability scale u = CDF(z) on the nodes of
        :meth:`ContinuousZ.quadrature_grid` (:data:`QUADRATURE` per axis, ends included; a
        product rule for d_z = 2), the quasi-random nodes of :meth:`var` beyond d_z = 2. Measured
        (``tests/problems/test_measures.py``): within 1e-6 of the rule on a grid twice as fine per
        axis, and within 4 standard errors of a Monte Carlo of 2 x 10^6 draws.
        """
        del alpha
        if isinstance(self.z, DiscreteZ):
            return (self.support_values(x) * self.z.masses.to(x)).sum(dim=-1)
        if self.d_z > 2:
            nodes = self.z.qmc_points(QMC_NODES)
            return torch.cat([self.f(part[:, None, :], nodes).mean(dim=-1) for part in x.split(
                max(1, QUADRATURE_CHUNK // nodes.shape[0]))])
        n = self.quadrature_nodes or QUADRATURE[self.d_z]
        n += 1 - n % 2  # Simpson's rule wants an odd number of nodes
        nodes = self.z.quadrature_grid(n).reshape(-1, self.d_z)
        weights = _simpson_weights(n)
        if self.d_z == 2:
            weights = torch.outer(weights, weights).reshape(-1)
        chunk = max(1, QUADRATURE_CHUNK // nodes.shape[0])
        return torch.cat([self.f(part[:, None, :], nodes) @ weights for part in x.split(chunk)])

    def worst_case(self, x: Tensor) -> Tensor:
        """min over the support of f(x, z), ``batch x d_x`` -> ``batch``.

        For a continuous Z, the minimum over the support box: the best quadrature node (d_z > 2:
        the best of :data:`QMC_NODES` quasi-random points), then a grid zoom around it
        (:data:`WORST_CASE_ZOOM`), batched over x; the zoom reaches steps of about 1e-9 in z, far
        below what moves the value by 1e-9.
        """
        if isinstance(self.z, DiscreteZ):
            return self.support_values(x).min(dim=-1).values
        rounds, points, shrink = WORST_CASE_ZOOM
        lower, upper = self.z.lower, self.z.upper
        if self.d_z > 2:  # quasi-random starts, the zoom from about their spacing
            nodes = self.z.sample_support_qmc(QMC_NODES)
            spacing = (upper - lower) * QMC_NODES ** (-1.0 / self.d_z)
        else:
            n_nodes = self.quadrature_nodes or QUADRATURE[self.d_z]
            nodes = self.z.quadrature_grid(n_nodes).reshape(-1, self.d_z)
            axis = self.z.icdf(torch.linspace(0.0, 1.0, n_nodes, dtype=torch.float64))
            spacing = float(axis.diff().max())
        chunk = max(1, QUADRATURE_CHUNK // nodes.shape[0])
        out = []
        for part in x.split(chunk):
            values = self.f(part[:, None, :], nodes)  # chunk x N
            best, index = values.min(dim=-1)
            center = nodes[index]  # chunk x d_z
            h = spacing  # the zoom starts one node spacing around the best node
            step = torch.linspace(-1.0, 1.0, points, dtype=torch.float64)
            offsets = torch.stack(torch.meshgrid(*([step] * self.d_z), indexing="ij"), -1)
            offsets = offsets.reshape(-1, self.d_z)
            for _ in range(rounds):
                local = (center[:, None, :] + h * offsets).clamp(lower, upper)
                local_values = self.f(part[:, None, :], local)
                local_best, i = local_values.min(dim=-1)
                better = local_best < best
                best = torch.where(better, local_best, best)
                chosen = local[torch.arange(local.shape[0]), i]
                center = torch.where(better[:, None], chosen, center)
                h /= shrink
            out.append(best)
        return torch.cat(out) if out else x.new_empty(0)

    def initial_design(self, seed: int, z_from_distribution: bool = False) -> tuple[Tensor, Tensor]:
        """The initial design of run ``seed``: ``n_init x d_x`` and ``n_init x d_z``.

        Depends on (problem name, seed) only, so every algorithm starts from the same points: x
        uniform on [0, 1]^d_x, z uniform over the support of Z (points for a discrete Z, the box for
        a continuous one), so that the first model sees the whole range of z. With
        ``z_from_distribution`` (a z-blind method, which does not choose z: every z it sees is drawn
        from Z) the same x, and z drawn from Z's distribution on a stream of its own.
        """
        g = generator(self.name, seed, "initial-design")
        x = torch.rand(self.n_init, self.d_x, generator=g, dtype=torch.float64)
        z = self.z.sample_support(self.n_init, g)
        if z_from_distribution:
            z = self.z.sample(self.n_init, generator(self.name, seed, "initial-design", "z-blind"))
        return x, z

    @property
    def noise_shape(self) -> tuple[int, ...]:
        """The shape of one observation's noise draws: ``()``, or ``(noise_draws,)`` for a
        simulator."""
        return () if self.simulator is None else (self.noise_draws,)

    def draw_noise(self, n: int | None, generator: torch.Generator) -> Tensor:
        """Standard normal draws for ``n`` observations (None: one), ``n x noise_shape``, from
        ``generator`` (a cell's observation stream). Without a simulator, ``n`` draws (one
        observation, a scalar) as the stream has always given them."""
        shape = (() if n is None else (n,)) + self.noise_shape
        return torch.randn(shape, generator=generator, dtype=torch.float64)

    def observe(self, x: Tensor, z: Tensor, noise: Tensor) -> Tensor:
        """Noisy observations of ``batch`` points (``batch x d_x``, ``batch x d_z``, ``noise`` from
        :meth:`draw_noise`): y = f(x, z) + noise_std * noise, or the simulation of each point
        with its draws (``batch x noise_draws``), all of shape ``batch``."""
        if self.simulator is None:
            return self.f(x, z) + self.noise_std * noise
        batch = torch.broadcast_shapes(x.shape[:-1], z.shape[:-1])
        xz = torch.cat([x.expand(*batch, self.d_x), z.expand(*batch, self.d_z)], dim=-1)
        return self.simulator(xz, noise)



#: The factories :func:`registered` so far, in registration order.
_REGISTERED: list[Callable[[], Problem]] = []


def registered(factory: Callable[[], Problem]) -> Callable[[], Problem]:
    """Decorator of an in-tree problem's factory (a function of no arguments that returns its
    :class:`Problem`): :data:`problems.registry.PROBLEMS` keys it by the name of the problem it
    builds once its module is imported (the registry's one import line names every module), as
    :func:`algorithms.base.registered` does for an algorithm's class. A user's problem is not
    registered: it is named by its import path (:mod:`problems.plugins`).

    Args:
        factory: builds the problem; called once at import to read its name (building a problem
            reads no data, so this is cheap).

    Returns:
        ``factory``, unchanged.
    """
    _REGISTERED.append(factory)
    return factory


def registered_factories() -> tuple[Callable[[], Problem], ...]:
    """Every factory :func:`registered` so far, in registration order.

    Returns:
        The factories, oldest first.
    """
    return tuple(_REGISTERED)
