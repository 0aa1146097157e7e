"""GP profiles (paper, borisk, authors): the model each builds, that its fit optimizes the objective
its source states (an independent numpy computation of the log likelihood plus log priors), and the
posterior code on the Matern profiles against BoTorch's own posterior."""

import math

import numpy as np
import pytest
import torch
from gpytorch.kernels import MaternKernel, RBFKernel

from algorithms.gp import GP_PROFILES, PosteriorMarginals, fit_gp, gp_profile, hyperparameters
from harness.cell import CellSpec, run_cell
from problems import build_problem
from problems.seeding import generator


def data(n: int = 14, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    p = build_problem("hartmann-1-2-discrete", with_optimum=False)
    g = generator("gp-profile-test", seed)
    x = torch.rand(n, 1, generator=g, dtype=torch.float64)
    z = p.z.sample_support(n, g)
    y = p.observe(x, z, torch.randn(n, generator=g, dtype=torch.float64))
    return torch.cat([x, z], -1), y.unsqueeze(-1)


def matern52(r: np.ndarray) -> np.ndarray:
    return (1 + math.sqrt(5) * r + 5 / 3 * r**2) * np.exp(-math.sqrt(5) * r)


def gamma_logpdf(v: float, concentration: float, rate: float) -> float:
    return (concentration * math.log(rate) - math.lgamma(concentration)
            + (concentration - 1) * math.log(v) - rate * v)


def objective(X: np.ndarray, y: np.ndarray, theta: dict, profile) -> float:
    """Log marginal likelihood plus log priors, written from the profile's definition."""
    if profile.standardize:
        y = (y - y.mean()) / y.std(ddof=1)
    ls, s, noise, c = theta["ls"], theta["s"], theta["noise"], theta["c"]
    diff = X[:, None, :] / ls - X[None, :, :] / ls
    r = np.sqrt((diff**2).sum(-1))
    K = s * (matern52(r) if profile.kernel == "matern52" else np.exp(-0.5 * r**2))
    K = K + noise * np.eye(len(y))
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L, y - c)
    value = -0.5 * alpha @ alpha - np.log(np.diag(L)).sum() - 0.5 * len(y) * math.log(2 * math.pi)
    if profile.lengthscale_prior:
        value += sum(gamma_logpdf(v, *profile.lengthscale_prior) for v in ls)
    if profile.outputscale_prior:
        value += gamma_logpdf(s, *profile.outputscale_prior)
    if profile.noise_prior:
        value += gamma_logpdf(noise, *profile.noise_prior)
    return value


def fitted(model) -> dict:
    h = hyperparameters(model)
    return {"ls": np.array(h["gp_lengthscale"]), "s": h["gp_outputscale"], "noise": h["gp_noise"],
            "c": h["gp_mean"]}


@pytest.mark.parametrize("name", ["borisk", "authors"])
def test_the_fit_is_a_stationary_point_of_the_stated_objective(name: str) -> None:
    profile = gp_profile(name)
    X, Y = data()
    model, report = fit_gp(X, Y, None, refit=True, generator=torch.Generator().manual_seed(0),
                           profile=profile)
    assert report.ok, report.message
    theta = fitted(model)
    Xn, y = X.numpy(), Y.squeeze(-1).numpy()
    best = objective(Xn, y, theta, profile)
    # no step of 1 % in any positive hyperparameter (or 0.01 in the mean) improves the objective
    # beyond what L-BFGS-B's tolerance leaves
    for key in ("ls", "s", "noise", "c"):
        for i in range(np.size(theta[key])):
            for sign in (-1, 1):
                moved = {k: np.array(v, dtype=float).copy() for k, v in theta.items()}
                flat = moved[key].reshape(-1)
                flat[i] = flat[i] + sign * 0.01 if key == "c" else flat[i] * (1 + sign * 0.01)
                moved = {k: (v if k == "ls" else float(v)) for k, v in moved.items()}
                assert objective(Xn, y, moved, profile) <= best + 1e-6, (key, i, sign)
    # the priors matter: without them the same point is not stationary (the test can fail)
    bare = type(profile)(**{**vars(profile), "lengthscale_prior": None, "outputscale_prior": None,
                            "noise_prior": None})
    steps = [objective(Xn, y, {**theta, "noise": theta["noise"] * f}, bare) for f in (0.99, 1.01)]
    assert max(steps) > objective(Xn, y, theta, bare) + 1e-6


