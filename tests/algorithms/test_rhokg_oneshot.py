"""The one-shot rho-KG with weighted measures against its definitions: its inner risk measure
against the weighted VaR, CVaR and mean written from their definitions, its w set (the support with
its masses), its value where one more observation can change nothing (the current best, exactly),
and its value elsewhere against the tower property (the fantasies' mean value at a fixed x is the
current one, within the Monte Carlo error the fantasies themselves give)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import RBFKernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood

from algorithms.botorch_risk import with_w_set
from algorithms.rhokg_oneshot import RhoKGOneShot, WeightedRiskMeasure
from problems import build_problem
from problems.measures import risk_measure
from tests.algorithms.test_cvucb import var_np
from tests.algorithms.test_vucb import random_model

#: The smallest one-shot settings whose assertions do not depend on the effort.
SMALL = {"num_fantasies": 4, "num_restarts": 1, "raw_samples": 8, "inner_samples": 16, "maxiter": 10,
         "inner_restarts": 2, "raw_inner_samples": 32}


def cvar_definition(values: np.ndarray, masses: np.ndarray, alpha: float) -> float:
    """The lower-tail mean: the values ascending, each weighing the part of its mass that lies
    below alpha on the cumulative scale."""
    order = np.argsort(values, kind="stable")
    v, w = values[order], masses[order]
    taken = np.clip(alpha - (np.cumsum(w) - w), 0, w)
    return float((v * taken).sum() / alpha)


@pytest.mark.parametrize("risk", ["var", "cvar", "mean"])
def test_weighted_measure_is_the_brute_force_one_per_block(risk: str) -> None:
    """``sample x batch x (q m) x 1`` samples, masses of a real problem (with ties of values): each
    block of m values' measure against VaR and CVaR from their definitions and the weighted mean."""
    masses = build_problem("hartmann-1-2-discrete", with_optimum=False).z.masses
    m, alpha = masses.shape[0], 0.1
    rng = np.random.default_rng(1)
    samples = np.round(rng.normal(size=(3, 2, 4 * m, 1)), 1)  # rounded: ties
    measure = WeightedRiskMeasure(risk_measure(risk), alpha, masses)
    got = measure(torch.tensor(samples)).numpy()
    assert got.shape == (3, 2, 4)
    w = masses.numpy()
    for index in np.ndindex(3, 2, 4):
        values = samples[index[0], index[1], index[2] * m:(index[2] + 1) * m, 0]
        expected = {"var": lambda v: var_np(v, w, np.array([alpha]))[0],
                    "cvar": lambda v: cvar_definition(v, w, alpha),
                    "mean": lambda v: float(v @ w)}[risk](values)
        assert got[index] == pytest.approx(expected, abs=1e-12)


def test_w_set_is_the_support_with_its_masses_or_fresh_draws() -> None:
    discrete = build_problem("branin-williams-2-2", with_optimum=False)
    w, objective = RhoKGOneShot(discrete, 0).acquisition_set(3)
    assert torch.equal(w, discrete.z.points) and torch.equal(objective.masses, discrete.z.masses)
    continuous = build_problem("branin-1-1-continuous", with_optimum=False)
    algorithm = RhoKGOneShot(continuous, 0, n_w=20)
    w3, objective = algorithm.acquisition_set(3)
    assert w3.shape == (20, 1)
    assert torch.allclose(objective.masses, torch.full((20,), 0.05, dtype=torch.float64))
    assert not torch.equal(w3, algorithm.acquisition_set(4)[0])
    with pytest.raises(TypeError, match="n_w is for a continuous Z"):
        RhoKGOneShot(discrete, 0, n_w=12)


