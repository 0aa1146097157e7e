"""rho-KG^apx (Cakmak et al., 2020, "Bayesian Optimization of Risk Measures"), as BoRisk implements
it, in the maximization form of the VaR paper (BoRisk minimizes -f at level 1 - alpha).

The pieces (docs/conventions.md section 7):

* risk estimate E_n[VaR_alpha(F(x', W))]: M joint posterior samples of f over {x'} x W, drawn as
  mean + chol(cov) eps with fixed quasi-random normal ``eps``, the weighted VaR of each, averaged;
* acquisition value of a candidate c = (x, w): K fantasy observations y_k at c; for each fantasy
  the best E_{n+1}[VaR] over S = {x} union the distinct past x; mean over fantasies minus the
  current best, max over past x of E_n[VaR];
* candidate search: raw samples (500 d) scored with fewer fantasies (4), 10 d restarts drawn with
  Boltzmann weights on the z-scores (eta = 2, the best always kept), L-BFGS-B for 40 iterations in
  batches of 5, then 1000 iterations from the best tenth; for a discrete W every raw sample gets a
  random support point w that stays fixed while x moves; two-time-scale: the argmax over S per
  fantasy is re-searched only every 10th call and reused in between;
* recommendation: argmax over past x of E_n[VaR].

Where the pieces are: this module holds the algorithm (:class:`RhoKGApx`, :class:`RhoKGApxReleased`:
the per-iteration randomness, the candidate search, the recommendation), BoRisk's released CVaR
formulas and the cost model; :mod:`algorithms.rhokg_estimator` the batched estimator
(:class:`FastRhoKG`) and its sampling pieces; :mod:`algorithms.rhokg_acquisition` the BoTorch
acquisition with the two-time-scale memory (:class:`RhoKGAcquisition`);
:mod:`algorithms.rhokg_reference` the straightforward reference the estimator is tested against.
``FastRhoKG``, ``RhoKGAcquisition`` and ``WSet`` are also importable from here.

Speed. After one fantasy observation at c every fantasy model has the same posterior covariance
and only the means differ; :class:`FastRhoKG` batches every estimate on that, and the acquisition
skips the past x' that provably cannot hold the max over S, which leaves every value and gradient
bit for bit unchanged and makes a proposal 2-4 times faster on a discrete Z (the details in
:mod:`algorithms.rhokg_estimator`).

Where this differs from BoRisk's code, on purpose: the refinement starts from the *best* tenth of
the first-phase solutions (BoRisk's ``optimize_outer`` sorts ascending and keeps the worst tenth,
contradicting its own docstring and paper); the two-time-scale memory is reset at every batch of
restarts (BoRisk carries it across batches, so a batch may start from another batch's argmaxes);
the Cholesky jitter is a fixed 1e-8 of the mean variance instead of GPyTorch's add-on-failure
jitter, so that the fast and the reference estimators are the same function.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from typing import ClassVar

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.generation.gen import gen_candidates_scipy
from botorch.models import SingleTaskGP
from botorch.utils.sampling import draw_sobol_normal_samples
from torch import Tensor

from algorithms.base import Algorithm, Proposal, Recommendation, positive_float, positive_int, registered
from algorithms.cost import ProblemSize
from algorithms.gp import CELL_GP
from algorithms.options import Option, with_defaults
from algorithms.rhokg_acquisition import FixedW, RhoKGAcquisition
from algorithms.rhokg_estimator import FastRhoKG, Measure, WSet
from problems import DiscreteZ, Problem
from problems.measures import risk_measure
from problems.seeding import derive_seed, generator

#: The public names; ``FastRhoKG``, ``RhoKGAcquisition``, ``WSet`` and ``Measure`` live in
#: :mod:`algorithms.rhokg_estimator` and :mod:`algorithms.rhokg_acquisition` and are re-exported.
__all__ = ["ACQ_WEIGHTS", "CVAR_FORMULAS", "REFINE", "RELEASED_MEASURES", "RHOKG_CONVERGED",
           "RHOKG_EVALUATION_S", "RHOKG_FIXED_S", "TTS_RESET", "FastRhoKG", "Measure", "RhoKGAcquisition",
           "RhoKGApx", "RhoKGApxReleased", "WSet", "borisk_cvar_equal", "borisk_cvar_equal_weights",
           "borisk_cvar_weighted", "measures",
           "rhokg_evaluations"]


def borisk_cvar_equal(values: Tensor, masses: Tensor, alpha: float) -> Tensor:
    """CVaR as BoRisk's ``InnerRho`` computes it without weights (its acquisition, which never
    receives the weights): the equal-weight mean of the n - int(n alpha_B) smallest values, alpha_B =
    1 - alpha its upper-tail level (``samples[..., int(num_samples * alpha):]`` of -f sorted
    ascending). ``masses`` is ignored. It differs from CVaR_alpha where n alpha is not an integer:
    the boundary value weighs 1/n instead of alpha - C_k, and the mean divides by k/n instead of
    alpha (64 points at alpha = 0.1: the 7 smallest, where CVaR weighs 6.4 of them)."""
    n = values.shape[-1]
    k = n - int(n * (1.0 - alpha))  # BoRisk's int() of a float product, kept as it is
    return torch.topk(values, k, dim=-1, largest=False).values.mean(-1)


def borisk_cvar_equal_weights(values: Tensor, masses: Tensor, alpha: float) -> Tensor:
    """The weights at which :func:`borisk_cvar_equal` is attained: 1 / k on its k smallest values,
    zero elsewhere (``masses`` ignored, as there). That measure is the minimum over every k of the
    values of their mean, so these weights bound it from above anywhere (rho-KG^apx's pruning)."""
    n = values.shape[-1]
    k = n - int(n * (1.0 - alpha))
    index = torch.topk(values.detach(), k, dim=-1, largest=False).indices
    return torch.zeros_like(values).scatter_(-1, index, 1.0 / k)


def borisk_cvar_weighted(values: Tensor, masses: Tensor, alpha: float) -> Tensor:
    """CVaR as BoRisk's ``InnerRho`` computes it with weights (its current best and recommendation):
    with -f sorted ascending and its weights accumulated, every point whose cumulative weight is
    >= alpha_B = 1 - alpha is in the tail, with its whole weight, and the sum is divided by the
    tail's weight. In f's terms: the points whose mass strictly below them is <= alpha, averaged by
    their masses; the VaR point keeps its whole mass instead of alpha - C_k, and where C_k = alpha
    exactly the next point is in too."""
    order = torch.argsort(values.detach(), dim=-1, descending=True, stable=True)  # -f ascending
    ordered = torch.gather(values, -1, order)
    weights = torch.gather(masses.expand_as(values), -1, order)
    tail = (torch.cumsum(weights, dim=-1) >= 1.0 - alpha).to(values.dtype)  # BoRisk: no tolerance
    return (ordered * weights * tail).sum(-1) / (weights * tail).sum(-1)


#: BoRisk's released formulas where they differ from the exact measure: (the acquisition's, the
#: current best's and recommendation's, and the weights at which the acquisition's is attained, see
#: :func:`measures`). VaR has none: BoRisk's equals the definition (int(n alpha_B) is the lower
#: quantile's order statistic).
RELEASED_MEASURES: dict[str, tuple[Measure, Measure, Measure]] = {
    "cvar": (borisk_cvar_equal, borisk_cvar_weighted, borisk_cvar_equal_weights)}


def measures(risk: str, formula: str) -> tuple[Measure, Measure, Measure | None]:
    """The acquisition's measure, the current best's and recommendation's, and, where the
    acquisition's is coherent (a minimum of expectations), the weights at which it is attained
    (:class:`FastRhoKG`'s ``attained``, which tightens its pruning; None for VaR): for the cell's
    risk measure and ``cvar_formula``, the exact one (:mod:`problems.measures`), or BoRisk's
    released formulas where it has its own (:data:`RELEASED_MEASURES`)."""
    if formula == "released" and risk in RELEASED_MEASURES:
        return RELEASED_MEASURES[risk]
    exact = risk_measure(risk)
    return exact.of_distribution, exact.of_distribution, exact.weights if exact.coherent else None


#: Values of the options that choose between the method and BoRisk's released code (first: default).
ACQ_WEIGHTS = ("mass", "uniform")
REFINE = ("best", "worst")
TTS_RESET = ("batch", "iteration")
CVAR_FORMULAS = ("exact", "released")

#: Where rho-KG^apx comes from (docs/conventions.md section 7).
SOURCE = ("`saitcakmak/BoRisk` (no license stated; read only), `BoRisk/acquisition/acquisition.py`, "
          "`BoRisk/acquisition/inner_rho.py`, `BoRisk/optimization/optimizer.py`, `BoRisk/experiment.py`; "
          'Cakmak, Astudillo, Frazier & Zhou, "Bayesian Optimization of Risk Measures", NeurIPS 2020')
#: How both classes differ from BoRisk's code, whichever behaviours run (see the module docstring).
COMMON_DEVIATIONS = (
    f"{CELL_GP}: BoRisk's (Matern-5/2 with Gamma priors, refit every iteration) is `--gp borisk`.",
    "The estimates are batched on the fantasy models' one shared posterior covariance (a rank-one update) "
    "and agree to rounding with a per-candidate port on BoTorch's `condition_on_observations`.",
    "The Cholesky jitter is a fixed 1e-8 of the mean variance, not GPyTorch's jitter added on failure.",
)
#: Where the method (``rhokg-apx``'s defaults) departs from BoRisk's released code, and the option
#: that gives the released behaviour (docs/reference/algorithms.md, "the method and the released code").
METHOD_DEVIATIONS = (
    "The acquisition's inner VaR weighs W by the masses of Z, which BoRisk's released code ignores "
    "(`AbsKG.__init__` tests `kwargs.get(\"weights\")`): `acq_weights=\"uniform\"`.",
    "The second phase refines the best tenth of the first phase's solutions, where BoRisk's "
    "`optimize_outer` refines the worst tenth: `refine=\"worst\"`.",
    "The two-time-scale memory is reset before every batch of restarts, where BoRisk resets it once a "
    "phase: `tts_reset=\"iteration\"`.",
    "CVaR is the lower-tail mean in every estimate, where BoRisk's `InnerRho(CVaR=True)` averages an "
    "equal-weight count in the acquisition and whole VaR atoms in the current best: "
    "`cvar_formula=\"released\"`.",
)


#: rho-KG^apx's fixed seconds an iteration (base samples, the current best, the recommendation).
RHOKG_FIXED_S = 0.3
#: rho-KG^apx's seconds per acquisition evaluation weighted by :func:`rhokg_evaluations`, at |W| = 100,
#: M = 10 and 40 observations (the cost grows about as |W|^(1/2) and with the data, the past x of S):
#: calibrated so that the paper grid's rho-KG^apx cells keep the estimate of the table it replaced
#: (3.0-5.1 s an iteration on the discrete synthetic problems, 12 s on portfolio and 10 s on robot
#: pushing). The model gives 2.7 s on Branin, 4.7 s on Hartmann-(2,1), 11.2 s on portfolio and
#: 12.0 s on robot pushing; their paper-grid cells measured 2.8, 3.5, 10.6 and 9.4 s (means of 6-10
#: seeds on a shared machine).
RHOKG_EVALUATION_S = 2.62e-4
#: The acquisition evaluations a rho-KG^apx start typically makes before L-BFGS-B converges, in the
#: first phase and in the second (counted at the paper's settings on Branin: 708 an iteration in all).
RHOKG_CONVERGED = (25, 100)


def rhokg_evaluations(d: int, options: Mapping[str, object]) -> float:
    """The acquisition evaluations of one rho-KG^apx proposal in (x, w) of dimension ``d``, each
    counted once per fantasy: the raw candidates (restarts_per_dim x d x raw_per_restart) at
    ``low_fantasies``, then the restarts' L-BFGS-B evaluations at ``num_fantasies``: every restart for
    at most maxiter / 25 steps, the refined tenth for at most ``maxiter``, a few evaluations a step,
    both stopping sooner when they converge (:data:`RHOKG_CONVERGED`). Measured by counting in
    ``tests/algorithms/test_options.py``."""
    restarts = options["restarts_per_dim"] * d
    raw = restarts * options["raw_per_restart"]
    first = min(1 + 3 * (options["maxiter"] // 25), RHOKG_CONVERGED[0])  # a few evaluations a step
    second = min(1 + 2 * options["maxiter"], RHOKG_CONVERGED[1])
    low = min(options["low_fantasies"], options["num_fantasies"])
    return low * raw + options["num_fantasies"] * (restarts * first + math.ceil(restarts / 10) * second)


@registered
class RhoKGApx(Algorithm):
    """rho-KG^apx, for VaR or CVaR. The defaults are BoRisk's paper settings; the last four options
    choose between the method (their default) and what BoRisk's released code does where it departs
    from the method (see the module docstring and :class:`RhoKGApxReleased`).

    Its options are declared in :attr:`options`.
    """

    name = "rhokg-apx"
    risks = frozenset({"var", "cvar"})
    source = SOURCE
    deviations = (*METHOD_DEVIATIONS, *COMMON_DEVIATIONS)
    candidates = "xz"  # its acquisition moves (x, w)
    evaluation_batch = 4  # a value costs 100-1000 times V-UCB's per x
    z_sample_options = ("num_w_samples",)

    @classmethod
    def proposal_cost(cls, z_kind: str) -> tuple[float, float, float, float]:
        """See :meth:`Algorithm.proposal_cost`: at the complexity study's reduced effort (0.29 s at
        |D| = 40, |Dz| = 64 and 1.4 s at 40 x 256 on the development machine)."""
        return (0.05, 0.3, 1.0, 1.5)

    @classmethod
    def reduced_options(cls, z_kind: str) -> dict | None:
        """See :meth:`Algorithm.reduced_options`: fewer restarts and raw samples, at most 100 L-BFGS-B
        iterations (K, M and the two-time-scale rule unchanged). At BoRisk's settings one iteration
        takes 10 to 30 s, which alone would exceed the smoke grid's budget; this is about 0.5 s."""
        return {"restarts_per_dim": 2, "raw_per_restart": 10, "maxiter": 100}

    #: The name the random streams are derived from: variants of the method share rho-KG^apx's
    #: base samples and search starts (common random numbers), so they differ only by their options.
    stream_name = "rhokg-apx"

    options: ClassVar[tuple[Option, ...]] = (
        Option("num_fantasies", int, 10, "K, fantasy observations at a candidate (x, w).", low=1),
        Option("num_samples", int, 10, "M, joint posterior samples of f over W in every estimate of "
               "E[VaR].", low=1),
        Option("low_fantasies", int, 4, "fantasies used to score the raw candidates (at most "
               "``num_fantasies``).", low=1),
        Option("restarts_per_dim", int, 10, "L-BFGS-B restarts per dimension of (x, w), d_x + d_z.", low=1),
        Option("raw_per_restart", int, 50, "raw scrambled Sobol candidates (x, w) scored per restart; the "
               "restarts are drawn from them.", low=1),
        Option("eta", float, 2.0, "the restarts are drawn with weights exp(eta z) on the raw candidates' "
               "z-scores, the best always kept (0: uniformly).", low=0),
        Option("maxiter", int, 1000, "L-BFGS-B iterations of the second phase, which refines a tenth of "
               "the first phase's solutions (see ``refine``); the first phase runs maxiter / 25, rounded "
               "down.", low=1),
        Option("batch_size", int, 5, "first-phase restarts optimized together as one L-BFGS-B problem.",
               low=1),
        Option("tts_frequency", int, 10, "two-time-scale: the argmax over S of each fantasy is searched at "
               "every tts_frequency-th evaluation and reused in between (1: at every evaluation).", low=1),
        Option("num_w_samples", int, 10, "L, samples of Z drawn once per iteration as the W of every "
               "estimate (a discrete Z's W is its support).", low=1, z_kind="continuous"),
        Option("acq_weights", str, ACQ_WEIGHTS[0], "``\"mass\"``: the acquisition's inner VaR weights W by "
               "the masses of Z; ``\"uniform\"``: it ignores them, as BoRisk's ``AbsKG.__init__`` does by "
               "testing ``kwargs.get(\"weights\")`` for a named parameter (the recommendation and the "
               "current best keep the masses, as BoRisk's ``current_best`` does). The same for a "
               "continuous Z, whose L samples have equal weights anyway.", choices=ACQ_WEIGHTS),
        Option("refine", str, REFINE[0], "``\"best\"``: refine the best tenth of the first-phase "
               "solutions; ``\"worst\"``: the lowest-valued tenth, as BoRisk's ``optimize_outer`` does by "
               "sorting ascending.", choices=REFINE),
        Option("tts_reset", str, TTS_RESET[0], "``\"batch\"``: the two-time-scale memory is reset before "
               "every batch of restarts and before the values at the solutions are taken, which then "
               "come from a fresh search over S; ``\"iteration\"``: reset only at the start of each of "
               "the two phases, as BoRisk's ``optimize_outer`` does (a batch starts from the previous "
               "batch's remembered argmaxes, and the values that rank the solutions are L-BFGS-B's last "
               "evaluation, with the memory).", choices=TTS_RESET),
        Option("cvar_formula", str, CVAR_FORMULAS[0], "in a CVaR cell, ``\"exact\"``: every estimate "
               "takes CVaR_alpha of each sample (:func:`problems.weighted_cvar`); ``\"released\"``: "
               "BoRisk's ``InnerRho(CVaR=True)``, the equal-weight mean of the n - int(n (1 - alpha)) "
               "smallest values in the acquisition (:func:`borisk_cvar_equal`) and the whole-VaR-atom, "
               "renormalized weighted mean in the current best and the recommendation "
               "(:func:`borisk_cvar_weighted`). Ignored for VaR.", choices=CVAR_FORMULAS),
    )

    @classmethod
    def iteration_seconds(cls, size: ProblemSize, options: Mapping[str, object]) -> float:
        """See :mod:`algorithms.cost`: a fixed part, then in proportion to the acquisition's
        evaluations (:func:`rhokg_evaluations`), each costing more with |W| (the support of a
        discrete Z, ``num_w_samples`` of a continuous one), M and the data (the past x in S), as the
        square root of the mean number of observations: in proportion to it, the model was 2-2.4
        times above what f6's cells measured (n from 80) and 1.7 times below the newsvendor's (n
        from 6); the paper's four calibration problems (n from 33 to 80 on average) stay within
        25 % of their measured rates either way."""
        w = size.z_size or options["num_w_samples"]
        each = (RHOKG_EVALUATION_S * (w / 100) ** 0.5 * options["num_samples"] / 10
                * (size.mean_data / 40) ** 0.5)
        return RHOKG_FIXED_S + each * rhokg_evaluations(size.d_x + size.d_z, options)

    def __init__(self, problem: Problem, seed_root: int, num_fantasies: int = 10,
                 num_samples: int = 10, low_fantasies: int = 4, restarts_per_dim: int = 10,
                 raw_per_restart: int = 50, eta: float = 2.0, maxiter: int = 1000,
                 batch_size: int = 5, tts_frequency: int = 10, num_w_samples: int = 10,
                 acq_weights: str = ACQ_WEIGHTS[0], refine: str = REFINE[0],
                 tts_reset: str = TTS_RESET[0], cvar_formula: str = CVAR_FORMULAS[0],
                 risk: str = "var") -> None:
        super().__init__(problem, seed_root, risk=risk)
        for key, value in {"num_fantasies": num_fantasies, "num_samples": num_samples,
                           "low_fantasies": low_fantasies, "restarts_per_dim": restarts_per_dim,
                           "raw_per_restart": raw_per_restart, "maxiter": maxiter,
                           "batch_size": batch_size, "tts_frequency": tts_frequency,
                           "num_w_samples": num_w_samples}.items():
            positive_int(self.name, key, value)
        positive_float(self.name, "eta", eta, allow_zero=True)
        for key, value, valid in (("acq_weights", acq_weights, ACQ_WEIGHTS),
                                  ("refine", refine, REFINE), ("tts_reset", tts_reset, TTS_RESET),
                                  ("cvar_formula", cvar_formula, CVAR_FORMULAS)):
            if value not in valid:
                raise ValueError(f"{self.name}: {key} must be one of {', '.join(valid)}, got {value!r}")
        self.K, self.M, self.low = num_fantasies, num_samples, min(low_fantasies, num_fantasies)
        self.d = problem.d_x + problem.d_z
        self.num_restarts = restarts_per_dim * self.d
        self.raw = self.num_restarts * raw_per_restart
        self.eta, self.maxiter, self.batch_size = eta, maxiter, batch_size
        self.tts_frequency, self.L = tts_frequency, num_w_samples
        self.acq_weights, self.refine, self.tts_reset = acq_weights, refine, tts_reset
        self.cvar_formula = cvar_formula
        #: the acquisition's measure, the current best's and recommendation's, and the weights at
        #: which the acquisition's is attained where it is coherent (:func:`measures`)
        self.measure, self.best_measure, self.attained = measures(self.risk, cvar_formula)

    # -- per-iteration randomness -------------------------------------------------------------
    def _w_set(self, t: int | str) -> WSet:
        z = self.problem.z
        if isinstance(z, DiscreteZ):
            return WSet(z.points, z.masses)
        points = z.sample(self.L, generator(self.seed_root, self.stream_name, "w", t))
        return WSet(points, torch.full((self.L,), 1.0 / self.L, dtype=torch.float64))

    def _base_samples(self, t: int | str, m: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """eps_now (M x m), xi (K), eps (K x M x m), and the low-fantasy xi and eps."""
        seed = derive_seed(self.seed_root, self.stream_name, "base", t) % (2**31)
        eps_now = draw_sobol_normal_samples(m, self.M, dtype=torch.float64, seed=seed)
        xi = draw_sobol_normal_samples(1, self.K, dtype=torch.float64, seed=seed + 1).reshape(-1)
        eps = draw_sobol_normal_samples(self.K * m, self.M, dtype=torch.float64, seed=seed + 2)
        eps = eps.reshape(self.M, self.K, m).transpose(0, 1).contiguous()
        xi_low = draw_sobol_normal_samples(1, self.low, dtype=torch.float64,
                                           seed=seed + 3).reshape(-1)
        return eps_now, xi, eps, xi_low

    def estimator(self, model: SingleTaskGP, train_X: Tensor, t: int | str) -> FastRhoKG:
        """The estimator of iteration ``t`` on the current model and past x."""
        w = self._w_set(t)
        eps_now, _, eps, _ = self._base_samples(t, w.points.shape[0])
        return FastRhoKG(model, w, self.problem.alpha, self.observed_x(train_X), eps_now, eps,
                         measure=self.best_measure)

    def _iteration_estimator(self, model: SingleTaskGP, train_X: Tensor, t: int
                             ) -> tuple[FastRhoKG, float, tuple[Tensor, Tensor, Tensor]]:
        """The acquisition's estimator of iteration ``t`` (its W weighted as ``acq_weights`` says),
        the current best max over past x of E_n[VaR] (always with the masses, as BoRisk's
        ``current_best``), and the fantasy base samples (xi, eps, low-fantasy xi)."""
        w = self._w_set(t)
        eps_now, xi, eps, xi_low = self._base_samples(t, w.points.shape[0])
        w_acq = w
        if self.acq_weights == "uniform":
            w_acq = WSet(w.points, torch.full_like(w.weights, 1.0 / w.weights.numel()))
        est = FastRhoKG(model, w_acq, self.problem.alpha, self.observed_x(train_X), eps_now, eps,
                        measure=self.measure, attained=self.attained)
        same = w_acq is w and self.best_measure is self.measure
        now_past = est.now_past if same else est.estimate_now(est.past_x, w.weights, self.best_measure)
        return est, float(now_past.max()), (xi, eps, xi_low)

    # -- the algorithm ------------------------------------------------------------------------
    def propose(self, model: SingleTaskGP, t: int) -> Proposal:
        train_X = model.train_inputs[0]
        est, current_best, (xi, eps, xi_low) = self._iteration_estimator(model, train_X, t)
        rng = generator(self.seed_root, self.stream_name, "search", t)
        d_x = self.problem.d_x

        # raw samples, scored with fewer fantasies
        raw = torch.quasirandom.SobolEngine(self.d, scramble=True,
                                            seed=self.search_seed(t) % (2**31)).draw(
            self.raw, dtype=torch.float64)
        z = self.problem.z
        if isinstance(z, DiscreteZ):
            raw[:, d_x:] = z.points[torch.randint(z.size, (self.raw,), generator=rng)]
        else:
            low, high = z.bounds
            raw[:, d_x:] = low + (high - low) * raw[:, d_x:]
        low_acq = RhoKGAcquisition(model, est, xi_low, eps[: self.low], current_best, 1)
        with torch.no_grad():
            # chunks of 16 keep the b x |S| x m x m fantasy covariances near 100 MB
            scores = torch.cat([low_acq(chunk.unsqueeze(-2)) for chunk in raw.split(16)])
        starts = self._boltzmann_starts(raw, scores, rng)

        acq = RhoKGAcquisition(model, est, xi, eps, current_best, self.tts_frequency)
        bounds = self._bounds()
        discrete = isinstance(z, DiscreteZ)
        acq.tts_reset()  # the start of the first phase (the only reset there with "iteration")
        first = [self._optimize(acq, batch, bounds, self.maxiter // 25, discrete)
                 for batch in starts.split(self.batch_size)]
        solutions = torch.cat([s for s, _ in first])
        values = torch.cat([v for _, v in first])
        refine = max(1, math.ceil(self.num_restarts / 10))
        order = torch.argsort(values, descending=self.refine == "best")
        acq.tts_reset()  # the start of the second phase
        final, final_values = self._optimize(acq, solutions[order[:refine]], bounds, self.maxiter,
                                             discrete)
        i = int(final_values.argmax())
        x, wz = final[i, :d_x], final[i, d_x:]
        info = {"acq_value": float(final_values[i]), "current_best_estimate": current_best}
        return Proposal(x.detach().clone(), wz.detach().clone(), info)

    def acquisition_function(self, model: SingleTaskGP, t: int) -> Callable[[Tensor], Tensor]:
        """rho-KG^apx of iteration ``t`` at ``b x (d_x + d_z)`` candidates (x, w) -> ``b``, each with
        the full search over S (no two-time-scale reuse): the estimator and its past-x factors are
        built here once, as :meth:`propose` builds them once per iteration."""
        est, current_best, (xi, eps, _) = self._iteration_estimator(model, model.train_inputs[0], t)
        acq = RhoKGAcquisition(model, est, xi, eps, current_best, 1)

        def value(X: Tensor) -> Tensor:
            return acq(X.unsqueeze(-2))

        return value

    def _bounds(self) -> tuple[Tensor, Tensor]:
        lower = torch.zeros(self.d, dtype=torch.float64)
        upper = torch.ones(self.d, dtype=torch.float64)
        z = self.problem.z
        if not isinstance(z, DiscreteZ):
            lower[self.problem.d_x:], upper[self.problem.d_x:] = z.bounds
        return lower, upper

    def _boltzmann_starts(self, raw: Tensor, scores: Tensor, rng: torch.Generator) -> Tensor:
        """BoRisk's restart rule: multinomial on exp(eta * z-score), the best always included."""
        std = scores.std()
        z = (scores - scores.mean()) / std if float(std) > 0 else torch.zeros_like(scores)
        eta_z = self.eta * z
        weights = torch.exp(eta_z)
        while torch.isinf(weights).any():
            eta_z = eta_z * 0.5
            weights = torch.exp(eta_z)
        n = min(self.num_restarts, raw.shape[0])
        idx = torch.multinomial(weights, n, replacement=False, generator=rng)
        best = int(scores.argmax())
        if best not in idx.tolist():
            idx[-1] = best
        return raw[idx]

    def _optimize(self, acq: RhoKGAcquisition, starts: Tensor, bounds: tuple[Tensor, Tensor],
                  maxiter: int, fix_w: bool) -> tuple[Tensor, Tensor]:
        """L-BFGS-B from ``starts`` (``b x d``), all restarts summed into one problem as in BoRisk
        (so the two-time-scale memory always sees the same batch); for a discrete W each restart
        keeps its w and only x moves. The values at the solutions: with ``tts_reset="batch"`` from
        a fresh search over S (the memory is reset before and after); with ``"iteration"`` the
        last evaluation L-BFGS-B made (``gen_candidates_scipy``'s), with the memory carried on."""
        d_x = self.problem.d_x
        per_batch = self.tts_reset == "batch"
        if per_batch:
            acq.tts_reset()
        if fix_w:
            target: AcquisitionFunction = FixedW(acq, starts[:, d_x:].clone())
            initial, lower, upper = starts[:, :d_x], bounds[0][:d_x], bounds[1][:d_x]
        else:
            target, initial, lower, upper = acq, starts, bounds[0], bounds[1]
        with warnings.catch_warnings(record=True):  # kinks of VaR end line searches "ABNORMAL"
            solutions, values = gen_candidates_scipy(
                initial.unsqueeze(-2), target, lower_bounds=lower, upper_bounds=upper,
                options={"maxiter": maxiter}, use_parallel_mode=False)
        solutions = solutions.squeeze(-2).detach()
        if fix_w:
            solutions = torch.cat([solutions, starts[:, d_x:]], dim=-1)
        if not per_batch:
            return solutions, values.detach().reshape(-1)
        acq.tts_reset()
        with torch.no_grad():  # the values at the solutions, with a fresh search over S
            values = acq(solutions.unsqueeze(-2))
        return solutions, values.detach()

    def recommend(self, model: SingleTaskGP, train_X: Tensor) -> Recommendation:
        # base samples from a stream of the data size, so the recommendation is reproducible
        est = self.estimator(model, train_X, f"recommend-{train_X.shape[0]}")
        i = int(est.now_past.argmax())
        return Recommendation(est.past_x[i].clone(), {"var_mean_rec": float(est.now_past[i])})


@registered
class RhoKGApxReleased(RhoKGApx):
    """rho-KG^apx as BoRisk's last public code runs it: :class:`RhoKGApx` with
    ``acq_weights="uniform"``, ``refine="worst"``, ``tts_reset="iteration"`` and (for CVaR)
    ``cvar_formula="released"`` (each can still be set back by its option; the other options are
    :class:`RhoKGApx`'s). Same random streams as ``rhokg-apx``, so on one seed the two differ only
    by these behaviours."""

    name = "rhokg-apx-released"
    source = f"{SOURCE}; its last public code's behaviours"
    #: Not its parent's: the behaviours where the method departs from BoRisk's code are the released ones.
    deviations = COMMON_DEVIATIONS
    #: What the released code does, option by option.
    RELEASED: ClassVar[dict[str, str]] = {"acq_weights": "uniform", "refine": "worst",
                                         "tts_reset": "iteration", "cvar_formula": "released"}
    options: ClassVar[tuple[Option, ...]] = with_defaults(RhoKGApx.options, **RELEASED)

    # the released defaults named, so that the signature (and ``--describe``) shows them
    def __init__(self, problem: Problem, seed_root: int, *,
                 acq_weights: str = RELEASED["acq_weights"], refine: str = RELEASED["refine"],
                 tts_reset: str = RELEASED["tts_reset"], cvar_formula: str = RELEASED["cvar_formula"],
                 **options: object) -> None:
        super().__init__(problem, seed_root, acq_weights=acq_weights, refine=refine,
                         tts_reset=tts_reset, cvar_formula=cvar_formula, **options)