def test_the_profiles_build_what_their_sources_state() -> None:
    X, Y = data(8)
    g = torch.Generator().manual_seed(0)
    paper, _ = fit_gp(X, Y, None, True, g, profile="paper")
    borisk, _ = fit_gp(X, Y, None, True, g, profile="borisk")
    authors, _ = fit_gp(X, Y, None, True, g, profile="authors")
    assert isinstance(paper.covar_module.base_kernel, RBFKernel)
    for model in (borisk, authors):
        assert isinstance(model.covar_module.base_kernel, MaternKernel)
        assert model.covar_module.base_kernel.nu == 2.5
        assert model.covar_module.base_kernel.lengthscale.shape[-1] == 3  # ARD over (x, z)
    assert getattr(authors, "outcome_transform", None) is None
    assert borisk.outcome_transform is not None and paper.outcome_transform is not None
    priors = {name: (p.concentration.item(), p.rate.item()) for name, _, p, _, _ in borisk.named_priors()}
    assert sorted(priors.values()) == sorted([(3.0, 6.0), (2.0, 0.15), (1.1, 0.5)])
    authors_priors = [(p.concentration.item(), p.rate.item()) for _, _, p, _, _ in authors.named_priors()]
    assert authors_priors == [(1.1, 2.0)]  # shape 1.1, scale 0.5
    assert 1e-4 <= authors.likelihood.noise.item() <= 4.0
    assert GP_PROFILES["borisk"].fit_every == 1 and GP_PROFILES["authors"].fit_every == 3


@pytest.mark.parametrize("name", ["borisk", "authors"])
def test_marginals_and_grid_match_botorch_on_the_matern_profiles(name: str) -> None:
    X, Y = data(12, 1)
    model, _ = fit_gp(X, Y, None, True, torch.Generator().manual_seed(0), profile=name)
    marginals = PosteriorMarginals(model)
    g = torch.Generator().manual_seed(3)
    xs = torch.rand(5, 1, generator=g, dtype=torch.float64)
    zs = torch.rand(7, 2, generator=g, dtype=torch.float64)
    mean, std = marginals.grid(xs, zs)
    pairs = torch.cat([xs.unsqueeze(1).expand(5, 7, 1), zs.expand(5, 7, 2)], -1).reshape(-1, 3)
    with torch.no_grad():
        post = model.posterior(pairs)
    np.testing.assert_allclose(mean.reshape(-1).numpy(), post.mean.reshape(-1).numpy(), rtol=0, atol=1e-9)
    np.testing.assert_allclose(std.reshape(-1).numpy(), post.variance.sqrt().reshape(-1).numpy(),
                               rtol=0, atol=1e-8)
    assert torch.equal(marginals.grid_mean(xs, zs), mean)  # the mean-only path, bit for bit


def test_cells_refit_on_their_profiles_schedule_and_store_the_hyperparameters() -> None:
    rows = {gp: run_cell(CellSpec.make("branin-1-1-discrete", "vucb-prob", 0, 4, gp=gp)).rows
            for gp in ("paper", "borisk", "authors")}
    assert [r["fit_refit"] for r in rows["borisk"]] == [True] * 5
    assert [r["fit_refit"] for r in rows["authors"]] == [True, False, False, True, False]
    assert [r["fit_refit"] for r in rows["paper"]] == [True, False, False, True, False]
    for gp, cell in rows.items():
        for r in cell:
            assert len(r["gp_lengthscale"]) == 2 and r["gp_noise"] > 0 and r["gp_outputscale"] > 0, gp
    # kept hyperparameters between refits
    assert rows["authors"][1]["gp_lengthscale"] == rows["authors"][0]["gp_lengthscale"]
    lo, hi = 5e-2, 1e1
    assert all(lo <= v <= hi for r in rows["paper"] for v in r["gp_lengthscale"])


def test_the_default_profile_leaves_the_spec_hash_alone() -> None:
    from harness.results import spec_hash

    a = CellSpec.make("branin-1-1-discrete", "vucb-prob", 0)
    b = CellSpec.make("branin-1-1-discrete", "vucb-prob", 0, gp="paper")
    c = CellSpec.make("branin-1-1-discrete", "vucb-prob", 0, gp="borisk")
    assert a == b and spec_hash(a) == spec_hash(b) and "gp" not in a.to_json()
    assert spec_hash(c) != spec_hash(a) and '"gp":"borisk"' in c.to_json()
    with pytest.raises(ValueError, match="unknown GP profile"):
        CellSpec.make("branin-1-1-discrete", "vucb-prob", 0, gp="nope")
