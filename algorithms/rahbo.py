"""RAHBO (Makarova, Usmanova, Bogunovic & Krause, "Risk-averse Heteroscedastic Bayesian
Optimization", NeurIPS 2021): ``rahbo``, a z-blind baseline that maximizes mean minus gamma times
variance.

RAHBO does not see z: it chooses x only (``chooses_z = False``), and the loop draws each evaluation's
z from Z's distribution (:func:`algorithms.loop.z_blind_draw`), so that y = f(x, Z) + noise is a
noisy evaluation whose variance depends on x, the heteroscedastic noise RAHBO models. It evaluates
each x it chooses k = ``repeats`` times (k evaluations, one per iteration, each counted against the
budget), and from all evaluations so far builds, at each distinct x ("site") with n evaluations,
their mean and their sample variance s^2 (ddof 1), then two GPs of its own (BoTorch's
``SingleTaskGP`` defaults, maximum likelihood):

* the variance GP, on the sample variances of the sites with n >= 2;
* the mean GP, on the sites' means, each with the known noise variance of a mean of n evaluations,
  s^2 / n (a site seen once: the variance GP's mean there, clamped at 1e-6; while no site has two
  evaluations, a GP with one learned noise for all);

and chooses the next x by the risk-averse UCB, argmax_x mu(x) + beta^(1/2) sigma(x) - gamma
(mu_v(x) - beta^(1/2) sigma_v(x)): optimism on the mean, optimism (a lower bound) on the variance.

Source: ``Avidereta/risk-averse-hetero-bo`` (MIT): ``rahbo/acquisition/acquisition.py``
(``RiskAverseUpperConfidenceBound``), ``rahbo/optimization/bo_step.py`` (``bo_step_risk_averse``),
``runner_files/start_experiment.py`` and ``runner_files/configs/branin/branin_rahbo.yaml`` (k =
``repeat_eval`` 10, beta 2, gamma 0.5 or 1, ``optimize_acqf`` with 1 restart from 1000 raw samples).
The facts carry over; the code is our own. How it maps onto this project:

* **The mean's noise.** The released code gives the mean GP the sample variance s^2 itself as the
  noise of a mean of k evaluations (``train_Yvar=yvar``), k times the variance of that mean. The
  default here is s^2 / n (the method: the mean of n independent evaluations); ``mean_noise =
  "released"`` passes s^2 as the released code does.
* **The initial design.** The source starts from 2 x evaluated k times each. Here RAHBO starts from
  the cell's shared initial design (its x, with z drawn from Z), one evaluation each, as every method
  of a cell does: the variance GP exists once two sites have two evaluations or more (before that, one
  site's variance is used as a constant, none as zero).
* **The recommendation.** Scored, like every method, on the cell's risk measure: by default the
  shared rule, the observed x whose posterior mean under the shared (x, z) model has the best exact
  value of the measure (:meth:`Algorithm.recommend`), so that a table compares where the methods
  sampled; ``recommendation = "own"`` takes the site of best mu(x) - gamma mu_v(x), RAHBO's own
  estimate of its mean-variance objective, blind to z as the method is.
* The search: quasi-random scoring of ``n_raw`` x (the source's 1000 raw samples) and L-BFGS-B from
  the best ``n_restarts`` (the source's 1) (:func:`algorithms.search.maximize_x`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import ClassVar

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from algorithms.base import Algorithm, Proposal, Recommendation, positive_float, positive_int, registered
from algorithms.cost import ProblemSize
from algorithms.options import Option
from algorithms.search import maximize_x
from algorithms.vucb_common import check_search_options, search_options, search_seconds
from problems import Problem
from problems.measures import RISKS
from problems.seeding import derive_seed

MEAN_NOISE = ("mean", "released")
RECOMMENDATIONS = ("shared", "own")
#: The smallest noise variance a site's mean is given (a site whose evaluations happen to agree).
MIN_NOISE = 1e-6


def site_statistics(train_X: Tensor, train_Y: Tensor, d_x: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The distinct x of the data (``s x d_x``, in order of first appearance), their evaluation
    counts n (``s``), means (``s``) and sample variances (``s``, ddof 1; NaN where n = 1)."""
    xs, y = train_X[:, :d_x], train_Y.reshape(-1)
    sites, inverse = torch.unique(xs, dim=0, return_inverse=True)
    first = torch.full((sites.shape[0],), xs.shape[0], dtype=torch.long)
    first = first.scatter_reduce(0, inverse, torch.arange(xs.shape[0]), reduce="amin")
    order = torch.argsort(first)  # first appearance, so that the sites' order does not depend on x
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.shape[0])
    index = rank[inverse]
    count = torch.bincount(index, minlength=sites.shape[0]).to(y)
    total = torch.zeros_like(count).index_add_(0, index, y)
    mean = total / count
    squares = torch.zeros_like(count).index_add_(0, index, (y - mean[index]) ** 2)
    variance = torch.where(count > 1, squares / (count - 1).clamp_min(1), torch.nan)
    return sites[order], count, mean, variance


