"""What V-UCB shares with StableOpt, V-UCB SAA and random search: the beta schedules, the checks of
the x-search options, the lacing values of Definition 1 (Nguyen et al., 2021) and the step over a
finite weighted set of z (a discrete Z, or fixed draws of one), and the recommendation rule of the
paper's experiments, argmax over the queried x of VaR_alpha(mu_{t-1}(x, Z)).

V-UCB itself is :mod:`algorithms.vucb` (a discrete Z) and :mod:`algorithms.vucb_continuous` (a
continuous one: LNSO and the lacing-value search).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from algorithms.base import positive_float, positive_int
from algorithms.gp import CELL_GP, PosteriorMarginals, beta_paper
from algorithms.options import Option
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
    if beta == BETA_SCHEDULES[0]:
        return beta_paper
    if beta == BETA_SCHEDULES[1]:
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


#: The named schedules of ``beta`` (:func:`beta_schedule`).
BETA_SCHEDULES = ("paper", "authors")
#: What ``beta`` means, for V-UCB and the methods that share its bounds.
BETA_MEANING = ("the confidence bounds' width beta_t (bounds mu +- beta_t^(1/2) sigma): ``\"paper\"``, "
                "2 log(t^2 pi^2 / 0.6); ``\"authors\"``, 9 (their code's beta^(1/2) = 3); or a positive "
                "constant.")


#: The V-UCB paper, as the family's sources cite it.
VUCB_PAPER = 'Nguyen, Dai, Low & Jaillet, "Value-at-Risk Optimization with Gaussian Processes", ICML 2021'
#: V-UCB's deviations from the paper and the authors' code (:attr:`algorithms.base.Algorithm.deviations`;
#: docs/conventions.md section 5), one sentence each, written once: its sample average shares the GP's
#: and beta's, CV-UCB and CV-TS the tie rule.
VUCB_GP = (f"{CELL_GP}: the paper's has a zero mean, and the authors' code's Matern-5/2 model is "
           "`--gp authors`.")
VUCB_BETA = ("beta_t is the paper's 2 log(t^2 pi^2 / 0.6), where the authors' code uses a constant "
             "beta^(1/2) = 3 on a discrete Z (`beta=\"authors\"`) and beta_t without the square root on a "
             "continuous one (no option).")
FINITE_SEARCH = ("On a discrete Z, x_t comes from scrambled Sobol scoring and L-BFGS-B through the exact "
                 "weighted quantile (`n_raw`, `n_restarts`, `maxiter`), where the authors' code takes 2000 "
                 "Adam steps at lr 1e-3 from 50 grid starts.")
VAR_RULE = ("The weighted VaR is the first sorted value whose cumulative mass reaches alpha (>= alpha, "
            "within 1e-12), where the authors' code uses > alpha (the two agree on the paper's grids).")
FIRST_TIE = ("Ties among lacing values of equal mass are broken at random, where the authors' scripts take "
             "the first (`--shuffletie 0`).")


def beta_option(meaning: str = BETA_MEANING) -> Option:
    """The declaration of ``beta`` (:func:`beta_schedule` reads its values)."""
    return Option("beta", float, "paper", meaning, low=0, low_open=True, choices=BETA_SCHEDULES)


def search_options(z_kind: str | None = None, scored: str = "") -> tuple[Option, ...]:
    """The declarations of the x-search options ``n_raw``, ``n_restarts``, ``maxiter``
    (:func:`check_search_options`), on a Z of kind ``z_kind`` only if given; ``scored``: what the
    raw x are scored by, if not the acquisition."""
    return (Option("n_raw", int, None, f"scrambled Sobol x scored{scored} per iteration before "
                   "L-BFGS-B (unset: 256 per dimension of x).", low=1, nullable=True, z_kind=z_kind),
            Option("n_restarts", int, 5, "L-BFGS-B starts, the best-scored of those x.", low=1,
                   z_kind=z_kind),
            Option("maxiter", int, 200, "L-BFGS-B iterations.", low=1, z_kind=z_kind))


#: The x-search's seconds an iteration at the defaults on a 1-D x (one of two busy cores; the
#: harness's own share, GP and regret, excluded): V-UCB and StableOpt measured 0.04-0.10 s an
#: iteration in all on the discrete synthetic problems.
SEARCH_SECONDS = 0.05


def search_seconds(options: Mapping[str, object], d_x: int, seconds: float = SEARCH_SECONDS) -> float:
    """The x-search's seconds an iteration: ``seconds`` at the defaults on a 1-D x, in proportion
    to its points scored, ``n_raw`` (256 per dimension of x unless set), and its gradient evaluations,
    about 50 per L-BFGS-B start (``n_restarts``; fewer if ``maxiter`` stops it sooner)."""
    n_raw = options.get("n_raw") or 256 * d_x
    work = n_raw + options["n_restarts"] * min(options["maxiter"], 50)
    return seconds * work / (256 + 5 * 50)


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

