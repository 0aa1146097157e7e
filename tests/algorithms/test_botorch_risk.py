"""``botorch-risk``: BoTorch's risk measures at the matched level against the definitions of VaR
and CVaR, the systematic draws against the masses, the w-set model against the plain model, and
the proposal's determinism and support."""

import math

import numpy as np
import pytest
import torch

from algorithms.botorch_risk import BotorchRisk, risk_measure, systematic_counts, with_w_set
from algorithms.gp import fit_gp
from problems import build_problem


def var_np(values: np.ndarray, masses: np.ndarray, alpha: float) -> float:
    """inf{w : P(F <= w) >= alpha} from the definition."""
    at_or_below = (masses[None, :] * (values[None, :] <= values[:, None])).sum(-1)
    return float(values[at_or_below >= alpha - 1e-12].min())


def cvar_np(values: np.ndarray, masses: np.ndarray, alpha: float, n: int = 100_000) -> float:
    """(1 / alpha) int_0^alpha VaR_a da by the midpoint rule."""
    order = np.argsort(values)
    cumulative = np.cumsum(masses[order])
    levels = (np.arange(n) + 0.5) / n * alpha
    return float(values[order][np.searchsorted(cumulative, levels - 1e-12)].mean())


CASES = [(50, 0.1), (100, 0.07), (25, 0.28), (200, 0.1), (40, 0.2), (37, 0.13), (64, 0.5), (10, 0.05)]