def certain_model() -> SingleTaskGP:
    """A GP on 10 noise-free values with kernel variance 1e-10 and noise 1e-18: nothing can be
    learned (every fantasy posterior is the current one)."""
    X = torch.rand(10, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    Y = (torch.sin(6 * X[:, 0]) + (X[:, 1] - 0.5) * (1 + 2 * X[:, 0])).unsqueeze(-1)
    model = SingleTaskGP(X, Y, covar_module=ScaleKernel(RBFKernel(ard_num_dims=2)),
                         likelihood=GaussianLikelihood(noise_constraint=GreaterThan(1e-20)),
                         outcome_transform=None)
    model.covar_module.base_kernel.lengthscale = torch.tensor([0.4, 0.4])
    model.covar_module.outputscale = 1e-10
    model.likelihood.noise = 1e-18
    model.mean_module.constant = float(Y.mean())
    return model.eval()


def current_values(model: SingleTaskGP, problem, xs: torch.Tensor, risk: str) -> torch.Tensor:
    """E_n[rho(f(x, Z))] at ``k x d_x`` points, from the posterior mean (a certain model) or from
    16384 posterior samples; brute force over the support with the weighted measure."""
    points, masses = problem.z.points, problem.z.masses
    xz = torch.cat([xs.unsqueeze(1).expand(-1, points.shape[0], -1),
                    points.expand(xs.shape[0], *points.shape)], -1)
    with torch.no_grad():
        values = model.posterior(xz).mean.squeeze(-1)  # k x m
    return WeightedRiskMeasure(risk_measure(risk), problem.alpha, masses)(values.reshape(1, -1, 1))[0]


@pytest.mark.filterwarnings("ignore:Negative variance values detected")
@pytest.mark.parametrize("risk", ["var", "cvar"])
def test_value_is_the_current_best_where_nothing_can_be_learned(risk: str) -> None:
    """On a certain model the one-shot value of a tree is the mean over fantasies of the current
    measure at the fantasy solutions: with every fantasy solution at the current maximizer x*
    (over 2001 x) it is the current best c, so the knowledge gradient (value - c) is 0; and no tree
    of random fantasy solutions exceeds c. Tolerance 1e-4: BoTorch rounds the posterior variances up to
    1e-10 (a standard deviation of 1e-5 in every inner sample), where the trees' values spread over
    tenths."""
    problem = build_problem("branin-1-1-discrete", with_optimum=False)
    model = certain_model()
    algorithm = RhoKGOneShot(problem, 1, risk=risk, **SMALL)
    grid = torch.linspace(0, 1, 2001, dtype=torch.float64).unsqueeze(-1)
    current = current_values(model, problem, grid, risk)
    best, x_star = float(current.max()), grid[current.argmax()]
    acquisition = algorithm.acquisition_function(model, 1)
    n = 1 + SMALL["num_fantasies"]
    tree = torch.cat([torch.tensor([[0.3, 0.6]], dtype=torch.float64),
                      torch.cat([x_star, torch.zeros(1, dtype=torch.float64)]).expand(n - 1, 2)]).unsqueeze(0)
    with torch.no_grad():
        assert float(acquisition(tree)) == pytest.approx(best, abs=1e-4)
        trees = torch.rand(64, n, 2, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
        values = acquisition(trees)
        assert float(values.max()) <= best + 1e-4 and float(values.min()) < best - 0.05


def test_value_at_the_proposal_is_at_least_the_current_best() -> None:
    """A random model: the fantasies' mean of E_{n+1}[CVaR] at a fixed x equals E_n[CVaR] there (the
    tower property), within 5 standard errors of the 256 fantasies themselves; so the one-shot
    value at the proposal, maximized over the fantasy solutions, is at least the current best at the
    observed x minus that error: the knowledge gradient is not negative."""
    problem = build_problem("branin-williams-2-2", with_optimum=False)
    model = random_model(4, 20, 3)
    risk, x_fixed = "cvar", torch.tensor([0.4, 0.7], dtype=torch.float64)
    algorithm = RhoKGOneShot(problem, 2, risk=risk, **{**SMALL, "num_fantasies": 256})
    acquisition = algorithm.acquisition_function(model, 1)
    # one fantasy at a time: the value of a tree with every fantasy solution at x_fixed, per fantasy
    query = torch.cat([torch.tensor([0.5, 0.5]), problem.z.points[4]]).to(torch.float64)
    tree = torch.cat([query.unsqueeze(0), torch.cat([x_fixed, torch.zeros(2)]).expand(256, 4)])
    with torch.no_grad():
        fantasy_model = with_w_set(model, problem.z.points).fantasize(
            query.unsqueeze(0), sampler=acquisition.sampler)
        values = acquisition.objective(acquisition.inner_sampler(
            fantasy_model.posterior(x_fixed.expand(256, 1, 1, 2))))  # inner x fantasy x 1 x 1
        per_fantasy = values.mean(0).reshape(-1)
        mean_value = float(acquisition(tree.unsqueeze(0)))
    now = float(WeightedRiskMeasure(risk_measure(risk), problem.alpha, problem.z.masses)(
        acquisition.inner_sampler(with_w_set(model, problem.z.points).posterior(
            x_fixed.reshape(1, 1, 2)))).mean())
    error = float(per_fantasy.std() / 256**0.5)
    assert mean_value == pytest.approx(float(per_fantasy.mean()), abs=1e-9)
    assert abs(mean_value - now) <= 5 * error + 1e-9
    proposal = RhoKGOneShot(problem, 2, risk=risk, **SMALL).propose(model, 1)
    assert proposal.info["kg"] >= now - 5 * error * (256 / SMALL["num_fantasies"]) ** 0.5
