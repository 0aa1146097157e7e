"""``botorch-risk``: risk-averse BO the way BoTorch's own material does it, on the harness's GP.

BoTorch's tutorial "Risk averse Bayesian optimization with environmental variables" (the setting
here: Z can be chosen while optimizing, not at deployment) builds, each iteration:

* the model with ``AppendFeatures(feature_set=w_set)`` as its input transform, so that the
  posterior at an x is the joint posterior at (x, w) for every w of the set (``transform_on_train``
  off: the model is fitted on the queried (x, z) as they are);
* ``qMultiFidelityKnowledgeGradient(model, num_fantasies=16, objective=rho, project=ignore_w)`` with
  rho one of BoTorch's risk measures (``VaR`` or ``CVaR`` over each block of the set's points): the
  one-shot rho-KG, whose fantasy solutions are x only (w dropped and then appended again);
* ``optimize_acqf`` over the box of (x, w) jointly (10 restarts, 128 raw samples): the query's w
  is chosen together with its x by the same acquisition;
* the recommendation: ``qSimpleRegret(model, objective=rho)`` over a larger set of w (128 in the
  tutorial), maximized over x by ``optimize_acqf``.

What this class adds, and why:

* **The same GP as every other method.** The harness fits the model; this class puts a copy of it
  (same data, same hyperparameters) behind ``AppendFeatures`` for the acquisition.
* **BoTorch's risk levels.** BoTorch's ``VaR(alpha_b, n_w)`` is the (n_w - ceil(n_w alpha_b) + 1)-th
  smallest of n_w values and ``CVaR`` the mean of that many smallest; its ``alpha_b`` counts from
  the top. With ``level = "matched"`` (the default) alpha_b is chosen so that this count is
  k = ceil(N alpha), so that BoTorch's VaR is VaR_alpha of the N equally weighted values (the
  definition's lower quantile) and BoTorch's CVaR the mean of the k smallest, CVaR_alpha exactly
  when N alpha is an integer. ``level = "naive"`` passes alpha_b = 1 - alpha, what a reader of the
  tutorial (``CVaR(alpha=0.7)`` for the worst 30%) would write: it averages one value more when
  N (1 - alpha) is an integer (and floating point decides ceil(N alpha_b) at such points).
* **The w set: N draws of Z, fresh each iteration** (the tutorial draws its 16 by Sobol each time
  the model is refitted). A continuous Z: ``n_w`` scrambled Sobol points through Z's quantile
  function. A discrete Z: ``n_w`` systematic draws from its masses (the support in its fixed order
  on the cumulative-mass scale, points u0 + j / N with one random offset u0), the discrete
  analogue of stratified draws. **How the masses are honoured**: BoTorch's measures weigh their
  n_w values equally, so the masses enter through the draws, as the tutorial's distribution of W
  does: support point i is drawn floor or ceil of N p_i times (N p_i on average over the offset),
  so the w set's VaR and CVaR are those of a stratified sample of N draws of Z, with its error. Drawn
  duplicates are not duplicated in the posterior: it is taken at the distinct points, and each
  posterior sample's values are repeated by their counts (BoTorch's ``preprocessing_function``)
  before BoTorch's measure takes the N values. The query's z: the optimizer moves w in the
  support's box; the support point with the largest one-shot value (x_t and the fantasy solutions
  held, all support points at once) is the query.
* **The recommendation: the shared rule by default** (``recommendation = "observed"``): the observed
  x whose posterior mean has the best exact value of the risk measure over Z
  (:meth:`Algorithm.recommend`), as every other method recommends, so that
  the tables compare the searches and not two ways of reading the model. ``recommendation =
  "tutorial"`` keeps the tutorial's rule: ``qSimpleRegret`` over all x (never-queried points
  included) on an ``n_w_rec``-draw w set drawn as the acquisition's (the tutorial's 128 Sobol w);
  its estimate of the measure carries that sample's error, which tilts a VaR or CVaR table for or
  against the method.
* **Seeds.** Every sampler is seeded from the run's names, and ``optimize_acqf``'s random starts
  come from torch's global generator, seeded from the run's names inside ``fork_rng``.
* **Two engines, one computation.** ``engine = "botorch"`` (the default, which made the published
  rows) evaluates the one-shot KG with BoTorch's objects above; ``engine = "fused"`` evaluates the
  same function in closed form (:mod:`algorithms.oneshot_fused`: a fantasy is a rank-one update of
  the current posterior, so no fantasy model is built), with the same samplers' draws, starts and
  optimizer: values and gradients agree to rounding, 2.5-10 times faster by the problem's size
  (``benchmarks/oneshot_kg_speedup.py``).
* **The gradient.** BoTorch 0.18.1 with GPyTorch 1.15.2 detaches the fantasy model's covariance
  cache, so the one-shot KG's gradient in the query x misses part of the value's (its values, and
  its gradient in the fantasy solutions, are exact). ``gradient = "released"`` (the default, the
  published rows') keeps that gradient; ``gradient = "exact"`` optimizes with the value's own
  gradient, on either engine.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import math
import warnings
from collections.abc import Callable, Mapping
from typing import ClassVar

import gpytorch
import torch
from botorch.acquisition import AcquisitionFunction, qSimpleRegret
from botorch.acquisition.knowledge_gradient import qMultiFidelityKnowledgeGradient
from botorch.acquisition.objective import GenericMCObjective
from botorch.acquisition.risk_measures import CVaR, Expectation, RiskMeasureMCObjective, VaR
from botorch.models import SingleTaskGP
from botorch.models.transforms.input import AppendFeatures
from botorch.optim import optimize_acqf
from botorch.optim.initializers import gen_one_shot_kg_initial_conditions
from botorch.sampling import SobolQMCNormalSampler
from torch import Tensor

from algorithms.base import Algorithm, Proposal, Recommendation, positive_int, registered
from algorithms.cost import ProblemSize
from algorithms.gp import CELL_GP
from algorithms.oneshot_fused import (
    ENGINES,
    GRADIENTS,
    ONE_SHOT_DEVIATIONS,
    FusedOneShotKG,
    SampleMeasure,
    fused_initial_conditions,
)
from algorithms.options import Option
from problems import DiscreteZ, Problem, measures
from problems.seeding import derive_seed

LEVELS = ("matched", "naive")
#: The recommendation rules: the shared one (observed x, exact measure) and the tutorial's.
RECOMMENDATIONS = ("observed", "tutorial")


#: BoTorch's risk measure for each of ours it optimizes (what the class declares it optimizes).
BOTORCH_MEASURES = {"var": VaR, "cvar": CVaR, "mean": Expectation}

#: Where the one-shot KGs come from (``rhokg-oneshot`` too), and how their model differs from it.
TUTORIAL = ("BoTorch's tutorial \"Risk averse Bayesian optimization with environmental variables\" "
            "(`pytorch/botorch`, `tutorials/risk_averse_bo_with_environmental_variables`), on BoTorch "
            '0.18.1: the one-shot rho-KG of Cakmak, Astudillo, Frazier & Zhou, "Bayesian Optimization of '
            'Risk Measures", NeurIPS 2020')
TUTORIAL_MODEL = f"{CELL_GP}, copied behind `AppendFeatures`, where the tutorial fits its own."


def systematic_counts(masses: Tensor, n: int, offset: float) -> Tensor:
    """Systematic sampling of ``n`` draws from ``masses`` (``m``, in their fixed order): the draws
    are the points (offset + j) / n, j = 0..n-1, of the cumulative-mass scale, ``offset`` in [0, 1);
    returns how many fall in each point's interval (``m`` counts summing to ``n``, each the floor or
    the ceiling of n p_i)."""
    edges = torch.cumsum(masses, dim=0)
    edges = edges / edges[-1]  # a total of one, so that every draw lands in some interval
    draws = (offset + torch.arange(n, dtype=edges.dtype)) / n
    index = torch.searchsorted(edges, draws, right=True).clamp(max=masses.shape[0] - 1)
    return torch.bincount(index, minlength=masses.shape[0])


def tail_count(total: int, alpha: float) -> int:
    """k = ceil(N alpha): VaR_alpha of N equal masses is the k-th smallest (tolerant of rounding)."""
    return max(1, math.ceil(total * alpha - 1e-9))


def botorch_level(total: int, alpha: float, level: str) -> float:
    """BoTorch's ``alpha`` for our lower-tail level ``alpha`` over ``total`` values (module docstring):
    ``matched`` puts BoTorch's ``alpha_idx = ceil(N alpha_b) - 1`` at N - k (half a step inside, so
    no rounding moves it); ``naive`` is 1 - alpha."""
    if level == "naive":
        return 1.0 - alpha
    return (total - tail_count(total, alpha) + 0.5) / total


def risk_measure(risk: str, alpha: float, counts: Tensor, level: str = "matched") -> RiskMeasureMCObjective:
    """BoTorch's ``VaR`` or ``CVaR`` over a w set of ``m`` distinct points whose samples are
    repeated by their ``counts`` (``m``, summing to N: how often each was drawn) first: an
    objective of ``sample x batch x (q m) x 1`` samples (each x's m values consecutive, as
    ``AppendFeatures`` orders them) -> ``sample x batch x q``."""
    total, m = int(counts.sum()), counts.shape[0]

    def expand(samples: Tensor, X: Tensor | None = None) -> Tensor:
        values = samples[..., 0]
        blocks = values.reshape(*values.shape[:-1], values.shape[-1] // m, m)
        return blocks.repeat_interleave(counts, dim=-1).flatten(-2)

    cls = BOTORCH_MEASURES[risk]
    if cls is Expectation:  # the risk-neutral mean has no level
        return cls(n_w=total, preprocessing_function=GenericMCObjective(expand))
    return cls(alpha=botorch_level(total, alpha, level), n_w=total,
               preprocessing_function=GenericMCObjective(expand))


def with_w_set(model: SingleTaskGP, w: Tensor) -> SingleTaskGP:
    """A copy of the fitted ``model`` (same data and hyperparameters) whose posterior at x is the
    joint posterior at (x, w_1), ..., (x, w_m): BoTorch's ``AppendFeatures`` as input transform."""
    copied = copy.deepcopy(model)
    copied.input_transform = AppendFeatures(feature_set=w)
    return copied.eval()


