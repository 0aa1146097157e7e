"""The shared GP: fast marginals against BoTorch's posterior, the fit schedule's pieces, beta."""

import math

import pytest
import torch

from algorithms.gp import MIN_NOISE, PosteriorMarginals, beta_paper, fit_gp, get_hypers


def data(n: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g)
    Y = (torch.sin(5 * X).sum(-1) + 0.1 * torch.randn(n, generator=g)).unsqueeze(-1) * 3 + 1
    return X, Y


@pytest.mark.parametrize("n, d_x, d_z", [(5, 1, 1), (30, 1, 2), (60, 2, 1)])
def test_marginals_match_botorch_posterior(n: int, d_x: int, d_z: int) -> None:
    X, Y = data(n, d_x + d_z, n)
    model, report = fit_gp(X, Y, None, refit=True, generator=torch.Generator().manual_seed(0))
    assert report.ok
    marginals = PosteriorMarginals(model)
    g = torch.Generator().manual_seed(1)
    xs, zs = torch.rand(7, d_x, generator=g), torch.rand(11, d_z, generator=g)
    pairs = torch.cat([xs.unsqueeze(1).expand(-1, 11, -1), zs.expand(7, -1, -1)], dim=-1)
    with torch.no_grad():
        posterior = model.posterior(pairs.reshape(-1, 1, d_x + d_z))
        mean = posterior.mean.reshape(7, 11)
        std = posterior.variance.reshape(7, 11).sqrt()
        grid_mean, grid_std = marginals.grid(xs, zs)
        flat_mean, flat_std = marginals(pairs)
    torch.testing.assert_close(grid_mean, mean, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(grid_std, std, rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(flat_mean, mean, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(flat_std, std, rtol=1e-7, atol=1e-9)
    # the mean-only paths (the recommendation rule's): BoTorch's mean, and the full paths' bits
    torch.testing.assert_close(marginals.grid_mean(xs, zs), mean, rtol=1e-9, atol=1e-9)
    assert torch.equal(marginals.grid_mean(xs, zs), grid_mean)
    assert torch.equal(marginals.mean(pairs), flat_mean)


def test_grid_is_differentiable_in_x() -> None:
    X, Y = data(20, 2, 0)
    model, _ = fit_gp(X, Y, None, refit=True, generator=torch.Generator().manual_seed(0))
    marginals = PosteriorMarginals(model)
    z = torch.rand(5, 1, generator=torch.Generator().manual_seed(2))
    x = torch.tensor([[0.3]], requires_grad=True)
    mean, std = marginals.grid(x, z)
    (mean + std).sum().backward()
    h = 1e-6
    with torch.no_grad():
        up = sum(t.sum() for t in marginals.grid(torch.tensor([[0.3 + h]]), z))
        down = sum(t.sum() for t in marginals.grid(torch.tensor([[0.3 - h]]), z))
    assert float(x.grad.detach()) == pytest.approx(float(up - down) / (2 * h), rel=1e-5)


def test_conditioning_keeps_hyperparameters_and_refit_changes_them() -> None:
    X, Y = data(12, 2, 3)
    g = torch.Generator().manual_seed(0)
    model, _ = fit_gp(X[:10], Y[:10], None, refit=True, generator=g)
    kept, report = fit_gp(X, Y, model, refit=False, generator=g)
    assert not report.refit
    for key, value in get_hypers(model).items():
        assert torch.equal(get_hypers(kept)[key], value), key
    assert kept.train_inputs[0].shape[0] == 12
    refit, report = fit_gp(X, Y, model, refit=True, generator=g)
    assert report.refit and report.ok
    key = "covar_module.base_kernel.raw_lengthscale"
    assert not torch.equal(get_hypers(refit)[key], get_hypers(model)[key])
    assert float(refit.likelihood.noise) >= MIN_NOISE


def test_beta_schedule_is_the_papers() -> None:
    assert beta_paper(1) == pytest.approx(2 * math.log(math.pi**2 / 0.6))
    assert beta_paper(10) == pytest.approx(2 * math.log(100 * math.pi**2 / 0.6))


def test_fit_does_not_depend_on_the_callers_default_dtype() -> None:
    X, Y = data(15, 2, 4)
    fits = []
    for dtype in (torch.float32, torch.float64):
        previous = torch.get_default_dtype()
        torch.set_default_dtype(dtype)
        try:
            model, _ = fit_gp(X, Y, None, refit=True, generator=torch.Generator().manual_seed(0))
        finally:
            torch.set_default_dtype(previous)
        fits.append(get_hypers(model))
    for key in fits[0]:
        assert fits[0][key].dtype == torch.float64, key
        assert torch.equal(fits[0][key], fits[1][key]), key
