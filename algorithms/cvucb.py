"""CV-UCB (Nguyen, Dai, Low, Jaillet, "Optimizing Conditional Value-At-Risk of Black-Box Functions",
NeurIPS 2021): ``cvucb``.

With l, u = mu -+ beta_t^(1/2) sigma of the model of the data up to t - 1:

* x_t = argmax_x CVaR_alpha(u_{t-1}(x, Z)): CVaR is monotone, so this is an upper confidence
  bound of CVaR_alpha(f(x, Z)); exact over the support (:func:`problems.weighted_cvar`), maximized
  by quasi-random scoring plus L-BFGS-B (:func:`algorithms.search.maximize_x`);
* the risk level of the query: CVaR_alpha = (1 / alpha) int_0^alpha VaR_a da, so the bound's width
  at x_t, CVaR_alpha(u) - CVaR_alpha(l), is at most max over a in (0, alpha] of
  g(a) = VaR_a(u_{t-1}(x_t, Z)) - VaR_a(l_{t-1}(x_t, Z)). alpha_t is that maximizer (the smallest
  one on ties, as in the authors' code): g is a step function whose steps sit at the cumulative
  masses of the sorted l and u, so the maximum is over those steps below alpha and alpha itself,
  exactly (:func:`risk_level`);
* z_t is a lacing value of V-UCB's Definition 1 at level alpha_t,
  l_{t-1}(x_t, z) <= VaR_{alpha_t}(l_{t-1}(x_t, Z)) and u_{t-1}(x_t, z) >= VaR_{alpha_t}(u_{t-1}(x_t, Z)):
  then g(alpha_t) <= u_{t-1}(x_t, z_t) - l_{t-1}(x_t, z_t) = 2 beta_t^(1/2) sigma_{t-1}(x_t, z_t), the
  step of the paper's regret bound. Among the lacing values, the one of largest mass (the paper's
  heuristic, "we select the LV with the maximum probability", and the authors' default
  ``zmode = prob``) with ties broken at random, or (``lv_rule = "unif"``) one uniformly at random.
* recommendation: argmax over the queried x of CVaR_alpha(mu_{t-1}(x, Z)) (the authors' code).

A continuous Z (the paper's experiments have discrete ones, and so does the authors' code): each
iteration fixes N quasi-random draws of Z (scrambled Sobol through Z's quantile function, the same
for every x) of mass 1/N, as ``vucb-prob-saa`` does for VaR, and prefers the lacing value of largest
density p(z). The facts come from the paper and the authors' ``cvaropt_discrete.py`` and
``run_cvar_UCB_discrete.py`` (``qphong/BayesOpt-LV``, MIT); this code is our own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import ClassVar

import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from algorithms.base import Algorithm, Proposal, positive_int, registered
from algorithms.cost import ProblemSize
from algorithms.gp import CELL_GP, PosteriorMarginals
from algorithms.options import Option
from algorithms.search import maximize_x
from algorithms.vucb_common import (
    FIRST_TIE,
    LacingValueError,
    beta_option,
    beta_schedule,
    check_search_options,
    lacing_values,
    pick_lacing_value,
    search_options,
    search_seconds,
)
from problems import DiscreteZ, Problem
from problems.risk import CUMULATIVE_MASS_TOL, weighted_cvar
from problems.seeding import derive_seed

LV_RULES = ("prob", "unif")
#: The CV-UCB paper, and the deviations CV-TS shares (:attr:`algorithms.base.Algorithm.deviations`).
CVAR_PAPER = ('Nguyen, Dai, Low & Jaillet, "Optimizing Conditional Value-At-Risk of Black-Box Functions", '
              "NeurIPS 2021")
AUTHORS_GP = f"{CELL_GP}: the authors' code's (Matern-5/2, no standardization) is `--gp authors`."
CONTINUOUS_DRAWS = ("A continuous Z, which the source's code does not handle, is `n_samples` = 256 "
                    "quasi-random draws an iteration, of mass 1/N each, the lacing value the one of largest "
                    "density.")


def var_at_levels(values: Tensor, masses: Tensor, levels: Tensor) -> Tensor:
    """VaR_a of one weighted discrete distribution at several levels: ``m``, ``m``, ``L`` -> ``L``
    (the first sorted value whose cumulative mass reaches a, as :func:`problems.weighted_var`)."""
    order = torch.argsort(values, stable=True)
    cumulative = torch.cumsum(masses[order], dim=0)
    index = (cumulative.unsqueeze(0) < levels.unsqueeze(-1) - CUMULATIVE_MASS_TOL).sum(dim=-1)
    return values[order][index.clamp(max=values.shape[0] - 1)]


def risk_level(l: Tensor, u: Tensor, masses: Tensor, alpha: float) -> tuple[float, float]:
    """alpha_t = argmax over a in (0, alpha] of VaR_a(u) - VaR_a(l) at one x, and that gap.

    Both VaRs are constant on each interval between consecutive cumulative masses of the sorted l
    or u, and take the value of its right end; so the maximum over (0, alpha] is the maximum over
    those cumulative masses below alpha and alpha itself (evaluated at once, ``<= 2 m + 1`` levels).
    Ties go to the smallest level.

    Args:
        l, u: ``m`` lower and upper bounds on the support; masses: ``m``.
    """
    steps = torch.cat([torch.cumsum(masses[torch.argsort(v, stable=True)], dim=0) for v in (l, u)])
    levels = torch.unique(torch.cat([steps[steps < alpha - CUMULATIVE_MASS_TOL],
                                     steps.new_tensor([alpha])]))  # sorted ascending
    gaps = var_at_levels(u, masses, levels) - var_at_levels(l, masses, levels)
    i = int(torch.argmax(gaps))  # the first of equal maxima: the smallest level
    return float(levels[i]), float(gaps[i])


def cvar_upper_function(marginals: PosteriorMarginals, points: Tensor, masses: Tensor, alpha: float,
                        beta: float) -> Callable[[Tensor], Tensor]:
    """x -> CVaR_alpha(u_{t-1}(x, Z)) over a finite weighted set of z: ``b x d_x`` -> ``b``
    (differentiable: the tail's entries carry the gradient)."""
    width = math.sqrt(beta)

    def cvar_upper(X: Tensor) -> Tensor:
        mean, std = marginals.grid(X, points)
        return weighted_cvar(mean + width * std, masses, alpha)

    return cvar_upper


@registered
class CVUCB(Algorithm):
    """CV-UCB: x_t maximizes CVaR of the upper bound; z_t is the largest-mass lacing value at the
    level in (0, alpha] where VaR(u) - VaR(l) is largest (module docstring).

    Its options are declared in :attr:`options`.
    """

    name = "cvucb"
    risks = frozenset({"cvar"})
    source = (f"{CVAR_PAPER} (CV-UCB); the authors' code `qphong/BayesOpt-LV` (MIT), commit b852a94, "
              "`cvaropt_discrete.py`, `run_cvar_UCB_discrete.py`")
    deviations = (
        AUTHORS_GP,
        "beta_t is V-UCB's schedule, 2 log(t^2 pi^2 / 0.6), where the authors' script multiplies sigma by "
        "a constant `--beta 3.0` (`beta=\"authors\"`).",
        "x_t comes from scrambled Sobol scoring and L-BFGS-B, exact over the support, where the authors' "
        "script takes `--ntrain` (1000) TensorFlow gradient steps in x.",
        FIRST_TIE, CONTINUOUS_DRAWS,
    )
    z_sample_options = ("n_samples",)

    @classmethod
    def proposal_cost(cls, z_kind: str) -> tuple[float, float, float, float]:
        """See :meth:`Algorithm.proposal_cost`: V-UCB's exact search, with a full sort per x."""
        return (0.05, 0.15, 0.5, 1.0)

    options: ClassVar[tuple[Option, ...]] = (
        beta_option("the confidence bounds' width beta_t (bounds mu +- beta_t^(1/2) sigma): "
                    "``\"paper\"``, 2 log(t^2 pi^2 / 0.6) (V-UCB's schedule); ``\"authors\"``, 9 (the "
                    "authors' CV-UCB script's beta^(1/2) = 3); or a positive constant."),
        Option("lv_rule", str, "prob", "which lacing value at alpha_t: ``\"prob\"``, the one of largest "
               "mass (density on a continuous Z), ties at random (the paper's heuristic); ``\"unif\"``, "
               "uniformly at random.", choices=LV_RULES),
        *search_options(),
        Option("n_samples", int, None, "N, the quasi-random draws of Z of an iteration, each of mass "
               "1/N (unset: 256).", low=1, nullable=True, z_kind="continuous"))

    @classmethod
    def iteration_seconds(cls, size: ProblemSize, options: Mapping[str, object]) -> float:
        """See :mod:`algorithms.cost`: V-UCB's x search with a full sort per x (0.10 s on a
        discrete Z), over N draws of a continuous one in proportion to N."""
        draws = 1.0 if size.z_kind == "discrete" else (options["n_samples"] or 256) / 256
        return search_seconds(options, size.d_x, 0.10) * draws

    def __init__(self, problem: Problem, seed_root: int, risk: str = "cvar", beta: str | float = "paper",
                 lv_rule: str = "prob", n_raw: int | None = None, n_restarts: int = 5,
                 maxiter: int = 200, n_samples: int | None = None) -> None:
        super().__init__(problem, seed_root, risk=risk)
        if lv_rule not in LV_RULES:
            raise ValueError(f"{self.name}: lv_rule must be one of {', '.join(LV_RULES)}, got {lv_rule!r}")
        check_search_options(self.name, n_raw, n_restarts, maxiter)
        if isinstance(problem.z, DiscreteZ):
            if n_samples is not None:
                raise TypeError(f"{self.name}: n_samples is for a continuous Z; {problem.name} has a "
                                "discrete one")
        else:
            n_samples = 256 if n_samples is None else n_samples
            positive_int(self.name, "n_samples", n_samples)
        self.beta = beta_schedule(beta)
        self.lv_rule = lv_rule
        self.n_raw = n_raw or 256 * problem.d_x
        self.n_restarts = n_restarts
        self.maxiter = maxiter
        self.n_samples = n_samples

    def support(self, t: int) -> tuple[Tensor, Tensor, Tensor]:
        """The z set of iteration ``t``: ``m x d_z`` points, ``m`` masses and ``m`` preferences (the
        masses of a discrete Z; for a continuous one, N fresh quasi-random draws, masses 1/N, and
        their densities)."""
        z = self.problem.z
        if isinstance(z, DiscreteZ):
            return z.points, z.masses, z.masses
        points = z.qmc_points(self.n_samples, derive_seed(self.search_seed(t), "cvucb-saa"))
        masses = torch.full((self.n_samples,), 1.0 / self.n_samples, dtype=torch.float64)
        return points, masses, z.density(points)

    def propose(self, model: SingleTaskGP, t: int) -> Proposal:
        beta = self.beta(t)
        points, masses, preference = self.support(t)
        score = cvar_upper_function(PosteriorMarginals(model), points, masses, self.problem.alpha, beta)
        x_t, _ = maximize_x(model, score, self.problem.d_x, self.search_seed(t), self.n_raw,
                            self.n_restarts, self.maxiter)
        return self.lacing_step(model, x_t, t, beta, (points, masses, preference))

    def lacing_step(self, model: SingleTaskGP, x_t: Tensor, t: int, beta: float,
                    support: tuple[Tensor, Tensor, Tensor]) -> Proposal:
        """The query at ``x_t`` (``d_x``): z_t, the largest-mass (or, ``lv_rule = "unif"``, a random)
        lacing value at the level alpha_t in (0, alpha] where VaR(u) - VaR(l) at x_t is largest,
        with the bounds' CVaRs at x_t as diagnostics (CV-TS shares this step).

        Args:
            support: the iteration's ``m x d_z`` points, ``m`` masses and ``m`` preferences
                (:meth:`support`).
        """
        points, masses, preference = support
        alpha = self.problem.alpha
        with torch.no_grad():
            l, _, u = PosteriorMarginals(model).grid_bounds(x_t.unsqueeze(0), points, beta)
        l, u = l[0], u[0]
        alpha_t, gap = risk_level(l, u, masses, alpha)
        mask, var_l, var_u = lacing_values(l, u, masses, alpha_t)
        if not mask.any():
            raise LacingValueError(f"no lacing value at x={x_t.tolist()} t={t} level {alpha_t!r}: "
                                   f"VaR(l)={float(var_l)!r}, VaR(u)={float(var_u)!r}")
        index = pick_lacing_value(mask, preference if self.lv_rule == "prob" else None,
                                  self.choice_generator(t))
        cvar_l = float(weighted_cvar(l, masses, alpha))
        info = {"beta": beta, "lv_count": int(mask.sum()), "alpha_t": alpha_t, "var_gap": gap,
                "cvar_upper": float(weighted_cvar(u, masses, alpha)), "cvar_lower": cvar_l}
        return Proposal(x_t, points[index].clone(), info, lower_bound=cvar_l)

    def acquisition_function(self, model: SingleTaskGP, t: int) -> Callable[[Tensor], Tensor]:
        """CVaR_alpha(u_{t-1}(x, Z)) over the iteration's z set."""
        points, masses, _ = self.support(t)
        return cvar_upper_function(PosteriorMarginals(model), points, masses, self.problem.alpha,
                                   self.beta(t))