def _one_shot_starts(inner: Mapping[str, int], fused: bool = False) -> Callable[..., Tensor]:
    """BoTorch's starts of a one-shot KG (``gen_one_shot_kg_initial_conditions``, or its fused twin
    :func:`algorithms.oneshot_fused.fused_initial_conditions`) with ``inner`` (``num_inner_restarts``,
    ``raw_inner_samples``) added to the options it is given."""
    starts = fused_initial_conditions if fused else gen_one_shot_kg_initial_conditions

    def generate(*, options: Mapping[str, object] | None = None, **kwargs: object) -> Tensor:
        return starts(options={**(options or {}), **inner}, **kwargs)

    return generate


#: How many times as long the one-shot search takes on a measure as on CVaR (measured on
#: Branin-Williams: on VaR, whose sampled values move in steps, L-BFGS-B needs more evaluations).
SEARCH_FACTOR = {"var": 2.2}


def fused_speedup(m: int) -> float:
    """How many times faster ``engine = "fused"`` makes the one-shot search over a w set of ``m``
    distinct points: 8 up to m = 15, 4 at m = 50 and 2.5 from m = 100 on (log-linear between),
    the ratios ``benchmarks/oneshot_kg_speedup.py`` measured on replayed proposals of the suite's
    problems. Small sets save BoTorch's fantasy models' fixed cost; large ones are bound by the
    samples' cost, S m^2 a fantasy, which both engines pay."""
    points = ((15, 8.0), (50, 4.0), (100, 2.5))
    if m <= points[0][0]:
        return points[0][1]
    for (m0, r0), (m1, r1) in itertools.pairwise(points):
        if m <= m1:
            share = math.log(m / m0) / math.log(m1 / m0)
            return r0 * (r1 / r0) ** share
    return points[-1][1]


