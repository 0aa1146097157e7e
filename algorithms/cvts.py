"""CV-TS (Nguyen, Dai, Low, Jaillet, "Optimizing Conditional Value-At-Risk of Black-Box Functions",
NeurIPS 2021): ``cvts``, Thompson sampling of CVaR with CV-UCB's choice of z.

At a batch start t (every iteration with ``batch = 1``), given the model of the data up to t - 1:

* draw K = ``batch`` posterior sample paths g_1..g_K (BoTorch's pathwise sampling,
  :func:`botorch.sampling.pathwise.draw_matheron_paths`: random Fourier features of the kernel for
  the prior, Matheron's rule for the update on the data);
* x_{t+k} = argmax_x CVaR_alpha(g_k(x, Z)), exact over the support (:func:`problems.weighted_cvar`),
  maximized by quasi-random scoring plus L-BFGS-B (:func:`algorithms.search.maximize_x`);
* z_{t+k} by CV-UCB's rule at x_{t+k} (:meth:`algorithms.cvucb.CVUCB.lacing_step`): the level
  alpha_t in (0, alpha] where VaR(u) - VaR(l) is largest, and the largest-mass lacing value there,
  with the bounds l, u = mu -+ beta_t^(1/2) sigma.

The K queries are evaluated one per iteration, in order, without a model update changing them: the
source's batch of K, on this project's one-evaluation-per-iteration rows (a budget of T iterations is
T evaluations, whatever K). The recommendation is the shared rule, the queried x of best
CVaR_alpha(mu(x, Z)) (the source's ``mean_cvaropt.find_max_in_set``).

Source: ``qphong/BayesOpt-LV`` (MIT), ``run_cvar_TS_discrete.py``, ``optfunc.py`` (commit b852a94);
the facts carry over, the code is our own. How it maps onto this project:

* K is ``--nthompsonsample``: 3 by the script's default, 1 in the released Branin script
  (``running_scripts/script_branin_cvar_discrete_thompson.sh``); here ``batch``, default 1.
* The source's paths are random Fourier features (``--nfeature``: 100 by default, 200 in the
  script) with a Gaussian posterior over their weights; here BoTorch's pathwise sampler, whose
  update on the data is exact for the kernel rather than for its feature approximation
  (``n_features``, default BoTorch's 1024).
* The source's random features, phases and normal draws are TensorFlow variables initialized once
  per run, so every batch of a run reuses the same random draws (its samples differ across
  iterations only through the data and the hyperparameters), and its "repeat the sampling if no
  lacing value" loop redraws the same paths. The method's samples are independent draws; that is the
  default here (``paths = "fresh"``), and ``paths = "released"`` reuses the same seed at every
  batch of a cell, as the released code does. No lacing value missing here (Theorem 1 of the V-UCB
  paper; an empty set raises), so there is no redraw loop.
* The source's ``--beta`` multiplies sigma (1.5 by default, 3 in its scripts): ``beta = "authors"``
  here (beta^(1/2) = 3); the default is V-UCB's schedule, as CV-UCB's.
* Ties among lacing values of equal mass: the source takes the first (``--shuffletie 0``), here one
  at random (as CV-UCB).
* A continuous Z, which the source does not have: as CV-UCB, N quasi-random draws of Z per batch
  (``n_samples``), each of mass 1/N.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import ClassVar

import torch
from botorch.models import SingleTaskGP
from botorch.sampling.pathwise import draw_kernel_feature_paths, draw_matheron_paths
from torch import Tensor

from algorithms.base import Proposal, positive_int, registered
from algorithms.cost import ProblemSize
from algorithms.cvucb import AUTHORS_GP, CONTINUOUS_DRAWS, CVAR_PAPER, CVUCB
from algorithms.options import Option
from algorithms.search import maximize_x
from algorithms.vucb_common import FIRST_TIE, search_seconds
from problems import Problem
from problems.risk import weighted_cvar
from problems.seeding import derive_seed

PATHS = ("fresh", "released")


def draw_paths(model: SingleTaskGP, count: int, n_features: int, seed: int) -> Callable[[Tensor], Tensor]:
    """``count`` posterior sample paths of ``model``, seeded: a function ``1 x n x d`` -> ``count x n``.

    BoTorch's sampler draws from torch's global stream; it runs inside a forked stream seeded by
    ``seed``, so the paths depend on the seed alone and the caller's stream is left as it was.
    """
    prior = functools.partial(draw_kernel_feature_paths, num_features=n_features)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        paths = draw_matheron_paths(model, sample_shape=torch.Size([count]), prior_sampler=prior)
    return paths


def sample_cvar_function(paths: Callable[[Tensor], Tensor], k: int, points: Tensor, masses: Tensor,
                         alpha: float, d_x: int) -> Callable[[Tensor], Tensor]:
    """x -> CVaR_alpha(g_k(x, Z)) over a finite weighted set of z: ``b x d_x`` -> ``b``
    (differentiable: the tail's entries carry the gradient)."""

    def sample_cvar(X: Tensor) -> Tensor:
        b, m = X.shape[0], points.shape[0]
        xz = torch.cat([X.unsqueeze(-2).expand(b, m, d_x), points.expand(b, m, points.shape[-1])], dim=-1)
        # the paths broadcast their sample dimension against the input's last batch dimension:
        # one flat batch of b m points gives K x (b m) values
        values = paths(xz.reshape(1, b * m, -1))[k].reshape(b, m)
        return weighted_cvar(values, masses, alpha)

    return sample_cvar


@registered
class CVTS(CVUCB):
    """CV-TS: x maximizes the CVaR of a posterior sample path; z is CV-UCB's lacing value at x
    (module docstring). ``batch`` queries from one model, evaluated one an iteration.

    Its options are declared in :attr:`options`.
    """

    name = "cvts"
    source = (f"{CVAR_PAPER} (CV-TS); the authors' code `qphong/BayesOpt-LV` (MIT), commit b852a94, "
              "`run_cvar_TS_discrete.py`, `optfunc.py`")
    deviations = (
        "Paths come from BoTorch's pathwise sampler (`n_features` = 1024 random Fourier features, Matheron's "
        "update), the source's from random-feature models (`--nfeature` 100, 200 in its script).",
        "Paths are independent at every batch, where the released code reuses the same random draws all run "
        "(TensorFlow variables initialized once): `paths=\"released\"`.",
        "K = `batch` = 1 path a model by default (the script's `--nthompsonsample` is 3, its Branin "
        "script's 1), the K queries evaluated one an iteration.",
        "beta_t (for z's lacing value) is V-UCB's schedule, where the source's `--beta` multiplies sigma "
        "(1.5 by default, 3 in its scripts: `beta=\"authors\"`).",
        FIRST_TIE,
        "No redraw when no lacing value is found (the source's loop): the set is never empty (the V-UCB "
        "paper's Theorem 1), and an empty one raises.",
        CONTINUOUS_DRAWS, AUTHORS_GP,
    )
    options: ClassVar[tuple[Option, ...]] = (
        *CVUCB.options,
        Option("batch", int, 1, "K, the sample paths drawn at once, and so the queries chosen from one "
               "model (evaluated one an iteration, in order; the source's ``--nthompsonsample``: 3 "
               "by default, 1 in its Branin script).", low=1),
        Option("n_features", int, 1024, "random Fourier features of each path's prior part "
               "(BoTorch's default; the source's ``--nfeature``: 100, 200 in its script).", low=1),
        Option("paths", str, "fresh", "``\"fresh\"``: independent paths at every batch (the method); "
               "``\"released\"``: the same random draws at every batch of a cell, as the released "
               "code's TensorFlow variables.", choices=PATHS))

    @classmethod
    def reduced_options(cls, z_kind: str) -> dict | None:
        """See :meth:`Algorithm.reduced_options`: fewer features, raw x and starts (and draws of a
        continuous Z): about 0.2 s an iteration instead of 1-4 s."""
        reduced = {"n_features": 256, "n_raw": 64, "n_restarts": 2}
        return reduced | ({"n_samples": 64} if z_kind == "continuous" else {})

    @classmethod
    def iteration_seconds(cls, size: ProblemSize, options: Mapping[str, object]) -> float:
        """See :mod:`algorithms.cost`: CV-UCB's x search on a path instead of the bounds, whose
        evaluation costs in proportion to its features and to the z it is evaluated at (0.17 s at
        1024 features on the 15 points of yacht and Hartmann-6 (5,1), measured by
        ``benchmarks/cost_model.py``): a support of n points or N draws of a continuous Z cost
        n / 15 or N / 15 times that (f6's 256 draws: 15 s an iteration measured beside a grid,
        where a cost per x independent of N had estimated 1.1 s)."""
        n_z = size.z_size if size.z_kind == "discrete" else (options["n_samples"] or 256)
        features = options["n_features"] / 1024
        return search_seconds(options, size.d_x, 0.17) * (0.5 + features) * max(1.0, n_z / 15)

    def __init__(self, problem: Problem, seed_root: int, risk: str = "cvar", batch: int = 1,
                 n_features: int = 1024, paths: str = "fresh", **cvucb_options: object) -> None:
        super().__init__(problem, seed_root, risk=risk, **cvucb_options)
        self.batch = positive_int(self.name, "batch", batch)
        self.n_features = positive_int(self.name, "n_features", n_features)
        if paths not in PATHS:
            raise ValueError(f"{self.name}: paths must be one of {', '.join(PATHS)}, got {paths!r}")
        self.paths = paths
        self.pending: list[Proposal] = []  # the rest of the current batch, in order

    def path_seed(self, t: int) -> int:
        """The seed of the paths of the batch starting at iteration ``t`` (one per cell if
        ``paths = "released"``)."""
        return derive_seed(self.seed_root, "cvts-paths", *(() if self.paths == "released" else (t,)))

    def propose(self, model: SingleTaskGP, t: int) -> Proposal:
        if not self.pending:
            self.pending = self.propose_batch(model, t)
        return self.pending.pop(0)

    def propose_batch(self, model: SingleTaskGP, t: int) -> list[Proposal]:
        """The K queries of the batch starting at iteration ``t``: query k is iteration t + k's (its
        z-choice stream and x-search seed are that iteration's)."""
        support = self.support(t)
        points, masses, _ = support
        paths = draw_paths(model, self.batch, self.n_features, self.path_seed(t))
        batch = []
        for k in range(self.batch):  # K separate searches (K is small: 1 to 3 in the source)
            score = sample_cvar_function(paths, k, points, masses, self.problem.alpha, self.problem.d_x)
            x_k, sample_cvar = maximize_x(model, score, self.problem.d_x, self.search_seed(t + k),
                                          self.n_raw, self.n_restarts, self.maxiter)
            proposal = self.lacing_step(model, x_k, t + k, self.beta(t + k), support)
            proposal.info.update({"sample_cvar": sample_cvar, "batch_index": k})
            batch.append(proposal)
        return batch

    def state_dict(self) -> dict:
        """The stream's state and the batch's queries not yet evaluated."""
        pending = [{"x": p.x, "z": p.z, "info": dict(p.info), "lower_bound": p.lower_bound}
                   for p in self.pending]
        return {**super().state_dict(), "pending": pending}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.pending = [Proposal(p["x"], p["z"], dict(p["info"]), p["lower_bound"])
                        for p in state.get("pending", [])]

    def acquisition_function(self, model: SingleTaskGP, t: int) -> Callable[[Tensor], Tensor]:
        """CVaR_alpha of the batch's first sample path over the iteration's z set."""
        points, masses, _ = self.support(t)
        paths = draw_paths(model, 1, self.n_features, self.path_seed(t))
        return sample_cvar_function(paths, 0, points, masses, self.problem.alpha, self.problem.d_x)