@pytest.mark.parametrize("n,alpha", CASES)
def test_matched_level_gives_the_definitions_var_and_cvar_of_the_drawn_values(n: int, alpha: float) -> None:
    """BoTorch's VaR at the matched level is VaR_alpha of the N equally weighted values (including
    the pairs where float rounding moves ceil(N alpha)); its CVaR is the mean of the ceil(N alpha)
    smallest, which is CVaR_alpha exactly when N alpha is an integer."""
    rng = np.random.default_rng(n)
    m = max(2, n // 3)
    counts = torch.tensor(rng.multinomial(n - m, np.ones(m) / m) + 1)  # each point drawn >= once
    values = rng.normal(size=(7, m))
    expanded = np.repeat(values, counts.numpy(), axis=-1)  # the N values as equal masses
    samples = torch.tensor(values).reshape(1, 7 * m, 1)  # 7 x's, m points each, consecutive
    for risk in ("var", "cvar"):
        got = risk_measure(risk, alpha, counts)(samples).reshape(-1).numpy()
        for i in range(7):
            equal = np.full(n, 1.0 / n)
            if risk == "var":
                assert got[i] == var_np(expanded[i], equal, alpha)
            else:
                k = math.ceil(round(n * alpha, 9))
                assert got[i] == pytest.approx(np.sort(expanded[i])[:k].mean(), abs=1e-12)
                if abs(n * alpha - round(n * alpha)) < 1e-9:
                    assert got[i] == pytest.approx(cvar_np(expanded[i], equal, alpha), abs=1e-4)


def test_systematic_draws_follow_the_masses() -> None:
    """Each count is the floor or the ceiling of N p_i, they sum to N, and over the offset their
    mean is N p_i (the draws are unbiased)."""
    problem = build_problem("hartmann-1-2-discrete", with_optimum=False)
    masses = problem.z.masses
    n = 50
    total = torch.zeros_like(masses)
    offsets = (torch.arange(4000, dtype=torch.float64) + 0.5) / 4000
    for offset in offsets.tolist():
        counts = systematic_counts(masses, n, offset)
        assert int(counts.sum()) == n
        assert bool((counts >= torch.floor(n * masses) - 1e-9).all())
        assert bool((counts <= torch.ceil(n * masses) + 1e-9).all())
        total += counts
    assert torch.allclose(total / len(offsets), n * masses, atol=2e-3)


def test_the_w_set_model_is_the_joint_posterior_at_every_w() -> None:
    g = torch.Generator().manual_seed(0)
    X = torch.rand(12, 3, generator=g, dtype=torch.float64)
    Y = torch.sin(5 * X).sum(-1, keepdim=True)
    model, _ = fit_gp(X, Y, None, refit=True, generator=g)
    w = torch.rand(6, 2, generator=g, dtype=torch.float64)
    x = torch.rand(4, 1, generator=g, dtype=torch.float64)
    joint = torch.cat([x.repeat_interleave(6, 0), w.repeat(4, 1)], dim=-1)  # each x with every w
    with torch.no_grad():
        expected = model.posterior(joint)
        got = with_w_set(model, w).posterior(x)
    assert torch.allclose(got.mean, expected.mean, atol=1e-10)
    assert torch.allclose(got.covariance_matrix, expected.covariance_matrix, atol=1e-10)
    assert model.input_transform is None if hasattr(model, "input_transform") else True


@pytest.mark.parametrize("name,risk", [("hartmann-1-2-discrete", "cvar"), ("branin-1-1-continuous", "var")])
def test_proposal_is_deterministic_and_in_the_support(name: str, risk: str) -> None:
    problem = build_problem(name, with_optimum=False)
    g = torch.Generator().manual_seed(1)
    X = torch.rand(10, problem.d_x + problem.d_z, generator=g, dtype=torch.float64)
    Y = torch.cos(3 * X).sum(-1, keepdim=True)
    model, _ = fit_gp(X, Y, None, refit=True, generator=g)
    small = {"num_fantasies": 4, "num_restarts": 2, "raw_samples": 16, "inner_samples": 16, "n_w": 20}
    first = BotorchRisk(problem, 3, risk=risk, **small).propose(model, 2)
    again = BotorchRisk(problem, 3, risk=risk, **small).propose(model, 2)
    assert torch.equal(first.x, again.x) and torch.equal(first.z, again.z)
    assert bool(((first.x >= 0) & (first.x <= 1)).all())
    if problem.z.is_discrete:
        assert bool((problem.z.points == first.z).all(-1).any())
    else:
        assert bool(((first.z >= problem.z.lower) & (first.z <= problem.z.upper)).all())
    recommendation = BotorchRisk(problem, 3, risk=risk, **small).recommend(model, X)
    assert recommendation.x.shape == (problem.d_x,)


@pytest.mark.parametrize("inner", [{}, {"inner_restarts": 3, "raw_inner_samples": 40}])
def test_the_inner_options_reach_the_one_shot_starts_and_only_them(inner: dict,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """BoTorch seeds the one-shot KG's fantasy solutions by maximizing the value function
    (``num_inner_restarts`` restarts from ``raw_inner_samples`` raw samples, 20 and 1024 by
    default): ``inner_restarts`` and ``raw_inner_samples`` set them, and at their defaults the
    call is BoTorch's own (no generator of ours in between)."""
    import botorch.optim.optimize as optimize

    calls: list[dict] = []
    real = optimize.optimize_acqf

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(optimize, "optimize_acqf", spy)  # the inner call imports it from there
    problem = build_problem("branin-1-1-discrete", with_optimum=False)
    g = torch.Generator().manual_seed(1)
    X = torch.rand(8, 2, generator=g, dtype=torch.float64)
    model, _ = fit_gp(X, torch.sin(4 * X).sum(-1, keepdim=True), None, refit=True, generator=g)
    small = {"num_fantasies": 2, "num_restarts": 1, "raw_samples": 8, "inner_samples": 8, "n_w": 10,
             "maxiter": 5}
    algorithm = BotorchRisk(problem, 0, **small, **inner)
    algorithm.propose(model, 1)
    assert [(c["num_restarts"], c["raw_samples"]) for c in calls] == [
        (inner.get("inner_restarts", 20), inner.get("raw_inner_samples", 1024))]
    assert algorithm.inner_options == {f"num_{k}" if k == "inner_restarts" else k: v
                                       for k, v in inner.items()}


def test_options_are_checked() -> None:
    problem = build_problem("branin-1-1-discrete", with_optimum=False)
    with pytest.raises(ValueError, match="level"):
        BotorchRisk(problem, 0, level="tutorial")
    with pytest.raises(ValueError, match="n_w"):
        BotorchRisk(problem, 0, n_w=0)


@pytest.mark.parametrize("risk", ["var", "cvar", "mean"])
def test_the_default_recommendation_is_the_shared_rule_among_the_observed_x(risk: str) -> None:
    """By default botorch-risk recommends as every other method: the observed x whose posterior
    mean has the best exact risk measure over Z, here found by brute force from the definitions;
    the tutorial's rule (an option) optimizes over all x and may pick one never queried."""
    problem = build_problem("hartmann-1-2-discrete", with_optimum=False)
    g = torch.Generator().manual_seed(4)
    X = torch.rand(12, problem.d_x + problem.d_z, generator=g, dtype=torch.float64)
    model, _ = fit_gp(X, torch.cos(3 * X).sum(-1, keepdim=True), None, refit=True, generator=g)
    masses, alpha = problem.z.masses.numpy(), problem.alpha
    values = []
    for x in X[:, : problem.d_x]:
        grid = torch.cat([x.expand(len(masses), -1), problem.z.points], dim=-1)
        with torch.no_grad():
            mean = model.posterior(grid).mean.squeeze(-1).numpy()
        values.append({"var": var_np(mean, masses, alpha), "cvar": cvar_np(mean, masses, alpha),
                       "mean": float(mean @ masses)}[risk])
    best = int(np.argmax(values))
    got = BotorchRisk(problem, 3, risk=risk).recommend(model, X)
    assert torch.equal(got.x, X[best, : problem.d_x])
    assert got.info["var_mean_rec"] == pytest.approx(values[best], abs=1e-6)
    small = {"num_restarts": 2, "raw_samples": 16, "inner_samples": 16, "n_w_rec": 20}
    tutorial = BotorchRisk(problem, 3, risk=risk, recommendation="tutorial", **small).recommend(model, X)
    assert tutorial.x.shape == (problem.d_x,)
    with pytest.raises(ValueError, match="recommendation"):
        BotorchRisk(problem, 0, recommendation="best")
