"""CV-UCB against its definitions: the risk level alpha_t (brute force over a fine grid of levels),
the bound's width and the lacing value z_t (the inequalities of the regret bound), x_t (a dense grid
of x), the choice rules, and a continuous Z."""

import numpy as np
import pytest
import torch

from algorithms import build_algorithm
from algorithms.cvucb import CVUCB, risk_level
from algorithms.gp import PosteriorMarginals
from problems import build_problem
from tests.algorithms.test_vucb import random_model


def var_np(values: np.ndarray, masses: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """VaR_a = inf{w : P(F <= w) >= a} for each level a, from the definition: the smallest value
    whose mass at or below it reaches a (no sort of ours)."""
    at_or_below = (masses[None, :] * (values[None, :] <= values[:, None])).sum(-1)  # P(F <= v_j)
    reach = at_or_below[None, :] >= levels[:, None] - 1e-12
    return np.where(reach, values[None, :], np.inf).min(-1)


def cvar_np(values: np.ndarray, masses: np.ndarray, alpha: float, n: int = 200_000) -> float:
    """(1 / alpha) int_0^alpha VaR_a da by the midpoint rule on n levels (independent of ours)."""
    levels = (np.arange(n) + 0.5) / n * alpha
    return float(var_np(values, masses, levels).mean())


@pytest.mark.parametrize("seed", range(25))
def test_risk_level_maximizes_the_var_gap_over_every_level(seed: int) -> None:
    """alpha_t = argmax_{a in (0, alpha]} VaR_a(u) - VaR_a(l), smallest on ties: against 20,000
    levels evaluated from the definition. Masses: random, uniform, or with ties of values."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 40))
    masses = rng.dirichlet(np.ones(m)) if seed % 3 else np.full(m, 1.0 / m)
    l = rng.normal(size=m)
    if seed % 5 == 0:
        l = np.round(l, 1)  # ties
    u = l + rng.exponential(size=m)
    alpha = float(rng.uniform(0.02, 0.98))
    alpha_t, gap = risk_level(torch.tensor(l), torch.tensor(u), torch.tensor(masses), alpha)
    levels = np.linspace(0, alpha, 20_001)[1:]
    gaps = var_np(u, masses, levels) - var_np(l, masses, levels)
    best = gaps.max()
    assert gap == pytest.approx(best, abs=1e-12)
    assert 0 < alpha_t <= alpha + 1e-15
    exact = var_np(u, masses, np.array([alpha_t])) - var_np(l, masses, np.array([alpha_t]))
    assert exact[0] == pytest.approx(best, abs=1e-12)
    first = levels[np.argmax(gaps >= best - 1e-12)]
    # the first grid level with the largest gap lies in alpha_t's step (a, alpha_t]: the gap is the
    # largest all the way from it to alpha_t, and alpha_t is no later than that step's end
    assert first <= alpha_t + 1e-12
    between = levels[(levels >= first) & (levels <= alpha_t)]
    assert np.all(var_np(u, masses, between) - var_np(l, masses, between) >= best - 1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_the_query_meets_the_inequalities_of_the_regret_bound(seed: int) -> None:
    """At (x_t, z_t): CVaR_alpha(u) - CVaR_alpha(l) = (1/alpha) int_0^alpha gap <= gap(alpha_t)
    <= u(z_t) - l(z_t) = 2 beta^(1/2) sigma(x_t, z_t); z_t is a lacing value at alpha_t of
    largest mass; the info's bounds are CVaRs of l and u (from the definition)."""
    name = ["branin-1-1-discrete", "hartmann-1-2-discrete", "hartmann-2-1-discrete"][seed % 3]
    problem = build_problem(name, with_optimum=False)
    algorithm = CVUCB(problem, seed_root=seed)
    t = 1 + 3 * seed
    model = random_model(problem.d_x + problem.d_z, 6 + 2 * t, seed)
    proposal = algorithm.propose(model, t)
    info, beta = proposal.info, proposal.info["beta"]
    points, masses = problem.z.points, problem.z.masses.numpy()
    with torch.no_grad():
        l, _, u = PosteriorMarginals(model).grid_bounds(proposal.x.unsqueeze(0), points, beta)
    l, u = l[0].numpy(), u[0].numpy()
    alpha, alpha_t = problem.alpha, info["alpha_t"]
    cvar_l, cvar_u = cvar_np(l, masses, alpha), cvar_np(u, masses, alpha)
    assert info["cvar_lower"] == pytest.approx(cvar_l, abs=1e-5)
    assert info["cvar_upper"] == pytest.approx(cvar_u, abs=1e-5)
    assert proposal.lower_bound == info["cvar_lower"]
    j = int(torch.nonzero((points == proposal.z).all(-1))[0])
    var_l = var_np(l, masses, np.array([alpha_t]))[0]
    var_u = var_np(u, masses, np.array([alpha_t]))[0]
    assert l[j] <= var_l + 1e-12 and u[j] >= var_u - 1e-12  # a lacing value at alpha_t
    lacing = (l <= var_l + 1e-12) & (u >= var_u - 1e-12)
    assert info["lv_count"] == int(lacing.sum())
    assert masses[j] >= masses[lacing].max() * (1 - 1e-9)  # the largest mass among them
    assert cvar_u - cvar_l <= var_u - var_l + 1e-5 <= u[j] - l[j] + 1e-5


def test_x_t_maximizes_the_upper_bound_of_cvar_over_a_dense_grid() -> None:
    """x_t against 4001 x: CVaR_alpha(u(x_t, Z)) is the grid's best up to a grid step's worth."""
    problem = build_problem("goldstein-1-1-discrete", with_optimum=False)
    algorithm = CVUCB(problem, seed_root=3)
    model = random_model(2, 12, 7)
    proposal = algorithm.propose(model, 2)
    grid = torch.linspace(0, 1, 4001, dtype=torch.float64).unsqueeze(-1)
    beta = proposal.info["beta"]
    with torch.no_grad():
        _, _, u = PosteriorMarginals(model).grid_bounds(grid, problem.z.points, beta)
        _, _, u_t = PosteriorMarginals(model).grid_bounds(proposal.x.unsqueeze(0), problem.z.points, beta)
    masses = problem.z.masses.numpy()
    on_grid = max(cvar_np(row, masses, problem.alpha, 4000) for row in u.numpy()[::8])
    assert cvar_np(u_t[0].numpy(), masses, problem.alpha, 4000) >= on_grid - 1e-6


def test_unif_rule_draws_among_the_lacing_values_and_prob_prefers_mass() -> None:
    """lv_rule: over many iterations' choice streams, ``unif`` picks several lacing values, ``prob``
    only those of largest mass; both from the same x_t."""
    problem = build_problem("hartmann-1-2-discrete", with_optimum=False)
    model = random_model(3, 10, 1)
    unif = CVUCB(problem, seed_root=0, lv_rule="unif")
    prob = CVUCB(problem, seed_root=0)
    picks_u, picks_p = set(), set()
    for t in range(1, 9):
        a, b = unif.propose(model, t), prob.propose(model, t)
        picks_u.add(tuple(a.z.tolist()))
        picks_p.add(tuple(b.z.tolist()))
        assert b.info["lv_count"] == a.info["lv_count"] or not torch.equal(a.x, b.x)
    assert len(picks_u) > len(picks_p) or len(picks_u) > 1


def test_continuous_z_draws_fresh_quasi_random_support_and_picks_a_lacing_value() -> None:
    problem = build_problem("branin-1-1-continuous", with_optimum=False)
    algorithm = CVUCB(problem, seed_root=1, n_samples=64)
    model = random_model(2, 10, 2)
    points, masses, density = algorithm.support(3)
    assert points.shape == (64, 1) and torch.allclose(masses.sum(), torch.tensor(1.0, dtype=torch.float64))
    assert not torch.equal(points, algorithm.support(4)[0])  # fresh draws each iteration
    assert torch.equal(points, algorithm.support(3)[0])  # the same draws for the same iteration
    assert bool(((points >= problem.z.lower) & (points <= problem.z.upper)).all())
    proposal = algorithm.propose(model, 3)
    beta, alpha_t = proposal.info["beta"], proposal.info["alpha_t"]
    with torch.no_grad():
        l, _, u = PosteriorMarginals(model).grid_bounds(proposal.x.unsqueeze(0), points, beta)
    l, u = l[0].numpy(), u[0].numpy()
    j = int(torch.nonzero((points == proposal.z).all(-1))[0])
    m = masses.numpy()
    var_l, var_u = var_np(l, m, np.array([alpha_t]))[0], var_np(u, m, np.array([alpha_t]))[0]
    lacing = (l <= var_l + 1e-12) & (u >= var_u - 1e-12)
    assert lacing[j] and density[j] >= density.numpy()[lacing].max() * (1 - 1e-9)


def test_cvucb_refuses_var_and_bad_options() -> None:
    problem = build_problem("branin-1-1-discrete", with_optimum=False)
    with pytest.raises(ValueError, match="optimizes cvar only"):
        build_algorithm("cvucb", CVUCB, problem, 0, risk="var")
    with pytest.raises(ValueError, match="lv_rule"):
        CVUCB(problem, 0, lv_rule="max")
    with pytest.raises(TypeError, match="n_samples"):
        CVUCB(problem, 0, n_samples=10)
    assert build_algorithm("cvucb", CVUCB, problem, 0).risk == "cvar"  # its own when none is named
