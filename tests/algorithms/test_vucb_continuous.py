"""V-UCB with a continuous Z: LNSO for x_t, lacing-value search for z_t, and the SAA variant."""

import math

import pytest
import torch

from algorithms import ALGORITHMS
from algorithms.gp import PosteriorMarginals, fit_gp
from problems import build_problem
from problems.risk import weighted_var

# cheaper LNSO and estimates than the defaults: these tests check what is chosen, not how well
FAST = {"n_starts": 3, "train_steps": 100, "retrain_steps": 30, "x_steps": 40}


def _model(name: str, n: int = 12, seed: int = 0):
    p = build_problem(name, with_optimum=False)
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, p.d_x, generator=g)
    z = p.z.sample_support(n, g)
    y = p.f(x, z) + 0.1 * torch.randn(n, generator=g)
    model, _ = fit_gp(torch.cat([x, z], -1), y.unsqueeze(-1), None, True, g)
    return p, model


def _large_sample_vars(p, model, x, beta, n=400_000):
    marginals = PosteriorMarginals(model)
    z = p.z.sample(n, torch.Generator().manual_seed(123))
    mean, std = marginals.grid(x.unsqueeze(0), z)
    width = math.sqrt(beta) * std[0]
    l, u = mean[0] - width, mean[0] + width
    k = math.ceil(p.alpha * n)
    return float(torch.kthvalue(l, k).values), float(torch.kthvalue(u, k).values), marginals


@pytest.mark.parametrize("name", ["branin-1-1-continuous", "hartmann-1-2-continuous"])
def test_vucb_prob_chooses_a_lacing_value(name: str) -> None:
    p, model = _model(name)
    algorithm = ALGORITHMS["vucb-prob"](p, 7, **FAST)
    for t in (1, 2):
        proposal = algorithm.propose(model, t)
        beta = proposal.info["beta"]
        var_l, var_u, marginals = _large_sample_vars(p, model, proposal.x, beta)
        # the pinball estimates agree with 4 * 10^5 draws ...
        scale = var_u - var_l
        assert proposal.info["var_lower"] == pytest.approx(var_l, abs=0.01 * scale)
        assert proposal.info["var_upper"] == pytest.approx(var_u, abs=0.01 * scale)
        # ... and z_t is a lacing value of the large-sample VaRs (Prob puts it on the edge of the
        # set, so up to the estimates' error)
        mean, std = marginals.grid(proposal.x.unsqueeze(0), proposal.z.unsqueeze(0))
        width = math.sqrt(beta) * float(std)
        assert float(mean) - width <= var_l + 0.01 * scale
        assert float(mean) + width >= var_u - 0.01 * scale
        assert proposal.info["lv_count"] >= 1
        assert ((proposal.z >= p.z.lower) & (proposal.z <= p.z.upper)).all()


@pytest.mark.slow
def test_vucb_prob_prefers_density_and_unif_spreads() -> None:
    p, model = _model("branin-1-1-continuous")
    prob = [ALGORITHMS["vucb-prob"](p, 7, **FAST).propose(model, t).z for t in (1, 2, 3)]
    unif = [ALGORITHMS["vucb-unif"](p, 7, **FAST).propose(model, t).z for t in (1, 2, 3)]
    density = lambda zs: p.z.density(torch.stack(zs)).mean()  # noqa: E731
    assert float(density(prob)) >= float(density(unif))


def test_vucb_saa_is_exact_on_its_draws() -> None:
    p, model = _model("hartmann-1-2-continuous")
    algorithm = ALGORITHMS["vucb-prob-saa"](p, 7, n_samples=64)
    proposal = algorithm.propose(model, 4)
    points = algorithm.samples(4)
    masses = torch.full((64,), 1 / 64)
    marginals = PosteriorMarginals(model)
    beta = proposal.info["beta"]
    mean, std = marginals.grid(proposal.x.unsqueeze(0), points)
    l, u = mean[0] - math.sqrt(beta) * std[0], mean[0] + math.sqrt(beta) * std[0]
    var_l, var_u = float(weighted_var(l, masses, p.alpha)), float(weighted_var(u, masses, p.alpha))
    lacing = (l <= var_l) & (u >= var_u)
    chosen = int(((points - proposal.z).abs().sum(-1) == 0).nonzero()[0])
    assert bool(lacing[chosen])
    assert float(p.z.density(points[chosen:chosen + 1])[0]) == pytest.approx(
        float(p.z.density(points[lacing]).max()))
    # x_t maximizes the SAA VaR of u: no point of a fine grid does better
    grid = torch.linspace(0, 1, 2001).unsqueeze(-1)
    gm, gs = marginals.grid(grid, points)
    best = weighted_var(gm + math.sqrt(beta) * gs, masses, p.alpha).max()
    assert proposal.info["var_upper"] >= float(best) - 1e-6


def test_discrete_z_rejects_continuous_options() -> None:
    p = build_problem("branin-1-1-discrete", with_optimum=False)
    with pytest.raises(TypeError, match="x_steps"):
        ALGORITHMS["vucb-prob"](p, 0, x_steps=3)
    with pytest.raises(ValueError, match="continuous Z"):
        ALGORITHMS["vucb-prob-saa"](p, 0)
