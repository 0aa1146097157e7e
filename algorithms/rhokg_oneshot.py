"""``rhokg-oneshot``: BoTorch's one-shot rho-KG with this project's weighted risk measures, so that
a weighted discrete Z is exact.

The method of BoTorch's tutorial "Risk averse Bayesian optimization with environmental variables"
(``pytorch/botorch``, ``tutorials/risk_averse_bo_with_environmental_variables``), which is BoRisk's
rho-KG (Cakmak, Astudillo, Frazier & Zhou, NeurIPS 2020) in BoTorch's one-shot form: at iteration t,
``qMultiFidelityKnowledgeGradient`` over (x, w) jointly, on the model behind
``AppendFeatures(w set)``, with the risk measure rho over each x's block of the w set as objective
and the fantasy solutions projected to x (:class:`algorithms.botorch_risk.BotorchRisk` builds it;
this class changes what the measure is taken over):

* **A discrete Z: its whole support, with its masses.** BoTorch's ``VaR`` and ``CVaR`` weigh their
  n_w values equally, which is why ``botorch-risk`` draws its w set from the masses (a stratified
  sample, with its error). Here the w set is the support itself and the measure is
  :class:`WeightedRiskMeasure`: this project's :func:`problems.weighted_var` /
  :func:`problems.weighted_cvar` (or the weighted mean) of each posterior sample's values with the
  masses, the exact measure of the sample's distribution over Z. Its cost grows with |Dz| (every
  fantasy model is evaluated at every support point).
* **A continuous Z:** ``n_w`` scrambled Sobol draws through Z's quantile function, fresh each
  iteration, each of mass 1/n_w (as ``botorch-risk``), with the same weighted measures (on equal
  masses, BoTorch's at its matched level).
* **The query's z** on a discrete Z: the support point of largest one-shot value, x_t and the
  fantasy solutions held (as ``botorch-risk``); the optimizer's own w, moved in the support's box,
  is kept in the row's info.
* **The recommendation:** the shared rule (:meth:`Algorithm.recommend`), as every method of a
  comparison.

The one-shot settings are ``botorch-risk``'s and default to the tutorial's (16 fantasies, 10 restarts,
128 raw samples, 128 inner samples); its seeds are ``botorch-risk``'s streams, so on a seed the two
share their samplers' base draws and their search starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import ClassVar

import torch
from botorch.acquisition.risk_measures import RiskMeasureMCObjective
from torch import Tensor

from algorithms.base import positive_int, registered
from algorithms.botorch_risk import BOTORCH_MEASURES, TUTORIAL, TUTORIAL_MODEL, BotorchRisk
from algorithms.cost import ProblemSize
from algorithms.oneshot_fused import ONE_SHOT_DEVIATIONS, SampleMeasure
from algorithms.options import Option
from problems import DiscreteZ, Problem
from problems.measures import RiskMeasure, risk_measure

#: The options of ``botorch-risk`` that do not apply: the level (the measures are exact), the
#: recommendation's w set and rule (the shared rule), and the w set's size (declared again below).
_NOT_HERE = {"level", "n_w_rec", "recommendation", "n_w"}


#: The options whose meaning here is not ``botorch-risk``'s (no recommendation of its own).
_MEANINGS = {o.name: replace(o, meaning=meaning) for o in BotorchRisk.options for name, meaning in (
    ("num_restarts", "``optimize_acqf`` restarts (the tutorial's 10)."),
    ("inner_samples", "quasi-Monte Carlo samples of the inner value function (BoTorch's default 128)."),
) if o.name == name}


class WeightedRiskMeasure(RiskMeasureMCObjective):
    """A risk measure (:mod:`problems.measures`: VaR_alpha, CVaR_alpha or the mean) of each x's ``m``
    sampled values under the masses of its w set: ``sample x batch x (q m) x 1`` -> ``sample x batch
    x q`` (BoTorch's risk-measure objective interface; the values of one x are consecutive, as
    ``AppendFeatures`` orders them).

    Args:
        measure: the risk measure, one that BoTorch's one-shot KG can optimize
            (:data:`algorithms.botorch_risk.BOTORCH_MEASURES`).
        alpha: the lower-tail level (unused by the mean).
        masses: ``m`` masses summing to one.
    """

    def __init__(self, measure: RiskMeasure, alpha: float, masses: Tensor) -> None:
        super().__init__(n_w=masses.shape[0])
        if measure.name not in BOTORCH_MEASURES:
            raise ValueError(f"unknown risk measure {measure.name!r}; valid: {', '.join(BOTORCH_MEASURES)}")
        self.measure, self.alpha = measure, alpha
        self.register_buffer("masses", masses)

    def forward(self, samples: Tensor, X: Tensor | None = None) -> Tensor:
        values = self._prepare_samples(samples)  # sample x batch x q x m
        return self.measure.of_distribution(values, self.masses.to(values), self.alpha)


@registered
class RhoKGOneShot(BotorchRisk):
    """BoTorch's one-shot rho-KG over the whole weighted support of a discrete Z (module docstring).

    Its options are declared in :attr:`options`.
    """

    name = "rhokg-oneshot"
    source = f"{TUTORIAL}; with this project's weighted risk measures"
    #: Its own, not ``botorch-risk``'s: it takes neither BoTorch's levels nor the tutorial's recommendation.
    deviations = (
        TUTORIAL_MODEL,
        "A discrete Z's w set is its whole support, under this project's weighted VaR, CVaR or mean of each "
        "posterior sample (BoTorch's weigh values equally), the query's z being the support point of largest "
        "one-shot value.",
        "A continuous Z's w set is `n_w` = 50 fresh scrambled Sobol draws an iteration, of mass 1/n_w each "
        "(the tutorial's 16).",
        "The recommendation is the shared rule, not the tutorial's `qSimpleRegret` over all x.",
        *ONE_SHOT_DEVIATIONS,
    )

    options: ClassVar[tuple[Option, ...]] = (
        *(_MEANINGS.get(o.name, o) for o in BotorchRisk.options if o.name not in _NOT_HERE),
        Option("n_w", int, None, "draws of Z in the acquisition's w set, fresh each iteration, each of "
               "mass 1/n_w (unset: 50).", low=1, nullable=True, z_kind="continuous"),
    )

    @classmethod
    def reduced_options(cls, z_kind: str) -> dict | None:
        """See :meth:`Algorithm.reduced_options`: ``botorch-risk``'s, without the options it does not
        have (a discrete Z's w set is its support whatever the effort)."""
        reduced = {k: v for k, v in BotorchRisk.reduced_options(z_kind).items() if k not in _NOT_HERE}
        return reduced | ({"n_w": 10} if z_kind == "continuous" else {})

    @classmethod
    def iteration_seconds(cls, size: ProblemSize, options: Mapping[str, object]) -> float:
        """See :mod:`algorithms.cost`: ``botorch-risk``'s model with the w set the support of a
        discrete Z (``n_w`` draws of a continuous one)."""
        n_w = size.z_size if size.z_size is not None else (options.get("n_w") or 50)
        return BotorchRisk.iteration_seconds(size, {**options, "n_w": n_w})

    def __init__(self, problem: Problem, seed_root: int, risk: str = "var", num_fantasies: int = 16,
                 num_restarts: int = 10, raw_samples: int = 128, inner_samples: int = 128,
                 maxiter: int = 200, inner_restarts: int = 20, raw_inner_samples: int = 1024,
                 engine: str = "botorch", gradient: str = "released", n_w: int | None = None) -> None:
        if isinstance(problem.z, DiscreteZ):
            if n_w is not None:
                raise TypeError(f"{self.name}: n_w is for a continuous Z; {problem.name} has a discrete "
                                "one (its whole support is the w set)")
            n_w = problem.z.size
        else:
            n_w = positive_int(self.name, "n_w", 50 if n_w is None else n_w)
        super().__init__(problem, seed_root, risk=risk, num_fantasies=num_fantasies,
                         num_restarts=num_restarts, raw_samples=raw_samples, inner_samples=inner_samples,
                         maxiter=maxiter, n_w=n_w, inner_restarts=inner_restarts,
                         raw_inner_samples=raw_inner_samples, engine=engine, gradient=gradient)

    def acquisition_set(self, t: int) -> tuple[Tensor, RiskMeasureMCObjective]:
        """The support and its masses (a discrete Z), or ``n_w`` fresh draws of mass 1/n_w."""
        z = self.problem.z
        if isinstance(z, DiscreteZ):
            w, masses = z.points, z.masses
        else:
            w, _ = self.w_set(t, self.n_w, "acquisition")
            masses = torch.full((w.shape[0],), 1.0 / w.shape[0], dtype=torch.float64)
        return w, WeightedRiskMeasure(risk_measure(self.risk), self.problem.alpha, masses)

    def sample_measure(self, t: int) -> SampleMeasure:
        """The measure ``engine = "fused"`` evaluates: :class:`WeightedRiskMeasure`'s, the same masses."""
        z = self.problem.z
        masses = z.masses if isinstance(z, DiscreteZ) else torch.full((self.n_w,), 1.0 / self.n_w,
                                                                     dtype=torch.float64)
        return SampleMeasure(risk_measure(self.risk), masses, self.problem.alpha)
