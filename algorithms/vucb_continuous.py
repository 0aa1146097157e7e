"""V-UCB under a continuous Z (the paper's Section 3.4): nothing is exact. x_t comes from LNSO
(:mod:`algorithms.lnso`) on pinball-loss estimates of VaR_alpha(u(x, Z)), the end points of its starts
are scored by :func:`algorithms.pinball.estimate_var_pinball`, and z_t from the lacing-value search of
:mod:`algorithms.lacing` with both VaR_alpha(u(x_t, Z)) and VaR_alpha(l(x_t, Z)) estimated; see
:class:`ContinuousSettings`. ``vucb-prob-saa`` (:mod:`algorithms.vucb_saa`) is the sample-average
alternative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Protocol

import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from algorithms.base import Proposal, positive_float, positive_int
from algorithms.gp import PosteriorMarginals
from algorithms.lacing import lacing_value_search
from algorithms.lnso import LNSOSettings, lnso_maximize
from algorithms.pinball import estimate_var_pinball
from problems import ContinuousZ, Problem
from problems.seeding import generator


@dataclass(frozen=True)
class ContinuousSettings:
    """V-UCB's settings for a continuous Z (options of ``vucb-prob``/``vucb-unif``; the LNSO ones
    are the fields of :class:`algorithms.lnso.LNSOSettings`).

    Attributes:
        n_starts: LNSO starts, scrambled Sobol points of the iteration's shared x-search seed
            (authors: 50 grid starts); their end points and the starts are scored and the best
            is x_t.
        var_steps: Adam steps of every pinball-loss VaR estimate (scoring LNSO's end points and
            starts, and VaR of u and l at x_t).
        var_batch: fresh Z draws per step of every pinball-loss VaR estimate.
        lv_starts: starts of the lacing-value search, drawn from p(z) for Prob (near the density's
            peak) and uniformly in the support box for Unif (authors: 100).
        lv_steps: Adam steps of the lacing-value search (authors: 2000).
        lv_lr: learning rate of the lacing-value search (authors: 1e-3).
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


CONTINUOUS_OPTIONS = {f.name for f in fields(ContinuousSettings)} | {
    f.name for f in fields(LNSOSettings)}


class VUCBLike(Protocol):
    """What :func:`continuous_step` reads of the V-UCB that proposes."""

    name: str
    problem: Problem
    seed_root: int
    lv_rule: str
    settings: ContinuousSettings
    lnso: LNSOSettings

    def beta(self, t: int) -> float: ...

    def search_seed(self, t: int) -> int: ...

    def choice_generator(self, t: int) -> torch.Generator: ...


def continuous_step(algorithm: VUCBLike, model: SingleTaskGP, t: int) -> Proposal:
    """V-UCB's proposal under a continuous Z: x_t by LNSO, z_t by the lacing-value search (see the
    module docstring); ``algorithm`` is the :class:`algorithms.vucb.VUCB` that proposes."""
    z_dist = algorithm.problem.z
    assert isinstance(z_dist, ContinuousZ)
    beta, alpha, settings = algorithm.beta(t), algorithm.problem.alpha, algorithm.settings
    width = math.sqrt(beta)
    marginals = PosteriorMarginals(model)
    # one stream per iteration: the draws of an iteration do not depend on earlier ones
    rng = generator(algorithm.seed_root, algorithm.name, "continuous", t)

    def upper(X: Tensor, Z: Tensor) -> Tensor:
        mean, std = marginals.grid(X, Z)
        return mean + width * std

    sobol = torch.quasirandom.SobolEngine(algorithm.problem.d_x, scramble=True, seed=algorithm.search_seed(t))
    starts = sobol.draw(settings.n_starts, dtype=torch.float64)
    ends, trainings = lnso_maximize(upper, z_dist.sample, starts, alpha, algorithm.lnso, rng)
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
    prob = algorithm.lv_rule == "prob"
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
        pick = torch.randint(lv_count, (1,), generator=algorithm.choice_generator(t))
        index = int(candidates_lv[pick])
    info = {"beta": beta, "lv_count": lv_count, "var_upper": var_u, "var_lower": var_l,
            "lnso_trainings": trainings}
    return Proposal(x_t, found.z[index].clone(), info, lower_bound=var_l)
