"""Risk measures as objects (problems.measures), against their definitions computed by brute force:
VaR as the smallest value whose cumulative mass reaches alpha, CVaR as (1 / alpha) times the
integral of VaR_u over (0, alpha], the worst case as the smallest value of positive mass."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from problems import build_problem
from problems.base import Optimum
from problems.measures import DEFAULT_RISK, RISK_MEASURES, RISKS, WORST_CASE, risk_measure


def _var_brute(values: np.ndarray, masses: np.ndarray, alpha: float) -> float:
    return min(v for v in values if masses[values <= v].sum() >= alpha - 1e-12)


def _cvar_brute(values: np.ndarray, masses: np.ndarray, alpha: float, n: int = 200_000) -> float:
    u = (np.arange(n) + 0.5) / n * alpha  # midpoint rule over (0, alpha]
    order = np.argsort(values)
    cumulative = np.cumsum(masses[order])
    index = np.searchsorted(cumulative, u, side="left")  # the first value whose mass reaches u
    return float(values[order][np.minimum(index, len(values) - 1)].mean())


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.3, 0.5, 0.9])
def test_each_measure_of_a_weighted_distribution_is_its_definition(alpha: float) -> None:
    rng = np.random.default_rng(int(alpha * 100))
    for _ in range(20):
        n = int(rng.integers(2, 12))
        values = rng.normal(size=n).round(1)  # ties on purpose
        masses = rng.dirichlet(np.ones(n))
        masses[rng.integers(n)] = 0.0  # a value of no mass
        masses /= masses.sum()
        v, m = torch.tensor(values), torch.tensor(masses)
        assert float(risk_measure("var").of_distribution(v, m, alpha)) == _var_brute(values, masses, alpha)
        assert float(risk_measure("cvar").of_distribution(v, m, alpha)) == pytest.approx(
            _cvar_brute(values, masses, alpha), abs=1e-4)
        assert float(WORST_CASE.of_distribution(v, m, alpha)) == values[masses > 0].min()
        assert float(risk_measure("mean").of_distribution(v, m, alpha)) == pytest.approx(
            np.average(values, weights=masses), abs=1e-12)


def test_the_measures_batch_over_leading_dimensions() -> None:
    values = torch.randn(3, 4, 6, dtype=torch.float64)
    masses = torch.full((6,), 1 / 6, dtype=torch.float64)
    for measure in RISK_MEASURES.values():
        out = measure.of_distribution(values, masses, 0.3)
        assert out.shape == (3, 4)
        assert torch.equal(out[1, 2], measure.of_distribution(values[1, 2], masses, 0.3))


def test_each_measure_of_a_problem_at_x_is_the_measure_of_its_support_values() -> None:
    problem = build_problem("hartmann-1-2-discrete")
    x = torch.rand(5, problem.d_x, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    values = problem.f(x.unsqueeze(-2), problem.z.points)  # 5 x |Dz|, by hand
    for measure in RISK_MEASURES.values():
        torch.testing.assert_close(measure.of_problem(problem, x),
                                   measure.of_distribution(values, problem.z.masses, problem.alpha),
                                   rtol=0, atol=0)


def test_the_registry_is_the_one_list_of_names() -> None:
    from harness.schema import ROW_SCHEMA

    assert RISKS == ("var", "cvar", "mean") and RISKS[0] == DEFAULT_RISK
    assert "worst_case" in RISK_MEASURES and "worst_case" not in RISKS  # StableOpt's target only
    for name, measure in RISK_MEASURES.items():
        assert measure.name == name and measure.column in ROW_SCHEMA.names
    optimum = Optimum(var=1.0, worst_case=-1.0, cvar=0.5, argmax_cvar=(0.25,))
    assert [optimum.value(n) for n in ("var", "cvar", "worst_case")] == [1.0, 0.5, -1.0]
    assert risk_measure("cvar").argmax(optimum) == (0.25,)
    with pytest.raises(ValueError, match="unknown risk measure 'median'; valid: var, cvar, worst_case, mean"):
        risk_measure("median")


@pytest.mark.parametrize("name", ["branin-1-1-continuous", "hartmann-1-2-continuous",
                                  "hartmann-2-1-continuous"])
def test_the_mean_under_a_continuous_z_is_the_monte_carlo_mean(name: str) -> None:
    """The midpoint rule against 2 x 10^6 draws of Z (within 4 standard errors) and against the same
    rule on a grid twice as fine per axis (within 1e-6: the rule's own error)."""
    problem = build_problem(name, with_optimum=False)
    x = torch.rand(3, problem.d_x, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    mean = risk_measure("mean").of_problem(problem, x)
    z = problem.z.sample(2_000_000, torch.Generator().manual_seed(0))
    values = torch.stack([problem.f(row.expand(z.shape[0], -1), z) for row in x])
    error = (mean - values.mean(-1)).abs()
    assert torch.all(error < 4 * values.std(-1) / 2_000_000 ** 0.5), error
    finer = replace(problem, quadrature_nodes=2 * (4097 if problem.d_z == 1 else 257))
    torch.testing.assert_close(finer.mean(x), mean, rtol=0, atol=1e-6)


def test_the_mean_optimum_of_a_discrete_problem_is_the_best_of_a_fine_grid() -> None:
    problem = build_problem("branin-1-1-discrete")
    x = torch.linspace(0, 1, 200_001, dtype=torch.float64).unsqueeze(-1)
    values = (problem.support_values(x) * problem.z.masses).sum(-1)  # the definition, by hand
    best = float(values.max())
    assert problem.optimum.mean >= best - 1e-12 and problem.optimum.mean - best < 1e-9
    assert abs(problem.optimum.argmax_mean[0] - float(x[values.argmax(), 0])) < 1e-4


@pytest.mark.parametrize("name", sorted(RISK_MEASURES))
def test_each_measure_is_its_weights_times_the_values_and_they_are_its_gradient(name: str) -> None:
    """``weights`` against ``of_distribution`` (an independent computation: the sorted formulas of
    problems.risk): the weighted sum is the measure, and the weights are its autograd gradient on
    rows without ties (where the gradient is unique)."""
    measure = RISK_MEASURES[name]
    g = torch.Generator().manual_seed(len(name))
    values = torch.randn(300, 23, generator=g, dtype=torch.float64)
    masses = torch.softmax(torch.randn(23, generator=g, dtype=torch.float64), 0)
    masses[4] = 0.0  # a point outside the support: the worst case must skip it
    masses = masses / masses.sum()
    leaf = values.clone().requires_grad_(True)
    expected = measure.of_distribution(leaf, masses, 0.17)
    (gradient,) = torch.autograd.grad(expected.sum(), leaf)
    weights = measure.weights(values, masses, 0.17)
    assert torch.allclose((weights * values).sum(-1), expected.detach(), rtol=0, atol=1e-13)
    assert torch.allclose(weights, gradient, rtol=0, atol=1e-13)
