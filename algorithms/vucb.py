"""V-UCB (Nguyen et al., 2021, Algorithm 1) for a discrete Z: ``vucb-unif`` and ``vucb-prob``.

x_t = argmax_x VaR_alpha(u_{t-1}(x, Z)), exact over the support (a weighted lower quantile), found
by :func:`algorithms.search.maximize_x`; z_t is a lacing value (Definition 1):

    l_{t-1}(x_t, z) <= VaR_alpha(l_{t-1}(x_t, Z))  and  u_{t-1}(x_t, z) >= VaR_alpha(u_{t-1}(x_t, Z)),

uniformly at random among them (Unif) or the one of largest mass (Prob). Theorem 1 says the set is
never empty; if it ever is, :class:`LacingValueError` says so with the numbers.
"""

from __future__ import annotations

import math

import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from algorithms.base import Algorithm, Proposal, Recommendation
from algorithms.gp import PosteriorMarginals, beta_paper
from algorithms.search import maximize_x
from problems import DiscreteZ, Problem
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
    value = float(beta)
    if not value > 0:
        raise ValueError(f"beta must be positive, got {beta}")
    return lambda t: value


def check_search_options(name: str, n_raw: int | None, n_restarts: int, maxiter: int) -> None:
    """Positive integers (``n_raw`` may be None for its default), or ``ValueError``."""
    for key, value in (("n_raw", n_raw), ("n_restarts", n_restarts), ("maxiter", maxiter)):
        if value is None and key == "n_raw":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: {key} must be a positive integer, got {value!r}")


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


class VUCB(Algorithm):
    """V-UCB with a discrete Z.

    Options:
        beta: ``"paper"`` (default), ``"authors"`` or a positive constant; see :func:`beta_schedule`.
        n_raw: quasi-random x scored per iteration (default 256 per dimension of x).
        n_restarts: L-BFGS-B starts (default 5).
        maxiter: L-BFGS-B iterations (default 200).
    """

    name = "vucb"
    lv_rule = "prob"

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
        alpha, points, masses = self.problem.alpha, self.z.points, self.z.masses
        marginals = PosteriorMarginals(model)
        width = math.sqrt(beta)

        def var_upper(X: Tensor) -> Tensor:
            mean, std = marginals.grid(X, points)
            return weighted_var(mean + width * std, masses, alpha)

        x_t, _ = maximize_x(model, var_upper, self.problem.d_x, self.search_seed(t),
                            self.n_raw, self.n_restarts, self.maxiter)
        with torch.no_grad():
            l, _, u = marginals.grid_bounds(x_t.unsqueeze(0), points, beta)
        mask, var_l, var_u = lacing_values(l, u, masses, alpha)
        mask, var_l, var_u = mask[0], float(var_l[0]), float(var_u[0])
        if not mask.any():
            raise LacingValueError(
                f"no lacing value at x={x_t.tolist()} t={t}: VaR(l)={var_l!r}, VaR(u)={var_u!r}, "
                f"min l={float(l.min())!r}, max u={float(u.max())!r}")
        index = self.choose(mask, self.choice_generator(t))
        info = {"beta": beta, "lv_count": int(mask.sum()), "var_upper": var_u, "var_lower": var_l}
        return Proposal(x_t, points[index].clone(), info)

    def choose(self, mask: Tensor, rng: torch.Generator) -> int:
        """Index of the chosen lacing value among the support (``mask``: ``m`` booleans)."""
        candidates = torch.nonzero(mask).squeeze(-1)
        if self.lv_rule == "prob":
            masses = self.z.masses[candidates]
            top = masses.max()
            candidates = candidates[masses >= top * (1 - MASS_TIE_RTOL)]
        pick = torch.randint(candidates.numel(), (1,), generator=rng)
        return int(candidates[pick])

    def recommend(self, model: SingleTaskGP, train_X: Tensor) -> Recommendation:
        return recommend_by_mean_var(self.problem, model, self.observed_x(train_X))


def recommend_by_mean_var(problem: Problem, model: SingleTaskGP, xs: Tensor) -> Recommendation:
    """argmax over ``xs`` (``k x d_x``) of VaR_alpha(mu_{t-1}(x, Z)), the paper's experiments' rule."""
    z = require_discrete(problem, "this recommendation")
    with torch.no_grad():
        mean, _ = PosteriorMarginals(model).grid(xs, z.points)
        values = weighted_var(mean, z.masses, problem.alpha)
    i = int(values.argmax())
    return Recommendation(xs[i].clone(), {"var_mean_rec": float(values[i])})


class VUCBUnif(VUCB):
    """V-UCB Unif: a lacing value chosen uniformly at random."""

    name = "vucb-unif"
    lv_rule = "unif"


class VUCBProb(VUCB):
    """V-UCB Prob: the lacing value of largest mass (ties broken at random)."""

    name = "vucb-prob"
    lv_rule = "prob"
