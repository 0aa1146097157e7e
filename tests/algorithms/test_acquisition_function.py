"""``Algorithm.acquisition_function``, which the complexity study times: each is the function its
method's search maximizes, checked against an independent computation."""

import math

import numpy as np
import pytest
import torch

from algorithms import ALGORITHMS
from algorithms.gp import fit_gp
from algorithms.rhokg_reference import reference_value
from problems import build_problem


def _model(name: str, n: int = 10):
    p = build_problem(name, with_optimum=False)
    g = torch.Generator().manual_seed(3)
    x = torch.rand(n, p.d_x, generator=g)
    z = p.z.points[torch.randint(p.z.size, (n,), generator=g)] if p.z.is_discrete else p.z.sample(n, g)
    y = p.f(x, z) + 0.1 * torch.randn(n, generator=g)
    return p, fit_gp(torch.cat([x, z], -1), y.unsqueeze(-1), None, True, g)[0]


def _bounds(model, X: torch.Tensor, Z: torch.Tensor, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """u and l on X x Z from BoTorch's own posterior (not the project's fast marginals)."""
    pairs = torch.cat([X.repeat_interleave(Z.shape[0], 0), Z.repeat(X.shape[0], 1)], -1)
    with torch.no_grad():
        post = model.posterior(pairs)
    mean = post.mean.reshape(X.shape[0], Z.shape[0]).numpy()
    std = post.variance.sqrt().reshape(X.shape[0], Z.shape[0]).numpy()
    return mean + math.sqrt(beta) * std, mean - math.sqrt(beta) * std


def _var(values: np.ndarray, masses: np.ndarray, alpha: float) -> float:
    order = np.argsort(values, kind="stable")
    return float(values[order][np.searchsorted(np.cumsum(masses[order]), alpha - 1e-12)])


def test_vucb_and_stableopt_functions_are_var_and_min_of_the_upper_bound() -> None:
    p, model = _model("branin-1-1-discrete")
    X = torch.rand(7, 1, generator=torch.Generator().manual_seed(1))
    t = 4
    u, _ = _bounds(model, X, p.z.points, ALGORITHMS["vucb-prob"](p, 0).beta(t))
    masses = p.z.masses.numpy()
    vucb = ALGORITHMS["vucb-prob"](p, 0).acquisition_function(model, t)(X)
    assert vucb.numpy() == pytest.approx([_var(row, masses, p.alpha) for row in u], abs=1e-8)
    stable = ALGORITHMS["stableopt"](p, 0).acquisition_function(model, t)(X)
    assert stable.numpy() == pytest.approx(u.min(axis=1), abs=1e-8)


def test_saa_function_is_the_var_of_u_over_the_iterations_draws() -> None:
    p, model = _model("branin-1-1-continuous")
    algorithm = ALGORITHMS["vucb-prob-saa"](p, 0, n_samples=64)
    X = torch.rand(5, 1, generator=torch.Generator().manual_seed(2))
    u, _ = _bounds(model, X, algorithm.samples(3), algorithm.beta(3))
    value = algorithm.acquisition_function(model, 3)(X)
    assert value.numpy() == pytest.approx([_var(row, np.full(64, 1 / 64), p.alpha) for row in u], abs=1e-8)


def test_rhokg_function_is_the_straightforward_value_with_the_full_search() -> None:
    p, model = _model("branin-1-1-discrete", n=8)
    algorithm = ALGORITHMS["rhokg-apx"](p, 5)
    t = 2
    function = algorithm.acquisition_function(model, t)
    candidates = torch.tensor([[0.3, float(p.z.points[40, 0])], [0.8, float(p.z.points[55, 0])]])
    fast = function(candidates)
    est = algorithm.estimator(model, model.train_inputs[0], t)
    w = algorithm._w_set(t)
    _, xi, eps, _ = algorithm._base_samples(t, w.points.shape[0])
    current_best = float(est.now_past.max())
    for i in range(2):
        straightforward = reference_value(model, candidates[i], w, p.alpha, est.past_x, xi, eps, current_best)
        assert float(fast[i]) == pytest.approx(straightforward, abs=1e-7)


def test_lnso_and_random_search_have_none() -> None:
    p, model = _model("branin-1-1-continuous")
    assert ALGORITHMS["vucb-prob"](p, 0).acquisition_function(model, 1) is None
    assert ALGORITHMS["random"](p, 0).acquisition_function(model, 1) is None
