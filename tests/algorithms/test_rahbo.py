"""RAHBO and the z-blind protocol against their definitions: the z the loop draws follows Z's
distribution (chi-square and Kolmogorov-Smirnov tests over many draws), a cell evaluates exactly its
budget with each chosen x repeated k times, the sites' statistics against numpy, the mean's noise
(the method's s^2 / n and the released s^2), and the proposal against the risk-averse UCB written
again over a dense grid."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from algorithms.loop import z_blind_draw
from algorithms.rahbo import RAHBO, site_statistics
from harness.cell import run_cell
from harness.spec import CellSpec
from problems import build_problem
from problems.seeding import derive_seed


def test_the_loop_draws_a_z_blind_method_s_z_from_z() -> None:
    """Branin-Williams's 12 unequal masses: 6000 draws of iterations 1..6000 against the masses by a
    chi-square test; the truncated normal Z of Branin continuous: 3000 draws against scipy's
    truncated normal by a Kolmogorov-Smirnov test; and the z-blind initial design's z (72 of each of
    60 seeds) against the masses too. p > 1e-3 each: a wrong distribution (uniform over the 12
    points) fails all three by far."""
    discrete = build_problem("branin-williams-2-2", with_optimum=False)
    points, masses = discrete.z.points, discrete.z.masses.numpy()

    def counts(draws: torch.Tensor) -> np.ndarray:
        index = [int(torch.nonzero((points == z).all(-1))[0]) for z in draws]
        return np.bincount(index, minlength=points.shape[0])

    draws = torch.stack([z_blind_draw(discrete, 123, t) for t in range(1, 6001)])
    assert stats.chisquare(counts(draws), masses * len(draws)).pvalue > 1e-3
    assert stats.chisquare(counts(draws), np.full(12, len(draws) / 12)).pvalue < 1e-12
    initial = torch.cat([discrete.initial_design(seed, z_from_distribution=True)[1] for seed in range(60)])
    assert stats.chisquare(counts(initial), masses * len(initial)).pvalue > 1e-3
    continuous = build_problem("branin-1-1-continuous", with_optimum=False)
    z = torch.stack([z_blind_draw(continuous, 7, t) for t in range(1, 3001)]).numpy()[:, 0]
    reference = stats.truncnorm(a=-2.0, b=2.0, loc=0.5, scale=0.125)  # N(0.5, 0.125^2) on [0.25, 0.75]
    assert stats.kstest(z, reference.cdf).pvalue > 1e-3


def test_a_cell_evaluates_its_budget_in_repeats_with_the_loop_s_z() -> None:
    """T = 7 with k = 3: seven rows of one evaluation each (the observation count grows by one an
    iteration), the chosen x in runs of 3, 3 and 1, and each row's z the loop's draw of its iteration."""
    spec = CellSpec.make("branin-williams-2-2", "rahbo", seed=1, iterations=7, options={"repeats": 3})
    rows = run_cell(spec).rows
    problem = build_problem(spec.problem, with_optimum=False)
    assert [r["iteration"] for r in rows] == list(range(8))
    assert [r["n_obs"] for r in rows] == [problem.n_init + t for t in range(8)]
    xs = [tuple(r["x"]) for r in rows[1:]]
    assert xs[0] == xs[1] == xs[2] != xs[3] == xs[4] == xs[5] != xs[6]
    seed_root = derive_seed(spec.problem, spec.seed)
    for r in rows[1:]:
        assert r["z"] == z_blind_draw(problem, seed_root, r["iteration"]).tolist()


def test_site_statistics_are_numpy_s() -> None:
    rng = np.random.default_rng(3)
    sites = rng.random((5, 2))
    pick = rng.integers(0, 5, size=40)
    X = np.concatenate([sites[pick], rng.random((40, 2))], axis=1)  # x, then a z that is ignored
    y = rng.normal(size=40)
    got = site_statistics(torch.tensor(X), torch.tensor(y).unsqueeze(-1), d_x=2)
    order = list(dict.fromkeys(pick.tolist()))  # first appearance
    assert np.array_equal(got[0].numpy(), sites[order])
    for i, s in enumerate(order):
        values = y[pick == s]
        assert int(got[1][i]) == len(values)
        assert float(got[2][i]) == pytest.approx(values.mean(), abs=1e-12)
        if len(values) > 1:
            assert float(got[3][i]) == pytest.approx(values.var(ddof=1), abs=1e-12)
        else:
            assert math.isnan(float(got[3][i]))


def data_with_sites(problem, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Six sites of 1-D x, each evaluated 4 times with z drawn from Z, noise std 0.1."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(6, problem.d_x, generator=g, dtype=torch.float64).repeat_interleave(4, dim=0)
    z = problem.z.sample(24, g)
    y = problem.f(x, z) + 0.1 * torch.randn(24, generator=g, dtype=torch.float64)
    return torch.cat([x, z], -1), y.unsqueeze(-1)


@pytest.mark.parametrize("mean_noise", ["mean", "released"])
def test_the_mean_gp_s_noise_is_the_variance_of_the_site_mean(mean_noise: str) -> None:
    """The method: s^2 / n (n = 4); the released code: s^2."""
    problem = build_problem("branin-1-1-discrete", with_optimum=False)
    X, Y = data_with_sites(problem, 0)
    algorithm = RAHBO(problem, 0, mean_noise=mean_noise)
    algorithm.observe(X, Y)
    _, mean_gp, _ = algorithm.models(1)
    y = Y.reshape(6, 4).numpy()
    expected = y.var(axis=1, ddof=1) / (4 if mean_noise == "mean" else 1)
    # BoTorch keeps the noise in its standardized scale: times the outcome transform's variance
    scale = float(mean_gp.outcome_transform.stdvs) ** 2
    assert (mean_gp.likelihood.noise.detach().numpy() * scale) == pytest.approx(expected, rel=1e-10)


def test_the_proposal_maximizes_the_risk_averse_ucb_then_repeats() -> None:
    """x_t against 4001 x of mu + beta^(1/2) sigma - gamma (mu_v - beta^(1/2) sigma_v), written from the
    two GPs' posteriors; the next k - 1 proposals repeat it, with no z (the loop draws it)."""
    problem = build_problem("branin-1-1-discrete", with_optimum=False)
    X, Y = data_with_sites(problem, 1)
    algorithm = RAHBO(problem, 4, repeats=3, gamma=0.5)
    algorithm.observe(X, Y)
    proposal = algorithm.propose(None, 1)
    _, mean_gp, variance_model = algorithm.models(derive_seed(algorithm.seed_root, "rahbo", 1))
    grid = torch.linspace(0, 1, 4001, dtype=torch.float64).unsqueeze(-1)
    with torch.no_grad():
        posterior = mean_gp.posterior(grid.unsqueeze(-2))
        mu, sd = posterior.mean.reshape(-1), posterior.variance.reshape(-1).sqrt()
        mu_v, sd_v = variance_model(grid)
        score = mu + math.sqrt(2.0) * sd - 0.5 * (mu_v - math.sqrt(2.0) * sd_v)
    assert proposal.z is None
    assert proposal.info["rahbo_ucb"] >= float(score.max()) - 1e-6
    assert float(proposal.x[0]) == pytest.approx(float(grid[score.argmax()]), abs=2e-3)
    again = [algorithm.propose(None, t) for t in (2, 3)]
    assert all(torch.equal(p.x, proposal.x) for p in again)
    assert [p.info["repeat"] for p in [proposal, *again]] == [0, 1, 2]
    assert algorithm.propose(None, 4).info["repeat"] == 0  # k evaluations done: a new choice


def test_rahbo_refuses_bad_options() -> None:
    problem = build_problem("branin-1-1-discrete", with_optimum=False)
    for options, message in (({"repeats": 0}, "repeats must be a positive integer"),
                             ({"gamma": -1.0}, "gamma must be a number >= 0"),
                             ({"mean_noise": "sample"}, "mean_noise must be one of mean, released"),
                             ({"recommendation": "best"}, "recommendation must be one of shared, own")):
        with pytest.raises(ValueError, match=message):
            RAHBO(problem, 0, **options)
