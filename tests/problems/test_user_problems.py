"""What a user's own problem may be beyond the registered ones: any d_x (the general optimum
search), a continuous Z with d_z > 2 (quasi-Monte Carlo VaR and worst case), checked against
optima and quantiles known in closed form."""

import pytest
import torch

from problems import DiscreteZ, Problem, TruncatedNormalZ
from problems.optima import search_problem, sobol_compass_maximize

C4 = torch.tensor([0.3, 0.7, 0.45, 0.6], dtype=torch.float64)


def test_the_general_search_finds_a_smooth_maximum_in_four_dimensions() -> None:
    result = sobol_compass_maximize(lambda x: -((x - C4) ** 2).sum(-1), 4)
    assert result.value <= 0.0 and result.value > -1e-15
    assert torch.allclose(torch.tensor(result.argmax, dtype=torch.float64), C4, atol=1e-7)
    assert result.coarse_value < result.value


def test_a_discrete_problem_with_four_dimensional_x_gets_both_optima() -> None:
    """f = -||x - c||^2 + z, Z on {0, 1} with masses 1/2: VaR_0.25 = -||x - c||^2 (the value at z = 0),
    the worst case the same; both maxima are 0 at c. (The grid search has no setting for d_x = 4.)"""
    z = DiscreteZ(torch.tensor([[0.0], [1.0]], dtype=torch.float64),
                  torch.tensor([0.5, 0.5], dtype=torch.float64))
    problem = Problem("four", 4, 1, z, 0.25, 0.1, 5, 10,
                      lambda u: -((u[..., :4] - C4) ** 2).sum(-1) + u[..., 4])
    entry = search_problem(problem, points=1024)
    assert entry["method"] == "sobol-compass" and entry["lower_bound"] is True
    for target in ("var", "worst_case"):
        assert -1e-14 < entry[target]["value"] <= 0.0
        assert torch.allclose(torch.tensor(entry[target]["argmax"], dtype=torch.float64), C4, atol=1e-6)


def test_a_continuous_pair_without_a_dedicated_setting_gets_the_general_search() -> None:
    """(d_x, d_z) = (3, 1) under the default truncated normal: f = -||x - c||^2 + z, so
    VaR_alpha = -||x - c||^2 + q_alpha (q the truncated normal's quantile) and the worst case
    -||x - c||^2 + 0.25."""
    c = C4[:3]
    z = TruncatedNormalZ(1)
    problem = Problem("three", 3, 1, z, 0.1, 0.1, 5, 10,
                      lambda u: -((u[..., :3] - c) ** 2).sum(-1) + u[..., 3])
    entry = search_problem(problem, points=256)
    q = float(z.icdf(torch.tensor([0.1], dtype=torch.float64))[0])
    assert entry["method"] == "sobol-compass"
    assert entry["var"]["value"] == pytest.approx(q, abs=1e-6)  # the quadrature's accuracy
    assert entry["worst_case"]["value"] == pytest.approx(0.25, abs=1e-9)


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.3, 0.5])
def test_var_with_three_dimensional_continuous_z_matches_exact_quantiles(alpha: float) -> None:
    """For iid coordinates with CDF F, min has CDF 1 - (1 - F)^3 and max F^3: their alpha-quantiles
    are F^{-1}(1 - (1 - alpha)^(1/3)) and F^{-1}(alpha^(1/3)). The stated accuracy is 2e-5."""
    z = TruncatedNormalZ(3)
    x = torch.zeros(2, 1, dtype=torch.float64)
    for reduce, level in ((lambda v: v.min(-1).values, 1 - (1 - alpha) ** (1 / 3)),
                          (lambda v: v.max(-1).values, alpha ** (1 / 3))):
        problem = Problem("q", 1, 3, z, alpha, 0.1, 3, 5, lambda u, r=reduce: r(u[..., 1:]))
        exact = float(z.icdf(torch.tensor([level], dtype=torch.float64))[0])
        assert torch.allclose(problem.var(x), torch.full((2,), exact, dtype=torch.float64), atol=2e-5)


def test_worst_case_with_three_dimensional_continuous_z_is_the_corner() -> None:
    z = TruncatedNormalZ(3)
    problem = Problem("w", 1, 3, z, 0.1, 0.1, 3, 5, lambda u: -(u[..., 0] - 0.3) ** 2 + u[..., 1:].sum(-1))
    x = torch.tensor([[0.3], [0.5], [0.0]], dtype=torch.float64)
    expected = -(x[:, 0] - 0.3) ** 2 + 3 * 0.25  # every coordinate at its lower bound
    assert torch.allclose(problem.worst_case(x), expected, atol=1e-12)