@registered
class BotorchRisk(Algorithm):
    """BoTorch's risk-averse BO with environmental variables (one-shot rho-KG over VaR or CVaR); see
    the module docstring.

    Its options are declared in :attr:`options`.
    """

    name = "botorch-risk"
    risks = frozenset(BOTORCH_MEASURES)
    source = TUTORIAL
    deviations = (
        TUTORIAL_MODEL,
        "BoTorch's level is matched so that its order statistic is VaR_alpha's, k = ceil(N alpha) of N "
        "values (`level=\"naive\"` passes 1 - alpha, as the tutorial's convention reads).",
        "The w set is `n_w` = 50 fresh draws of Z an iteration (the tutorial's 16), by Sobol on a "
        "continuous Z.",
        "A discrete Z enters by systematic draws from its masses (the tutorial's W is drawn by Sobol), the "
        "query's z being the support point of largest one-shot value.",
        "The recommendation is the shared rule (`recommendation=\"tutorial\"`: the tutorial's "
        "`qSimpleRegret` over all x, on `n_w_rec` = 200 draws of Z, the tutorial's 128).",
        *ONE_SHOT_DEVIATIONS,
    )
    candidates = "xz"
    evaluation_batch = 8

    @classmethod
    def proposal_cost(cls, z_kind: str) -> tuple[float, float, float, float]:
        """See :meth:`Algorithm.proposal_cost`: a one-shot KG optimization (a guess)."""
        return (2.0, 8.0, 1.0, 1.0)

    @classmethod
    def reduced_options(cls, z_kind: str) -> dict | None:
        """See :meth:`Algorithm.reduced_options`: the one-shot KG has a fixed cost per evaluation, so
        the smallest settings that still run its whole path (about 1 s a proposal instead of 10),
        the value function's own starts included (BoTorch's 20 restarts from 1024 raw samples were
        two thirds of the rest)."""
        return {"num_fantasies": 2, "num_restarts": 1, "raw_samples": 8, "inner_samples": 16,
                "maxiter": 10, "n_w": 10, "n_w_rec": 20, "inner_restarts": 2, "raw_inner_samples": 32}


    options: ClassVar[tuple[Option, ...]] = (
        Option("num_fantasies", int, 16, "fantasies of the one-shot knowledge gradient (the tutorial's 16).",
               low=1),
        Option("num_restarts", int, 10, "``optimize_acqf`` restarts, for the query and for the "
               "recommendation (10).", low=1),
        Option("raw_samples", int, 128, "``optimize_acqf`` raw samples (128).", low=1),
        Option("inner_samples", int, 128, "quasi-Monte Carlo samples of the inner value function and of "
               "the recommendation's estimate (BoTorch's default 128).", low=1),
        Option("maxiter", int, 200, "L-BFGS-B iterations of ``optimize_acqf`` (BoTorch's default 200).",
               low=1),
        Option("level", str, "matched", "``\"matched\"``, BoTorch's level chosen so that its order "
               "statistic is VaR_alpha's; ``\"naive\"``, BoTorch's alpha = 1 - alpha, as the tutorial's "
               "convention reads.", choices=LEVELS),
        Option("n_w", int, 50, "draws of Z in the acquisition's w set, fresh each iteration (Sobol for a "
               "continuous Z, systematic from the masses for a discrete one).", low=1),
        Option("n_w_rec", int, 200, "draws of Z in the recommendation's w set (``recommendation = "
               "\"tutorial\"``).", low=1),
        Option("recommendation", str, "observed", "``\"observed\"``, the shared rule (the observed x "
               "whose posterior mean has the best exact risk measure over Z); ``\"tutorial\"``, BoTorch's "
               "tutorial's (``qSimpleRegret`` over all x on a w set of ``n_w_rec`` draws).",
               choices=RECOMMENDATIONS),
        Option("inner_restarts", int, 20, "restarts of the value function's maximization that seeds the "
               "one-shot KG's fantasy solutions (BoTorch's ``num_inner_restarts``, 20).", low=1),
        Option("raw_inner_samples", int, 1024, "raw samples of that maximization (BoTorch's "
               "``raw_inner_samples``, 1024).", low=1),
        Option("engine", str, "botorch", "``\"botorch\"``, BoTorch's ``qMultiFidelityKnowledgeGradient`` on "
               "fantasy models (the reference, which made the published rows); ``\"fused\"``, the same "
               "values and gradients in closed form, several times faster (:mod:`algorithms.oneshot_fused`).",
               choices=ENGINES),
        Option("gradient", str, "released", "``\"released\"``, the one-shot KG's gradient as BoTorch 0.18.1 "
               "with GPyTorch 1.15.2 computes it (the fantasy model's covariance cache detached: the "
               "gradient in the query misses part of the value's); ``\"exact\"``, the value's own gradient.",
               choices=GRADIENTS),
    )

    @classmethod
    def iteration_seconds(cls, size: ProblemSize, options: Mapping[str, object]) -> float:
        """See :mod:`algorithms.cost`. With m the distinct points of the w set (at most the support
        of a discrete Z), n the mean number of observations of the run and e the one-shot KG's effort
        relative to the defaults, (1 + fantasies) x inner samples x (raw samples + restarts x about
        50 L-BFGS-B steps):

            0.1 + 0.03 m + 0.008 n + e (11 + 22.7 (m / 100)^3) (1 + (n / 120)^3)

        with (n / 120)^3 averaged over the run's n (it is convex: its value at the mean n would be
        too low). The first three terms are what remains at a reduced effort: Python's and the
        fantasy model's fixed cost per evaluation (at the smoke grid's effort 0.5 s an iteration on
        Hartmann-6 (5,1), n = 10-110, to 2-3 s on Branin-Williams, n = 72-192, flat over each run).
        The last is the search itself, whose cost grows as the cube of m (each fantasy's joint
        posterior over the w set) and steeply with n. Fitted to single proposals at n from 10 to
        192 and to whole cells at the smoke grid's effort on the suite's problems (pinned, one
        thread, next to a busy core; ``benchmarks/cost_model.py`` checks it): at the defaults,
        Branin-Williams (m = 12) 17 s at n = 72 to 64 s at n = 192, f6 (m = 50) 11 to 61 s for n
        from 80 to 180, Hartmann-6 (1,5) with its 243-point Z 337 s at n = 10. The count of
        L-BFGS-B evaluations a proposal takes varies about 3-fold with the problem; the model is for
        planning, within a factor of 2 of a whole cell. On VaR the search takes
        :data:`SEARCH_FACTOR` times as long (the VaR of the fantasy samples moves in steps, and
        L-BFGS-B needs more evaluations): 6 full-effort iterations on Branin-Williams' VaR took
        163 s (``rhokg-oneshot``) and 208 s (this method), against about 90 s modelled as CVaR."""
        def effort(o: Mapping[str, object]) -> float:
            steps = o["raw_samples"] + o["num_restarts"] * min(o["maxiter"], 50)
            return (1 + o["num_fantasies"]) * o["inner_samples"] * steps

        defaults = {o.name: o.default for o in BotorchRisk.options}
        m = options["n_w"] if size.z_size is None else min(options["n_w"], size.z_size)
        n = size.mean_data
        a, b = size.n_init / 120.0, (size.n_init + size.iterations) / 120.0
        cube = (b**4 - a**4) / (4 * (b - a)) if b > a else a**3  # (n / 120)^3 averaged over the run
        search = (11.0 + 22.7 * (m / 100.0) ** 3) * (1.0 + cube)
        search *= SEARCH_FACTOR.get(size.risk, 1.0)
        if options.get("engine") == "fused":
            search /= fused_speedup(m)
        return 0.1 + 0.03 * m + 0.008 * n + effort(options) / effort(defaults) * search

    def __init__(self, problem: Problem, seed_root: int, risk: str = "var", num_fantasies: int = 16,
                 num_restarts: int = 10, raw_samples: int = 128, inner_samples: int = 128,
                 maxiter: int = 200, level: str = "matched", n_w: int = 50, n_w_rec: int = 200,
                 recommendation: str = "observed", inner_restarts: int = 20,
                 raw_inner_samples: int = 1024, engine: str = "botorch", gradient: str = "released") -> None:
        super().__init__(problem, seed_root, risk=risk)
        for key, value in (("num_fantasies", num_fantasies), ("num_restarts", num_restarts),
                           ("raw_samples", raw_samples), ("inner_samples", inner_samples),
                           ("maxiter", maxiter), ("n_w", n_w), ("n_w_rec", n_w_rec),
                           ("inner_restarts", inner_restarts), ("raw_inner_samples", raw_inner_samples)):
            positive_int(self.name, key, value)
        if level not in LEVELS:
            raise ValueError(f"{self.name}: level must be one of {', '.join(LEVELS)}, got {level!r}")
        if recommendation not in RECOMMENDATIONS:
            raise ValueError(f"{self.name}: recommendation must be one of {', '.join(RECOMMENDATIONS)}, "
                             f"got {recommendation!r}")
        for key, value, valid in (("engine", engine, ENGINES), ("gradient", gradient, GRADIENTS)):
            if value not in valid:
                raise ValueError(f"{self.name}: {key} must be one of {', '.join(valid)}, got {value!r}")
        self.recommendation, self.engine, self.gradient = recommendation, engine, gradient
        self.num_fantasies, self.num_restarts = num_fantasies, num_restarts
        self.raw_samples, self.inner_samples = raw_samples, inner_samples
        self.level, self.n_w, self.n_w_rec, self.maxiter = level, n_w, n_w_rec, maxiter
        # BoTorch's own defaults are not passed on, so that the default path is BoTorch's exactly
        self.inner_options = {key: value for key, value, default in (
            ("num_inner_restarts", inner_restarts, 20), ("raw_inner_samples", raw_inner_samples, 1024))
            if value != default}
        d_x = problem.d_x
        if isinstance(problem.z, DiscreteZ):
            points = problem.z.points
            z_box = torch.stack([points.min(dim=0).values, points.max(dim=0).values])
        else:
            z_box = problem.z.bounds
        self.bounds = torch.cat([torch.stack([torch.zeros(d_x), torch.ones(d_x)]).to(z_box), z_box], dim=-1)

    def w_set(self, t: int, n: int, purpose: str) -> tuple[Tensor, Tensor]:
        """``n`` draws of Z as distinct points and their counts (summing to ``n``), seeded by the
        iteration and ``purpose``: Sobol points through the quantile function of a continuous Z
        (each count 1), or systematic draws from the masses of a discrete one."""
        seed = derive_seed(self.search_seed(t), "botorch-risk", purpose)
        z = self.problem.z
        if isinstance(z, DiscreteZ):
            offset = float(torch.rand((), generator=torch.Generator().manual_seed(seed % 2**63),
                                      dtype=torch.float64))
            counts = systematic_counts(z.masses, n, offset)
            keep = counts > 0
            return z.points[keep], counts[keep]
        return z.qmc_points(n, seed % 2**63), torch.ones(n, dtype=torch.long)

    def _sampler(self, n: int, t: int, purpose: str) -> SobolQMCNormalSampler:
        return SobolQMCNormalSampler(torch.Size([n]), seed=derive_seed(self.search_seed(t), purpose) % 2**31)

    def acquisition_set(self, t: int) -> tuple[Tensor, RiskMeasureMCObjective]:
        """The acquisition's w set of iteration ``t`` (``m x d_z`` distinct points) and the risk
        measure over it: ``n_w`` draws of Z and BoTorch's measure of their values repeated by their
        counts."""
        w, counts = self.w_set(t, self.n_w, "acquisition")
        return w, risk_measure(self.risk, self.problem.alpha, counts, self.level)

    def sample_measure(self, t: int) -> SampleMeasure:
        """The acquisition's risk measure as masses over its w set's distinct points, what ``engine =
        "fused"`` evaluates: masses counts / N and level k / N, k the count of values BoTorch's measure
        takes of N (read from the measure itself: the last rank its gradient reaches, since its VaR is
        a quantile whose rounding decides k, and its CVaR the mean of the k smallest)."""
        _, counts = self.w_set(t, self.n_w, "acquisition")
        total = int(counts.sum())
        botorch = risk_measure(self.risk, self.problem.alpha, torch.ones(total, dtype=torch.long), self.level)
        ranks = torch.arange(total, dtype=torch.float64).view(1, total, 1).requires_grad_(True)
        (reached,) = torch.autograd.grad(botorch(ranks).sum(), ranks)
        k = int(reached.reshape(-1).nonzero().max()) + 1
        return SampleMeasure(measures.risk_measure(self.risk), counts.to(torch.float64) / total, k / total)

    def _knowledge_gradient(self, model: SingleTaskGP, t: int) -> AcquisitionFunction:
        w, objective = self.acquisition_set(t)
        d_x = self.problem.d_x
        fantasies = self._sampler(self.num_fantasies, t, "fantasies")
        inner = self._sampler(self.inner_samples, t, "inner")
        if self.engine == "fused":
            return FusedOneShotKG(model, w, self.sample_measure(t), fantasies, inner, d_x, self.gradient)
        return qMultiFidelityKnowledgeGradient(
            model=with_w_set(model, w), num_fantasies=self.num_fantasies, sampler=fantasies,
            inner_sampler=inner, objective=objective, project=lambda X: X[..., :d_x])

    def _gradient_mode(self) -> contextlib.AbstractContextManager:
        """BoTorch's path with the exact gradient: GPyTorch's caches kept attached to the query."""
        if self.engine == "botorch" and self.gradient == "exact":
            return gpytorch.settings.detach_test_caches(False)
        return contextlib.nullcontext()

    def _optimize(self, acquisition, bounds: Tensor, seed: int, **kwargs: object) -> tuple[Tensor, Tensor]:
        """``optimize_acqf`` (q = 1) with its random starts drawn from torch's generator seeded by
        ``seed`` (forked: the caller's generator is untouched); memory bounded by batch limits."""
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            torch.manual_seed(seed % 2**63)
            warnings.simplefilter("ignore", category=RuntimeWarning)  # L-BFGS-B's ABNORMAL stops
            return optimize_acqf(acquisition, bounds=bounds, q=1, num_restarts=self.num_restarts,
                                 raw_samples=self.raw_samples,
                                 options={"batch_limit": 5, "init_batch_limit": 16,
                                          "maxiter": self.maxiter}, **kwargs)

    def propose(self, model: SingleTaskGP, t: int) -> Proposal:
        d_x = self.problem.d_x
        acquisition = self._knowledge_gradient(model, t)
        fused = self.engine == "fused"
        # the inner options go to the one-shot starts only (L-BFGS-B would warn of unknown options)
        starts = ({"ic_generator": _one_shot_starts(self.inner_options, fused)}
                  if self.inner_options or fused else {})
        with self._gradient_mode():
            tree, value = self._optimize(acquisition, self.bounds, self.search_seed(t), return_full_tree=True,
                                         **starts)
        x_t, z_t = tree[0, :d_x].detach().clone(), tree[0, d_x:].detach().clone()
        info: dict = {"kg": float(value)}
        if isinstance(self.problem.z, DiscreteZ):
            # the support point of largest one-shot value, x_t and the fantasy solutions held
            points = self.problem.z.points
            trees = tree.detach().unsqueeze(0).repeat(points.shape[0], 1, 1)
            trees[:, 0, d_x:] = points
            with torch.no_grad():
                values = torch.cat([acquisition(chunk) for chunk in trees.split(5)])
            j = int(values.argmax())
            z_t = points[j].clone()
            info.update(kg_support=float(values[j]), z_box=tree[0, d_x:].tolist())
        return Proposal(x_t, z_t, info)

    def acquisition_function(self, model: SingleTaskGP, t: int) -> Callable[[Tensor], Tensor]:
        """The one-shot rho-KG: ``b x (1 + num_fantasies) x (d_x + d_z)`` -> ``b``."""
        return self._knowledge_gradient(model, t)

    def recommend(self, model: SingleTaskGP, train_X: Tensor) -> Recommendation:
        """The shared rule (:meth:`Algorithm.recommend`), or with ``recommendation = "tutorial"`` the
        tutorial's: argmax over x of the posterior expectation of the risk measure
        (``qSimpleRegret`` with it as objective) over the recommendation's w set."""
        if self.recommendation == "observed":
            return super().recommend(model, train_X)
        t = train_X.shape[0]  # the iteration's own streams: the data size names it
        w, counts = self.w_set(t, self.n_w_rec, "recommendation")
        acquisition = qSimpleRegret(with_w_set(model, w), sampler=self._sampler(self.inner_samples, t, "rec"),
                                    objective=risk_measure(self.risk, self.problem.alpha, counts, self.level))
        x, value = self._optimize(acquisition, self.bounds[:, : self.problem.d_x],
                                  derive_seed(self.search_seed(t), "rec-starts"))
        return Recommendation(x[0].detach().clone(), {"var_mean_rec": float(value)})