def fit(model: SingleTaskGP, seed: int) -> SingleTaskGP:
    """Maximum likelihood (BoTorch's ``fit_gpytorch_mll``; its retries draw from torch's generator,
    seeded here inside ``fork_rng``)."""
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        torch.manual_seed(seed % 2**63)
        warnings.simplefilter("ignore")  # BoTorch's input-scaling and optimizer warnings
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model.eval()


#: The x-search's options at the source's effort: 1000 raw x, one L-BFGS-B start.
_SEARCH = tuple(
    replace(o, default=1, meaning="L-BFGS-B starts, the best-scored of those x (the source's 1).")
    if o.name == "n_restarts" else
    replace(o, meaning="scrambled Sobol x scored by the risk-averse UCB per choice of x before "
                       "L-BFGS-B (unset: 1000, the source's raw samples).")
    if o.name == "n_raw" else o
    for o in search_options())


@registered
class RAHBO(Algorithm):
    """RAHBO: x by the risk-averse UCB of its mean and variance GPs, evaluated ``repeats`` times,
    z drawn by the loop from Z (module docstring).

    Its options are declared in :attr:`options`.
    """

    name = "rahbo"
    chooses_z = False
    risks = frozenset(RISKS)
    source = ('Makarova, Usmanova, Bogunovic & Krause, "Risk-averse Heteroscedastic Bayesian Optimization", '
              "NeurIPS 2021; `Avidereta/risk-averse-hetero-bo` (MIT): `rahbo/acquisition/acquisition.py` "
              "`RiskAverseUpperConfidenceBound`, `rahbo/optimization/bo_step.py`, "
              "`runner_files/start_experiment.py`, `runner_files/configs/branin/branin_rahbo.yaml`")
    deviations = (
        "Run z-blind on (x, z) problems: the loop draws each evaluation's z from Z, so the spread of "
        "f(x, Z) is the heteroscedastic noise, and each of an x's k = 10 evaluations is one iteration.",
        "The mean GP's noise at a site of n evaluations is s^2 / n, where the released code passes s^2 "
        "itself: `mean_noise=\"released\"`.",
        "It starts from the cell's shared initial design, one evaluation each, where the source starts from "
        "2 x evaluated k times each.",
        "The recommendation is the shared rule on the cell's risk measure (`recommendation=\"own\"`: the "
        "site of best mu - gamma mu_v, RAHBO's own estimate).",
    )

    options: ClassVar[tuple[Option, ...]] = (
        Option("repeats", int, 10, "k, the evaluations of each chosen x, one an iteration (the "
               "source's ``repeat_eval``, 10).", low=1),
        Option("beta", float, 2.0, "the bounds' width: mu + beta^(1/2) sigma for the mean, mu_v - "
               "beta^(1/2) sigma_v for the variance (the source's 2).", low=0, low_open=True),
        Option("gamma", float, 1.0, "the weight of the variance in mean - gamma variance (the source's "
               "configurations: 0.5 and 1).", low=0),
        Option("mean_noise", str, "mean", "the noise of a site's mean of n evaluations: ``\"mean\"``, "
               "s^2 / n; ``\"released\"``, s^2 (the released code).", choices=MEAN_NOISE),
        Option("recommendation", str, "shared", "``\"shared\"``, the shared rule on the cell's risk "
               "measure; ``\"own\"``, the site of best mu - gamma mu_v.", choices=RECOMMENDATIONS),
        *_SEARCH,
    )

    @classmethod
    def iteration_seconds(cls, size: ProblemSize, options: Mapping[str, object]) -> float:
        """See :mod:`algorithms.cost`: two GP fits and a search of two GPs, once every ``repeats``
        iterations (about 0.4 s on a 2-D x with 1000 raw x; the repeats cost nothing)."""
        search = search_seconds({**options, "n_raw": options["n_raw"] or 1000}, size.d_x, 0.05)
        return (0.3 + search) / options["repeats"]

    def __init__(self, problem: Problem, seed_root: int, risk: str = "var", repeats: int = 10,
                 beta: float = 2.0, gamma: float = 1.0, mean_noise: str = "mean",
                 recommendation: str = "shared", n_raw: int | None = None, n_restarts: int = 1,
                 maxiter: int = 200) -> None:
        super().__init__(problem, seed_root, risk=risk)
        self.repeats = positive_int(self.name, "repeats", repeats)
        self.beta = positive_float(self.name, "beta", beta)
        if isinstance(gamma, bool) or not isinstance(gamma, int | float) or not 0 <= gamma < math.inf:
            raise ValueError(f"{self.name}: gamma must be a number >= 0, got {gamma!r}")
        self.gamma = float(gamma)
        for key, value, valid in (("mean_noise", mean_noise, MEAN_NOISE),
                                  ("recommendation", recommendation, RECOMMENDATIONS)):
            if value not in valid:
                raise ValueError(f"{self.name}: {key} must be one of {', '.join(valid)}, got {value!r}")
        self.mean_noise, self.recommendation = mean_noise, recommendation
        check_search_options(self.name, n_raw, n_restarts, maxiter)
        self.n_raw, self.n_restarts, self.maxiter = n_raw or 1000, n_restarts, maxiter
        self.data: tuple[Tensor, Tensor] | None = None
        self.current: Tensor | None = None  # the x being evaluated, and how many evaluations remain
        self.remaining = 0
        self.chosen: dict = {}  # the info of the x being evaluated

    def observe(self, train_X: Tensor, train_Y: Tensor) -> None:
        self.data = (train_X, train_Y)

    def models(self, seed: int) -> tuple[Tensor, SingleTaskGP, Callable[[Tensor], tuple[Tensor, Tensor]]]:
        """The sites, the mean GP and the variance model (x -> mean, std of the variance, each
        ``b``), fitted to the data given by :meth:`observe`."""
        train_X, train_Y = self.data
        sites, count, mean, variance = site_statistics(train_X, train_Y, self.problem.d_x)
        repeated = count > 1
        if int(repeated.sum()) >= 2:
            var_gp = fit(SingleTaskGP(sites[repeated], variance[repeated].unsqueeze(-1)),
                         derive_seed(seed, "variance"))

            def variance_model(X: Tensor) -> tuple[Tensor, Tensor]:
                posterior = var_gp.posterior(X.unsqueeze(-2))
                return posterior.mean.reshape(X.shape[:-1]), posterior.variance.reshape(X.shape[:-1]).sqrt()
        else:  # one site's variance as a constant, none as zero
            constant = variance[repeated].sum() if bool(repeated.any()) else mean.new_zeros(())

            def variance_model(X: Tensor) -> tuple[Tensor, Tensor]:
                return constant.expand(X.shape[:-1]), constant.new_zeros(X.shape[:-1])

        if bool(repeated.any()):
            noise = torch.where(repeated, variance, variance_model(sites)[0].detach())
            if self.mean_noise == "mean":
                noise = torch.where(repeated, noise / count, noise)
            mean_gp = SingleTaskGP(sites, mean.unsqueeze(-1), noise.clamp_min(MIN_NOISE).unsqueeze(-1))
        else:
            mean_gp = SingleTaskGP(sites, mean.unsqueeze(-1))
        return sites, fit(mean_gp, derive_seed(seed, "mean")), variance_model

    def score_function(self, mean_gp: SingleTaskGP, variance_model: Callable) -> Callable[[Tensor], Tensor]:
        """x -> mu(x) + beta^(1/2) sigma(x) - gamma (mu_v(x) - beta^(1/2) sigma_v(x)): ``b x d_x``
        -> ``b``."""
        width = math.sqrt(self.beta)

        def score(X: Tensor) -> Tensor:
            posterior = mean_gp.posterior(X.unsqueeze(-2))
            mu, sigma = posterior.mean.reshape(X.shape[:-1]), posterior.variance.reshape(X.shape[:-1]).sqrt()
            mu_v, sigma_v = variance_model(X)
            return mu + width * sigma - self.gamma * (mu_v - width * sigma_v)

        return score

    def propose(self, model: SingleTaskGP, t: int) -> Proposal:
        if self.remaining == 0:
            _, mean_gp, variance_model = self.models(derive_seed(self.seed_root, "rahbo", t))
            score = self.score_function(mean_gp, variance_model)
            self.current, value = maximize_x(mean_gp, score, self.problem.d_x, self.search_seed(t),
                                             self.n_raw, self.n_restarts, self.maxiter)
            self.remaining, self.chosen = self.repeats, {"rahbo_ucb": value, "repeat": 0}
        self.remaining -= 1
        info = {**self.chosen, "repeat": self.repeats - 1 - self.remaining}
        return Proposal(self.current.clone(), None, info)

    def recommend(self, model: SingleTaskGP, train_X: Tensor) -> Recommendation:
        """The shared rule, or (``recommendation = "own"``) the site of best mu - gamma mu_v."""
        if self.recommendation == "shared":
            return super().recommend(model, train_X)
        sites, mean_gp, variance_model = self.models(derive_seed(self.seed_root, "rahbo-rec", len(train_X)))
        with torch.no_grad():
            mu = mean_gp.posterior(sites.unsqueeze(-2)).mean.reshape(-1)
            values = mu - self.gamma * variance_model(sites)[0]
        i = int(values.argmax())
        return Recommendation(sites[i].clone(), {"mean_variance_rec": float(values[i])})

    def state_dict(self) -> dict:
        """The stream's state and the x being evaluated with its evaluations remaining."""
        return {**super().state_dict(), "current": self.current, "remaining": self.remaining,
                "chosen": dict(self.chosen)}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.current, self.remaining = state["current"], state["remaining"]
        self.chosen = dict(state["chosen"])
