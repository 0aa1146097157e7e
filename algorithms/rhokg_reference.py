"""rho-KG^apx's estimator computed the straightforward way: the kept reference path that the fast,
batched path (:class:`algorithms.rhokg_estimator.FastRhoKG`) is tested against. It works
independently of the batching: BoTorch's ``condition_on_observations`` per candidate and a loop over
the past x'. The tests (``tests/algorithms/test_rhokg.py`` and others) check the fast estimator
against it, and ``benchmarks/rhokg_iteration.py`` times the two; nothing in a run uses it."""

from __future__ import annotations

import math

import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from algorithms.rhokg_estimator import Measure, WSet, sample_root, updated_noise
from problems.risk import weighted_var


def reference_value(model: SingleTaskGP, candidate: Tensor, w: WSet, alpha: float,
                    past_x: Tensor, xi: Tensor, eps: Tensor, current_best: float,
                    root: str = "update", measure: Measure = weighted_var) -> float:
    """rho-KG^apx at one candidate (``d``), the straightforward way: BoTorch conditions the model on
    the K fantasy observations (``condition_on_observations``), and a loop over S asks the models
    for each posterior over {x'} x W.

    Same estimator as :class:`algorithms.rhokg_estimator.FastRhoKG` with the same ``root`` and base samples,
    so the two agree to rounding; the tests compare them, the benchmark times both. ``measure``:
    the risk measure of each sample over W (VaR, or CVaR for a CVaR cell).
    """
    d_x = past_x.shape[-1]
    K = xi.shape[0]
    eps = eps[:K]
    with torch.no_grad():
        c = candidate.reshape(1, -1)
        predictive = model.posterior(c, observation_noise=True)
        y = predictive.mean + predictive.variance.sqrt() * xi.reshape(-1, 1, 1)  # K x 1 x 1
        fantasy = model.condition_on_observations(c.expand(K, 1, -1), y)
        best = torch.full((K,), -math.inf, dtype=candidate.dtype)
        for x_prime in torch.cat([candidate[:d_x].reshape(1, -1), past_x]):
            A = torch.cat([x_prime.expand(w.points.shape[0], -1), w.points], dim=-1)  # m x d
            posterior = fantasy.posterior(A.expand(K, *A.shape))
            mean = posterior.mean.squeeze(-1)  # K x m
            if root == "cholesky":
                noise = eps @ sample_root(posterior.mvn.covariance_matrix).transpose(-1, -2)
            else:
                joint = model.posterior(torch.cat([A, c])).mvn.covariance_matrix
                m = A.shape[0]
                L = sample_root(joint[:m, :m])
                v = joint[:m, m] / predictive.variance.sqrt().reshape(())
                noise = updated_noise(eps @ L.transpose(-1, -2), L, v, eps)  # K x M x m
            samples = mean.unsqueeze(-2) + noise
            estimate = measure(samples, w.weights, alpha).mean(-1)  # K
            best = torch.maximum(best, estimate)
    return float(best.mean()) - current_best
