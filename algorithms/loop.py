"""The BO loop, once: :class:`BOLoop` holds the data, the GP and the algorithm of one run, and
updates the model on the GP profile's schedule.

Both ways of running an algorithm go through it: a grid cell (:func:`harness.cell.run_cell`, which
observes the benchmark function with its noise, scores every recommendation and checkpoints) and
:class:`algorithms.VaROptimizer` (which asks the user's function one query at a time and saves to a
file). What the two share is exactly what decides the queries and the recommendations, so a cell and
an optimizer run with the same problem, seed root and profile make the same choices:

* the data: every query (x, z) on the unit cube and its outcome, in the order told;
* the model: none until the ``n_init`` observations of the initial design are told, then a
  maximum-likelihood fit; after that, at BO iteration t (the t-th observation after the initial
  design) a new fit when t is a multiple of the profile's ``fit_every``, otherwise the new data with
  the hyperparameters kept (:func:`algorithms.gp.fit_gp`, drawing from the run's ``gp-fit`` stream);
* the algorithm's proposal for iteration t + 1 and its recommendation, both given the current model.

Everything runs with torch's default dtype set to float64 (:func:`problems.float64.default_float64`):
see :func:`algorithms.gp.make_gp` for why the model's construction depends on it.
"""

from __future__ import annotations

import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from algorithms.base import Algorithm, Proposal, Recommendation
from algorithms.gp import FitReport, GPProfile, fit_gp, gp_profile, make_gp
from problems import Problem
from problems.float64 import default_float64
from problems.seeding import generator

__all__ = ["BOLoop", "z_blind_draw"]


def z_blind_draw(problem: Problem, seed_root: int, t: int) -> Tensor:
    """The z of a z-blind method's evaluation at iteration ``t``: one draw from Z's distribution
    (``d_z``), on the run's stream ``("z-blind", t)``, so that a resumed run draws the same."""
    return problem.z.sample(1, generator(seed_root, "z-blind", t))[0]


class BOLoop:
    """The data, model and algorithm of one BO run (see the module docstring).

    Args:
        algorithm: the run's algorithm, built for its problem (whose ``d_x``, ``d_z`` and ``n_init``
            the loop reads).
        seed_root: the run's root seed (:func:`problems.seeding.derive_seed` of the run's name and
            seed); the GP fits draw from its ``gp-fit`` stream.
        profile: the GP profile (a name of :data:`algorithms.gp.GP_PROFILES` or a profile).

    Attributes:
        train_X: ``n x (d_x + d_z)`` queries told so far, on the unit cube, float64.
        train_Y: ``n x 1`` their outcomes, float64.
        model: the GP of the data, None before the initial design is complete.
    """

    def __init__(self, algorithm: Algorithm, seed_root: int, profile: str | GPProfile) -> None:
        problem = algorithm.problem
        self.algorithm = algorithm
        self.profile = gp_profile(profile)
        self.n_init = problem.n_init
        self.fit_rng = generator(seed_root, "gp-fit")
        self.seed_root = seed_root
        self.train_X = torch.empty(0, problem.d_x + problem.d_z, dtype=torch.float64)
        self.train_Y = torch.empty(0, 1, dtype=torch.float64)
        self.model: SingleTaskGP | None = None

    @property
    def n_observations(self) -> int:
        return int(self.train_X.shape[0])

    @property
    def iteration(self) -> int:
        """BO iterations told so far (the initial design is iteration 0)."""
        return max(0, self.n_observations - self.n_init)

    def fitted_model(self) -> SingleTaskGP:
        """The model; ``RuntimeError`` before the initial design is told."""
        if self.model is None:
            raise RuntimeError(f"no model before the {self.n_init} initial evaluations are told")
        return self.model

    def tell(self, queries: Tensor, outcomes: Tensor) -> FitReport | None:
        """Add ``queries`` (``k x (d_x + d_z)``, unit cube) and their ``outcomes`` (``k``) and, once
        the initial design is complete, update the model once for all of them (the first update is a
        fit; then a fit when :attr:`iteration` is a multiple of ``fit_every``). Returns the update's
        report, or None while the initial design is incomplete."""
        self.train_X = torch.cat([self.train_X, queries])
        self.train_Y = torch.cat([self.train_Y, outcomes.reshape(-1, 1)])
        if self.n_observations < self.n_init:
            return None
        refit = self.model is None or self.iteration % self.profile.fit_every == 0
        with default_float64():
            self.model, report = fit_gp(self.train_X, self.train_Y, self.model, refit=refit,
                                        generator=self.fit_rng, profile=self.profile)
        return report

    def propose(self) -> Proposal:
        """The algorithm's query for the next iteration (:attr:`iteration` + 1), given the model and
        the data; a z-blind algorithm's z is drawn here (:func:`z_blind_draw`)."""
        t = self.iteration + 1
        with default_float64():
            self.algorithm.observe(self.train_X, self.train_Y)
            proposal = self.algorithm.propose(self.fitted_model(), t)
        if not self.algorithm.chooses_z:
            if proposal.z is not None:
                raise ValueError(f"{self.algorithm.name} is z-blind (chooses_z = False) but proposed a z")
            proposal.z = z_blind_draw(self.algorithm.problem, self.seed_root, t)
        return proposal

    def recommend(self) -> Recommendation:
        """The algorithm's recommendation given the model and every query so far."""
        with default_float64():
            self.algorithm.observe(self.train_X, self.train_Y)
            return self.algorithm.recommend(self.fitted_model(), self.train_X)

    def state_dict(self) -> dict:
        """Everything the loop carries (tensors and plain data only): ``train_X``, ``train_Y``,
        ``model`` (its state dict, or None), ``fit_rng`` (the stream's state) and ``algorithm``
        (:meth:`Algorithm.state_dict`), and ``model_targets`` (the model's standardized targets, see
        :meth:`load_state_dict`). The callers store these keys beside their own."""
        return {"train_X": self.train_X, "train_Y": self.train_Y,
                "model": None if self.model is None else self.model.state_dict(),
                "model_targets": None if self.model is None else self.model.train_targets.clone(),
                "fit_rng": self.fit_rng.get_state(), "algorithm": self.algorithm.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Continue from :meth:`state_dict` (extra keys are the caller's and ignored): the model is
        rebuilt on the data and given the stored hyperparameters, so the next update and proposal
        are those of the run that saved it."""
        self.train_X, self.train_Y = state["train_X"], state["train_Y"]
        self.model = None
        if state["model"] is not None:
            with default_float64():
                model = make_gp(self.train_X, self.train_Y, self.profile)
                model.load_state_dict(state["model"])
                if state.get("model_targets") is not None:
                    # BoTorch's load_state_dict un- and re-standardizes the targets (keep_transforms),
                    # a round trip that moves them by an ulp: a model fit at the saved iteration never
                    # made it, so the stored targets are put back exactly (checkpoints written before
                    # this key existed keep the round trip)
                    model.set_train_data(targets=state["model_targets"], strict=True)
                self.model = model.eval().requires_grad_(False)
        self.fit_rng.set_state(state["fit_rng"])
        self.algorithm.load_state_dict(state["algorithm"])
