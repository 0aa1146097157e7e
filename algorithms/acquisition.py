"""V-UCB's acquisition function as a BoTorch ``AcquisitionFunction``, for use in your own loop.

    acq = VUCBAcquisition(model, z, alpha=0.1, beta=4.0)
    x, value = botorch.optim.optimize_acqf(acq, bounds=unit_box_of_x, q=1, num_restarts=5,
                                           raw_samples=256)

``model`` is a GP on concat([x, z]) (x first, as everywhere here), ``z`` a :class:`DiscreteZ` (the
value is exact: a weighted lower quantile over the support) or a :class:`TruncatedNormalZ`
(replaced by its equal-mass grid of ``n_per_axis`` points per axis, as V-UCB's recommendation
does). The value is VaR_alpha(u(x, Z)), u = mu + beta^(1/2) sigma the upper confidence bound:
V-UCB's x_t is its maximizer (Nguyen et al., 2021, Algorithm 1). It is differentiable almost
everywhere (through the selected order statistic), which is what ``optimize_acqf``'s L-BFGS-B
needs. At a kink (where the selected z changes) the line search can end "ABNORMAL"; BoTorch then
warns and retries from new starts, and the best of its raw samples still counts, so give it raw
samples enough to cover x (our own search, :func:`algorithms.search.maximize_x`, scores 256 per
dimension of x before L-BFGS-B). The lacing values at the maximizer are
:func:`algorithms.vucb_common.lacing_values`.
"""

from __future__ import annotations

import math

from botorch.acquisition import AcquisitionFunction
from botorch.models.model import Model
from botorch.utils.transforms import t_batch_mode_transform
from torch import Tensor

from algorithms.gp import PosteriorMarginals
from algorithms.recommend import RECOMMEND_GRID
from problems import ContinuousZ, DiscreteZ
from problems.risk import weighted_var

__all__ = ["VUCBAcquisition"]


class VUCBAcquisition(AcquisitionFunction):
    """x -> VaR_alpha(mu(x, Z) + beta^(1/2) sigma(x, Z)); ``forward``: ``b x 1 x d_x`` -> ``b``.

    Args:
        model: a single-output GP (``SingleTaskGP``) on ``d_x + d_z`` inputs.
        z: the distribution of Z on the model's z scale (see the module docstring).
        alpha: risk level in (0, 1).
        beta: the confidence parameter (>= 0; 0 gives VaR of the posterior mean).
        n_per_axis: equal-mass grid points per axis for a continuous Z (default 512 for d_z = 1,
            32 for d_z = 2, 10 beyond).
    """

    def __init__(self, model: Model, z: DiscreteZ | ContinuousZ, alpha: float, beta: float,
                 n_per_axis: int | None = None) -> None:
        super().__init__(model=model)
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
        if not beta >= 0.0:
            raise ValueError(f"beta must be >= 0, got {beta!r}")
        if isinstance(z, ContinuousZ):
            z = z.equal_mass_grid(n_per_axis or RECOMMEND_GRID.get(z.d_z, 10))
        if not isinstance(z, DiscreteZ):
            raise ValueError(f"z must be a problems.DiscreteZ or ContinuousZ, got {type(z).__name__}")
        self.marginals = PosteriorMarginals(model)
        self.points, self.masses = z.points, z.masses
        self.alpha, self.width = alpha, math.sqrt(beta)

    @t_batch_mode_transform(expected_q=1)
    def forward(self, X: Tensor) -> Tensor:
        """``b x 1 x d_x`` candidate x -> ``b`` values of VaR_alpha(u(x, Z))."""
        mean, std = self.marginals.grid(X.squeeze(-2), self.points)  # b x m each
        return weighted_var(mean + self.width * std, self.masses, self.alpha)
