"""What V-UCB shares with StableOpt, V-UCB SAA and random search: the beta schedules, the checks of
the x-search options, the lacing values of Definition 1 (Nguyen et al., 2021) and the step over a
finite weighted set of z (a discrete Z, or fixed draws of one), and the recommendation rule of the
paper's experiments, argmax over the queried x of VaR_alpha(mu_{t-1}(x, Z)).

V-UCB itself is :mod:`algorithms.vucb` (a discrete Z) and :mod:`algorithms.vucb_continuous` (a
continuous one: LNSO and the lacing-value search).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from algorithms.base import Recommendation, positive_float, positive_int
from algorithms.gp import PosteriorMarginals, beta_paper
from algorithms.search import maximize_x
from problems import DiscreteZ, Problem
from problems.measures import risk_measure
from problems.risk import weighted_var

#: Relative tolerance under which two masses count as tied for V-UCB Prob (then chosen at random).
MASS_TIE_RTOL = 1e-9


class LacingValueError(RuntimeError):
    """The lacing-value set came out empty, contradicting Theorem 1 (a defect, never a fallback)."""


def beta_schedule(beta: str | float) -> callable:
    """``"paper"``: 2 log(t^2 pi^2 / 0.6); ``"authors"``: 9 (their code's beta^(1/2) = 3);
    a number: that constant."""
    if beta == "paper":
        return beta_paper
    if beta == "authors":
        return lambda t: 9.0
    value = positive_float("V-UCB", "beta", beta) if not isinstance(beta, str) else None
    if value is None:
        raise ValueError(f"V-UCB: beta must be 'paper', 'authors' or a positive finite number, got {beta!r}")
    return lambda t: value


def check_search_options(name: str, n_raw: int | None, n_restarts: int, maxiter: int) -> None:
    """Positive integers (``n_raw`` may be None for its default), or ``ValueError``."""
    for key, value in (("n_raw", n_raw), ("n_restarts", n_restarts), ("maxiter", maxiter)):
        if value is None and key == "n_raw":
            continue
        positive_int(name, key, value)


def require_discrete(problem: Problem, name: str) -> DiscreteZ:
    if not isinstance(problem.z, DiscreteZ):
        raise ValueError(f"{name} needs a discrete Z; {problem.name} has a continuous one")
    return problem.z


def lacing_values(l: Tensor, u: Tensor, masses: Tensor, alpha: float) -> tuple[Tensor, Tensor, Tensor]:
    """The lacing-value mask of Definition 1 at one x.

    Args:
        l, u: ``batch x m`` lower and upper confidence bounds on the support.
        masses: ``m`` probabilities.

    Returns:
        ``batch x m`` boolean mask, and the ``batch`` VaRs of l and u.
    """
    var_l = weighted_var(l, masses, alpha)
    var_u = weighted_var(u, masses, alpha)
    mask = (l <= var_l.unsqueeze(-1)) & (u >= var_u.unsqueeze(-1))
    return mask, var_l, var_u


def var_upper_function(marginals: PosteriorMarginals, points: Tensor, masses: Tensor, alpha: float,
                       beta: float) -> Callable[[Tensor], Tensor]:
    """x -> VaR_alpha(u_{t-1}(x, Z)) over a finite weighted set of z: ``b x d_x`` -> ``b``
    (differentiable almost everywhere, through the selected order statistic)."""
    width = math.sqrt(beta)

    def var_upper(X: Tensor) -> Tensor:
        mean, std = marginals.grid(X, points)
        return weighted_var(mean + width * std, masses, alpha)

    return var_upper


def discrete_step(model: SingleTaskGP, points: Tensor, masses: Tensor, alpha: float, beta: float,
                  d_x: int, search_seed: int, n_raw: int, n_restarts: int, maxiter: int, t: int
                  ) -> tuple[Tensor, Tensor, float, float]:
    """One V-UCB step over a finite weighted set of z (a discrete Z, or fixed draws of one).

    x_t = argmax_x VaR_alpha(u_{t-1}(x, Z)) (exact over the set, by :func:`maximize_x`), then the
    lacing values at x_t.

    Args:
        points: ``m x d_z`` support; masses: ``m`` weights summing to one.
        d_x: dimension of x.
        search_seed, n_raw, n_restarts, maxiter: the x-search (see :func:`maximize_x`).

    Returns:
        x_t (``d_x``), the lacing-value mask (``m``), VaR_alpha(l(x_t, Z)) and VaR_alpha(u(x_t, Z)).

    Raises:
        LacingValueError: no lacing value (impossible by Theorem 1; reported with the numbers).
    """
    marginals = PosteriorMarginals(model)
    var_upper = var_upper_function(marginals, points, masses, alpha, beta)
    x_t, _ = maximize_x(model, var_upper, d_x, search_seed, n_raw, n_restarts, maxiter)
    with torch.no_grad():
        l, _, u = marginals.grid_bounds(x_t.unsqueeze(0), points, beta)
    mask, var_l, var_u = lacing_values(l, u, masses, alpha)
    mask, var_l, var_u = mask[0], float(var_l[0]), float(var_u[0])
    if not mask.any():
        raise LacingValueError(
            f"no lacing value at x={x_t.tolist()} t={t}: VaR(l)={var_l!r}, VaR(u)={var_u!r}, "
            f"min l={float(l.min())!r}, max u={float(u.max())!r}")
    return x_t, mask, var_l, var_u


def pick_lacing_value(mask: Tensor, preference: Tensor | None, rng: torch.Generator) -> int:
    """Index of the chosen lacing value (``mask``: ``m`` booleans): uniformly at random among them
    (``preference`` None: V-UCB Unif), or among those of the largest ``preference`` (``m`` masses or
    densities: V-UCB Prob), ties within :data:`MASS_TIE_RTOL` broken at random."""
    candidates = torch.nonzero(mask).squeeze(-1)
    if preference is not None:
        values = preference[candidates]
        candidates = candidates[values >= values.max() * (1 - MASS_TIE_RTOL)]
    pick = torch.randint(candidates.numel(), (1,), generator=rng)
    return int(candidates[pick])



#: Equal-mass grid per axis on which VaR_alpha(mu(x, Z)) is taken for the recommendation under a
#: continuous Z (quantile level within 1 / n per axis), by d_z.
RECOMMEND_GRID = {1: 512, 2: 32}

def recommend_by_mean_var(problem: Problem, model: SingleTaskGP, xs: Tensor,
                          risk: str = "var") -> Recommendation:
    """argmax over ``xs`` (``k x d_x``) of VaR_alpha(mu_{t-1}(x, Z)), the paper's experiments' rule;
    with ``risk="cvar"`` of CVaR_alpha(mu_{t-1}(x, Z)), CV-UCB's (Nguyen et al., 2021b). The
    estimate at the recommendation is the info's ``var_mean_rec`` either way (the row's column of
    the model's estimate of the cell's risk measure).

    A continuous Z is replaced by its equal-mass grid (:data:`RECOMMEND_GRID`).
    """
    if isinstance(problem.z, DiscreteZ):
        z = problem.z
    else:
        z = problem.z.equal_mass_grid(RECOMMEND_GRID.get(problem.d_z, 10))  # 10^d_z beyond d_z = 2
    measure = risk_measure(risk)
    with torch.no_grad():
        mean, _ = PosteriorMarginals(model).grid(xs, z.points)
        values = measure.of_distribution(mean, z.masses, problem.alpha)
    i = int(values.argmax())
    return Recommendation(xs[i].clone(), {"var_mean_rec": float(values[i])})
