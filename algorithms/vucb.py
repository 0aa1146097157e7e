"""V-UCB (Nguyen et al., 2021, Algorithm 1): ``vucb-unif`` and ``vucb-prob``.

x_t = argmax_x VaR_alpha(u_{t-1}(x, Z)), exact over the support (a weighted lower quantile), found
by :func:`algorithms.search.maximize_x`; z_t is a lacing value (Definition 1):

    l_{t-1}(x_t, z) <= VaR_alpha(l_{t-1}(x_t, Z))  and  u_{t-1}(x_t, z) >= VaR_alpha(u_{t-1}(x_t, Z)),

uniformly at random among them (Unif) or the one of largest mass (Prob). Theorem 1 says the set is
never empty; if it ever is, :class:`LacingValueError` says so with the numbers.

With a continuous Z (the paper's Section 3.4) nothing is exact: x_t comes from LNSO
(:mod:`algorithms.lnso`) on pinball-loss estimates of VaR_alpha(u(x, Z)), the end points of its
starts are scored by :func:`algorithms.pinball.estimate_var_pinball`, and z_t from the lacing-value
search of :mod:`algorithms.lacing` with both VaR_alpha(u(x_t, Z)) and VaR_alpha(l(x_t, Z))
estimated; see :class:`ContinuousSettings`. ``vucb-prob-saa`` (:mod:`algorithms.vucb_saa`) is the
sample-average alternative.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields

import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from algorithms.base import Algorithm, Proposal, Recommendation, positive_float, positive_int
from algorithms.gp import PosteriorMarginals, beta_paper
from algorithms.lacing import lacing_value_search
from algorithms.lnso import LNSOSettings, lnso_maximize
from algorithms.pinball import estimate_var_pinball
from algorithms.search import maximize_x
from problems import DiscreteZ, Problem, TruncatedNormalZ
from problems.risk import weighted_var
from problems.seeding import generator

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


@dataclass(frozen=True)
class ContinuousSettings:
    """V-UCB's settings for a continuous Z (options of ``vucb-prob``/``vucb-unif``; the LNSO ones
    are the fields of :class:`algorithms.lnso.LNSOSettings`).

    Attributes:
        n_starts: LNSO starts, scrambled Sobol points of the iteration's shared x-search seed
            (authors: 50 grid starts).
        var_steps, var_batch: Adam steps and fresh Z draws per step of every pinball-loss VaR
            estimate (scoring LNSO's end points, and VaR of u and l at x_t).
        lv_starts: starts of the lacing-value search, drawn from p(z) for Prob (near the density's
            peak) and uniformly in the support box for Unif (authors: 100).
        lv_steps, lv_lr: its Adam steps and learning rate (authors: 2000 steps at 1e-3).
    """

    n_starts: int = 5
    var_steps: int = 150
    var_batch: int = 256
    lv_starts: int = 100
    lv_steps: int = 200
    lv_lr: float = 1e-2

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "lv_lr":
                positive_float("V-UCB", f.name, value)
            else:
                positive_int("V-UCB", f.name, value)


_CONTINUOUS_OPTIONS = {f.name for f in fields(ContinuousSettings)} | {
    f.name for f in fields(LNSOSettings)}

#: Equal-mass grid per axis on which VaR_alpha(mu(x, Z)) is taken for the recommendation under a
#: continuous Z (quantile level within 1 / n per axis), by d_z.
RECOMMEND_GRID = {1: 512, 2: 32}


class VUCB(Algorithm):
    """V-UCB.

    Options:
        beta: ``"paper"`` (default), ``"authors"`` or a positive constant; see :func:`beta_schedule`.
        n_raw: quasi-random x scored per iteration (default 256 per dimension of x).
        n_restarts: L-BFGS-B starts (default 5).
        maxiter: L-BFGS-B iterations (default 200).
        With a continuous Z instead of the last three: the fields of :class:`ContinuousSettings`
        and :class:`algorithms.lnso.LNSOSettings`.
    """

    name = "vucb"
    z_sample_options = ("n_z", "var_batch")  # LNSO's Z draws per training step; pinball batches

    @classmethod
    def proposal_cost(cls, z_kind: str) -> tuple[float, float, float, float]:
        """See :meth:`Algorithm.proposal_cost`; LNSO on a continuous Z (e.g. 358 s a proposal at
        |D| = 160, |Dz| = 1024), the exact search on a discrete one (2.4 s there); fitted by eye to
        probes on the development machine."""
        return (2.0, 5.6, 1.0, 1.0) if z_kind == "continuous" else (0.05, 0.12, 0.5, 1.0)
    lv_rule = "prob"

    def __init__(self, problem: Problem, seed_root: int, beta: str | float = "paper",
                 n_raw: int | None = None, n_restarts: int = 5, maxiter: int = 200,
                 **continuous: object) -> None:
        if isinstance(problem.z, DiscreteZ) and continuous:
            raise TypeError(f"{self.name}: unknown option(s) {', '.join(sorted(continuous))}")
        unknown = set(continuous) - _CONTINUOUS_OPTIONS
        if unknown:
            raise TypeError(f"{self.name}: unknown option(s) {', '.join(sorted(unknown))}")
        super().__init__(problem, seed_root)
        self.beta = beta_schedule(beta)
        if not isinstance(problem.z, DiscreteZ):
            lnso_names = {f.name for f in fields(LNSOSettings)}
            self.lnso = LNSOSettings(**{k: v for k, v in continuous.items() if k in lnso_names})
            self.settings = ContinuousSettings(
                **{k: v for k, v in continuous.items() if k not in lnso_names})
            return
        self.z = require_discrete(problem, self.name)
        check_search_options(self.name, n_raw, n_restarts, maxiter)
        self.n_raw = n_raw or 256 * problem.d_x
        self.n_restarts = n_restarts
        self.maxiter = maxiter

    def propose(self, model: SingleTaskGP, t: int) -> Proposal:
        if not isinstance(self.problem.z, DiscreteZ):
            return self.propose_continuous(model, t)
        beta = self.beta(t)
        points, masses = self.z.points, self.z.masses
        x_t, mask, var_l, var_u = discrete_step(model, points, masses, self.problem.alpha, beta,
                                                self.problem.d_x, self.search_seed(t), self.n_raw,
                                                self.n_restarts, self.maxiter, t)
        preference = masses if self.lv_rule == "prob" else None
        index = pick_lacing_value(mask, preference, self.choice_generator(t))
        info = {"beta": beta, "lv_count": int(mask.sum()), "var_upper": var_u, "var_lower": var_l}
        return Proposal(x_t, points[index].clone(), info, lower_bound=var_l)

    def acquisition_function(self, model: SingleTaskGP, t: int) -> Callable[[Tensor], Tensor] | None:
        """VaR_alpha(u_{t-1}(x, Z)) over the discrete support (None for a continuous Z: LNSO)."""
        if not isinstance(self.problem.z, DiscreteZ):
            return None
        return var_upper_function(PosteriorMarginals(model), self.z.points, self.z.masses,
                                  self.problem.alpha, self.beta(t))

    def propose_continuous(self, model: SingleTaskGP, t: int) -> Proposal:
        """x_t by LNSO, z_t by the lacing-value search (see the module docstring)."""
        z_dist = self.problem.z
        assert isinstance(z_dist, TruncatedNormalZ)
        beta, alpha, settings = self.beta(t), self.problem.alpha, self.settings
        width = math.sqrt(beta)
        marginals = PosteriorMarginals(model)
        # one stream per iteration: the draws of an iteration do not depend on earlier ones
        rng = generator(self.seed_root, self.name, "continuous", t)

        def upper(X: Tensor, Z: Tensor) -> Tensor:
            mean, std = marginals.grid(X, Z)
            return mean + width * std

        sobol = torch.quasirandom.SobolEngine(self.problem.d_x, scramble=True, seed=self.search_seed(t))
        starts = sobol.draw(settings.n_starts, dtype=torch.float64)
        ends, trainings = lnso_maximize(upper, z_dist.sample, starts, alpha, self.lnso, rng)
        # score every end point (and start: LNSO may have wandered off a good start) by the pinball
        # estimate of VaR_alpha(u(x, Z)), all in one batch
        candidates = torch.cat([ends, starts])
        scores = estimate_var_pinball(lambda n, g: upper(candidates, z_dist.sample(n, g)), alpha, rng,
                                      settings.var_steps, settings.var_batch)
        x_t = candidates[int(scores.argmax())].clone()

        def bounds(Z: Tensor) -> tuple[Tensor, Tensor]:
            mean, std = marginals.grid(x_t.unsqueeze(0), Z)
            return (mean - width * std)[0], (mean + width * std)[0]

        var_l, var_u = estimate_var_pinball(lambda n, g: torch.stack(bounds(z_dist.sample(n, g))),
                                            alpha, rng, settings.var_steps, settings.var_batch).tolist()
        prob = self.lv_rule == "prob"
        lv_starts = (z_dist.sample(settings.lv_starts, rng) if prob
                     else z_dist.sample_support(settings.lv_starts, rng))
        found = lacing_value_search(bounds, var_l, var_u, z_dist.density, lv_starts, z_dist.lower,
                                    z_dist.upper, settings.lv_steps, settings.lv_lr, prob)
        lv_count = int(found.found.sum())
        if lv_count == 0:  # the estimated VaRs may err; the least violating z, reported as such
            index = int(found.loss.argmin())
        elif prob:
            index = int(torch.where(found.found, found.density, -torch.inf).argmax())
        else:
            candidates_lv = torch.nonzero(found.found).squeeze(-1)
            pick = torch.randint(lv_count, (1,), generator=self.choice_generator(t))
            index = int(candidates_lv[pick])
        info = {"beta": beta, "lv_count": lv_count, "var_upper": var_u, "var_lower": var_l,
                "lnso_trainings": trainings}
        return Proposal(x_t, found.z[index].clone(), info, lower_bound=var_l)

    def recommend(self, model: SingleTaskGP, train_X: Tensor) -> Recommendation:
        return recommend_by_mean_var(self.problem, model, self.observed_x(train_X))


def recommend_by_mean_var(problem: Problem, model: SingleTaskGP, xs: Tensor) -> Recommendation:
    """argmax over ``xs`` (``k x d_x``) of VaR_alpha(mu_{t-1}(x, Z)), the paper's experiments' rule.

    A continuous Z is replaced by its equal-mass grid (:data:`RECOMMEND_GRID`).
    """
    if isinstance(problem.z, DiscreteZ):
        z = problem.z
    else:
        z = problem.z.equal_mass_grid(RECOMMEND_GRID.get(problem.d_z, 10))  # 10^d_z beyond d_z = 2
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
