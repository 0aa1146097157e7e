"""CV-TS against its definitions: its sample paths against the posterior (Monte Carlo, a tolerance
from the number of draws), x at a vanishing posterior variance against a dense grid of the posterior
mean's CVaR, z a largest-mass lacing value at x (the regret bound's inequalities written again), the
batch of K from one model, and the released code's reuse of the same draws."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import RBFKernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood

from algorithms import build_algorithm
from algorithms.cvts import CVTS, draw_paths
from algorithms.gp import PosteriorMarginals
from problems import build_problem
from tests.algorithms.test_cvucb import cvar_np, var_np
from tests.algorithms.test_vucb import random_model

#: A smaller x-search where the test's assertions do not depend on its size.
FAST = {"n_raw": 64, "n_restarts": 2}


def test_sample_paths_have_the_posterior_mean_and_covariance() -> None:
    """Mean and covariance of the paths at 6 points against the model's posterior. BoTorch's paths
    share one random feature map per draw, so the estimate is averaged over B = 200 independent draws
    of 50 paths each: each draw's sample mean and covariance are unbiased for the posterior's (the
    prior's feature kernel is unbiased for the kernel, and Matheron's update is linear in it), and the
    tolerance is 5 standard errors of the mean over the B draws, read from the draws themselves."""
    model = random_model(2, 15, 3)
    X = torch.rand(6, 2, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    with torch.no_grad():
        posterior = model.posterior(X)
        mean, cov = posterior.mean.squeeze(-1), posterior.covariance_matrix
        means, covs = [], []
        for b in range(200):
            values = draw_paths(model, 50, 256, seed=b)(X.unsqueeze(0))  # 50 x 6
            means.append(values.mean(0))
            centred = values - mean  # about the exact mean: an unbiased covariance estimate
            covs.append(centred.T @ centred / values.shape[0])
    means, covs = torch.stack(means), torch.stack(covs)
    for estimates, exact in ((means, mean), (covs, cov)):
        standard_error = estimates.std(0) / estimates.shape[0] ** 0.5
        assert torch.all((estimates.mean(0) - exact).abs() <= 5 * standard_error + 1e-12)
    assert float(cov.diagonal().min()) > 1e-3  # the test is not vacuous: the variances are not tiny


def f0(X: torch.Tensor) -> torch.Tensor:
    """sin(6 x) + (z - 0.5) (1 + 2 x): its CVaR over z has an interior maximizer in x."""
    return torch.sin(6 * X[..., 0]) + (X[..., 1] - 0.5) * (1 + 2 * X[..., 0])


def vanishing_variance_model() -> SingleTaskGP:
    """A GP on 12 noise-free values of f0 with kernel variance 1e-10 (std at most 1e-5) and noise
    1e-18: its mean interpolates the data, its variance vanishes."""
    X = torch.rand(12, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    likelihood = GaussianLikelihood(noise_constraint=GreaterThan(1e-20))
    model = SingleTaskGP(X, f0(X).unsqueeze(-1), covar_module=ScaleKernel(RBFKernel(ard_num_dims=2)),
                         likelihood=likelihood, outcome_transform=None)
    model.covar_module.base_kernel.lengthscale = torch.tensor([0.4, 0.4])
    model.covar_module.outputscale = 1e-10
    model.likelihood.noise = 1e-18
    model.mean_module.constant = float(f0(X).mean())
    return model.eval()


# BoTorch's posterior rounds the vanishing variances' float noise below zero up to 1e-10, and says so
@pytest.mark.filterwarnings("ignore:Negative variance values detected")
def test_at_a_vanishing_variance_x_maximizes_the_cvar_of_the_posterior_mean() -> None:
    """With sigma <= 1e-5, every path is the posterior mean mu: x must be the maximizer of
    CVaR_alpha(mu(x, Z)) over a dense grid of 4001 x (mu by BoTorch's own posterior, CVaR by the
    test's own formula)."""
    problem = build_problem("branin-1-1-discrete", with_optimum=False)
    model = vanishing_variance_model()
    points, masses = problem.z.points, problem.z.masses.numpy()
    grid = torch.linspace(0, 1, 4001, dtype=torch.float64)
    xz = torch.stack(torch.broadcast_tensors(grid[:, None], points[None, :, 0]), -1)  # 4001 x m x 2
    with torch.no_grad():
        posterior = model.posterior(xz)  # a batch of 4001 joint posteriors over the m values of z
        mu = posterior.mean.squeeze(-1).numpy()
        assert float(posterior.variance.max()) <= 1e-10
    order = np.argsort(mu, axis=1)  # CVaR from the definition: the lowest values up to mass alpha
    v, w = np.take_along_axis(mu, order, 1), masses[order]
    taken = np.clip(problem.alpha - (np.cumsum(w, 1) - w), 0, w)
    cvars = (v * taken).sum(1) / problem.alpha
    best = float(grid[cvars.argmax()])
    assert 0.02 < best < 0.98  # an interior maximizer: the test is not decided by the box
    for seed in range(3):
        proposal = CVTS(problem, seed_root=seed, batch=2).propose(model, 1)
        assert float(proposal.x[0]) == pytest.approx(best, abs=1e-3)
        assert proposal.info["sample_cvar"] == pytest.approx(cvars.max(), abs=1e-4)


@pytest.mark.parametrize("seed", range(4))
def test_z_is_a_largest_mass_lacing_value_at_the_sampled_x(seed: int) -> None:
    """At (x, z): z is a lacing value at alpha_t (the level of largest VaR(u) - VaR(l), written again
    over every level where a VaR steps), of the largest mass among them; x maximizes its path's CVaR
    over a grid."""
    name = ["branin-1-1-discrete", "hartmann-1-2-discrete"][seed % 2]
    problem = build_problem(name, with_optimum=False)
    model = random_model(problem.d_x + problem.d_z, 12, seed)
    algorithm = CVTS(problem, seed_root=seed)
    proposal = algorithm.propose(model, 3)
    beta, alpha = proposal.info["beta"], problem.alpha
    points, masses = problem.z.points, problem.z.masses.numpy()
    with torch.no_grad():
        l, _, u = PosteriorMarginals(model).grid_bounds(proposal.x.unsqueeze(0), points, beta)
    l, u = l[0].numpy(), u[0].numpy()
    # every level where either VaR steps (the cumulative masses of the sorted l and of the sorted u,
    # from the definition P(F <= v)) below alpha, alpha itself, and a fine grid
    steps = [(masses[None, :] * (v[None, :] <= v[:, None])).sum(-1) for v in (l, u)]
    levels = np.concatenate([np.linspace(0, alpha, 20_001)[1:], *steps, [alpha]])
    levels = levels[(levels > 0) & (levels <= alpha)]
    gaps = var_np(u, masses, levels) - var_np(l, masses, levels)
    assert proposal.info["var_gap"] == pytest.approx(gaps.max(), abs=1e-12)
    alpha_t = proposal.info["alpha_t"]
    var_l, var_u = var_np(l, masses, np.array([alpha_t]))[0], var_np(u, masses, np.array([alpha_t]))[0]
    j = int(torch.nonzero((points == proposal.z).all(-1))[0])
    lacing = (l <= var_l + 1e-12) & (u >= var_u - 1e-12)
    assert lacing[j] and masses[j] >= masses[lacing].max() * (1 - 1e-9)
    assert proposal.info["cvar_lower"] == pytest.approx(cvar_np(l, masses, alpha), abs=1e-5)
    # the sampled x: its path's CVaR is at least that of every x of a grid (the same path)
    path = draw_paths(model, 1, algorithm.n_features, algorithm.path_seed(3))
    grid = torch.rand(400, problem.d_x, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    xs = torch.cat([grid, proposal.x.unsqueeze(0)])
    m = points.shape[0]
    xz = torch.cat([xs.unsqueeze(1).expand(-1, m, -1), points.expand(xs.shape[0], m, -1)], -1)
    with torch.no_grad():
        values = path(xz.reshape(1, -1, xz.shape[-1]))[0].reshape(xs.shape[0], m).numpy()
    cvars = np.array([cvar_np(row, masses, alpha, 4000) for row in values])
    assert cvars[-1] == pytest.approx(proposal.info["sample_cvar"], abs=1e-3)
    assert cvars[-1] >= cvars[:-1].max() - 1e-3


def test_a_batch_is_chosen_from_one_model_and_survives_a_checkpoint() -> None:
    """batch = 3: the three queries come from the model of the batch's start (a model passed later
    is not used), from three paths, and a checkpoint between them resumes the
    rest of the batch."""
    problem = build_problem("hartmann-1-2-discrete", with_optimum=False)
    first, other = random_model(3, 12, 1), random_model(3, 30, 2)
    algorithm = CVTS(problem, seed_root=5, batch=3, **FAST)
    queries = [algorithm.propose(first, 1)]
    state = algorithm.state_dict()
    queries += [algorithm.propose(other, 2), algorithm.propose(other, 3)]
    resumed = CVTS(problem, seed_root=5, batch=3, **FAST)
    resumed.load_state_dict(state)
    again = [resumed.propose(other, 2), resumed.propose(other, 3)]
    assert [q.info["batch_index"] for q in queries] == [0, 1, 2]
    alone = CVTS(problem, seed_root=5, batch=3, **FAST).propose_batch(first, 1)
    for q, a in zip(queries, alone, strict=True):
        assert torch.equal(q.x, a.x) and torch.equal(q.z, a.z)
    for q, r in zip(queries[1:], again, strict=True):
        assert torch.equal(q.x, r.x) and torch.equal(q.z, r.z) and q.info == r.info
    assert len({q.info["sample_cvar"] for q in queries}) == 3  # three paths, not one three times
    fourth = algorithm.propose(other, 4)  # a new batch, from the model it is given
    assert torch.equal(fourth.x, CVTS(problem, seed_root=5, batch=3, **FAST).propose_batch(other, 4)[0].x)


def test_released_paths_reuse_the_same_draws_at_every_batch() -> None:
    """paths = "released": the same seed at every batch (the same path on the same model, so the same
    x at two iterations with the same search seed); "fresh": another path each batch."""
    problem = build_problem("branin-1-1-discrete", with_optimum=False)
    released = CVTS(problem, seed_root=2, paths="released")
    fresh = CVTS(problem, seed_root=2)
    assert released.path_seed(1) == released.path_seed(7) != fresh.path_seed(1) != fresh.path_seed(7)
    model = random_model(2, 10, 4)
    X = torch.rand(1, 5, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    with torch.no_grad():
        a = draw_paths(model, 1, 64, released.path_seed(1))(X)
        b = draw_paths(model, 1, 64, released.path_seed(7))(X)
        c = draw_paths(model, 1, 64, fresh.path_seed(7))(X)
    assert torch.equal(a, b) and not torch.allclose(a, c)


def test_cvts_refuses_var_and_bad_options() -> None:
    problem = build_problem("branin-1-1-discrete", with_optimum=False)
    with pytest.raises(ValueError, match="optimizes cvar only"):
        build_algorithm("cvts", CVTS, problem, 0, risk="var")
    for options, message in (({"batch": 0}, "batch must be a positive integer"),
                             ({"n_features": 2.0}, "n_features must be a positive integer"),
                             ({"paths": "reused"}, "paths must be one of fresh, released")):
        with pytest.raises(ValueError, match=message):
            CVTS(problem, 0, **options)


def test_continuous_z_uses_fresh_quasi_random_draws() -> None:
    """On a continuous Z (N = 64 draws of mass 1/N) z is one of the iteration's draws, and two
    iterations draw different sets."""
    problem = build_problem("branin-1-1-continuous", with_optimum=False)
    algorithm = CVTS(problem, seed_root=1, n_samples=64)
    model = random_model(2, 10, 5)
    proposal = algorithm.propose(model, 2)
    points, _, _ = algorithm.support(2)
    assert points.shape == (64, 1) and bool((points == proposal.z).all(-1).any())
    assert not torch.equal(points, algorithm.support(3)[0])
