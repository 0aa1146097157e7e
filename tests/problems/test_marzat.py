"""``marzat-f6-4-3`` against BoRisk's ``Marzat6`` (``BoRisk/test_functions/robust_synthetic.py``),
written again here in its own units, and its risk measures against independent computations: the
mean in closed form, the CVaR by a semi-analytic integral that uses the function's structure.

f = -F with F(x, w) = a(x) . w + g(x) - |w|^2, so -F = |w - m|^2 - |m|^2 - g(x) with m = a(x) / 2:
the lower tail {-F <= q} is the ball |w - m| <= R (R^2 = q + |m|^2 + g) inside the box [-2, 2]^3.
Its probability and the tail integral of |w - m|^2 are integrals over (w1, w2) of closed forms in
w3; the CVaR at alpha is then (1 / alpha) * tail integral - |m|^2 - g at the R whose probability
is alpha."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
import torch

from problems import PROBLEMS, UniformZ, build_problem, weighted_cvar, weighted_var
from problems.base import QMC_NODES

NAME = "marzat-f6-4-3"


def borisk_f6(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """BoRisk's ``Marzat6.evaluate_true`` in its own units, ``n x 4`` and ``n x 3`` -> ``n``."""
    p1 = w[:, 0] * (x[:, 0] ** 2 - x[:, 1] + x[:, 2] - x[:, 3] + 2)
    p2 = w[:, 1] * (-x[:, 0] + 2 * x[:, 1] ** 2 - x[:, 2] ** 2 + 2 * x[:, 3] + 1)
    p3 = w[:, 2] * (2 * x[:, 0] - x[:, 1] + 2 * x[:, 2] - x[:, 3] ** 2 + 5)
    p4 = 5 * x[:, 0] ** 2 + 4 * x[:, 1] ** 2 + 3 * x[:, 2] ** 2 + 2 * x[:, 3] ** 2 - (w**2).sum(1)
    return p1 + p2 + p3 + p4


def _structure(x: np.ndarray) -> tuple[np.ndarray, float]:
    """m = a(x) / 2 and g(x) of -F = |w - m|^2 - |m|^2 - g, for one x in BoRisk's units."""
    x1, x2, x3, x4 = x
    a = np.array([x1**2 - x2 + x3 - x4 + 2, -x1 + 2 * x2**2 - x3**2 + 2 * x4 + 1,
                  2 * x1 - x2 + 2 * x3 - x4**2 + 5])
    return a / 2, 5 * x1**2 + 4 * x2**2 + 3 * x3**2 + 2 * x4**2


def exact_cvar(x: np.ndarray, alpha: float, nodes: int = 200) -> float:
    """CVaR_alpha of -F(x, W), W uniform on [-2, 2]^3, by the ball-in-box integrals (module
    docstring): Gauss-Legendre in (w1, w2) (``nodes`` per axis), w3 in closed form. The disk's
    edge makes the rule converge slowly: 200 nodes are within 3e-8 (at CVaR -6) and 2e-5 (at
    -205) of 400, far inside the tolerances below."""
    m, g = _structure(x)
    t, wt = np.polynomial.legendre.leggauss(nodes)
    w1, w2 = np.meshgrid(2 * t, 2 * t, indexing="ij")
    weight = np.outer(wt, wt) * 4 / 16  # the 2 x 2 Jacobian, then the density 1/16 of (w1, w2)
    r12 = (w1 - m[0]) ** 2 + (w2 - m[1]) ** 2

    def tail(radius2: float) -> tuple[float, float]:
        half = np.sqrt(np.clip(radius2 - r12, 0.0, None))
        lo, hi = np.clip(m[2] - half, -2, 2), np.clip(m[2] + half, -2, 2)
        length = hi - lo  # zero where the disk misses the box
        square = ((hi - m[2]) ** 3 - (lo - m[2]) ** 3) / 3 + r12 * length
        return float((weight * length).sum() / 4), float((weight * square).sum() / 4)

    far = float(r12.max()) + (abs(m[2]) + 2) ** 2
    radius2 = scipy.optimize.brentq(lambda r2: tail(r2)[0] - alpha, 0.0, far, xtol=1e-13)
    return tail(radius2)[1] / alpha - float(m @ m) - g


@pytest.fixture(scope="module")
def problem():
    return build_problem(NAME)


def test_it_is_registered_with_borisks_settings(problem) -> None:
    assert NAME in PROBLEMS
    assert (problem.d_x, problem.d_z, problem.alpha, problem.noise_std) == (4, 3, 0.25, 1.0)
    assert (problem.n_init, problem.iterations) == (80, 100)
    assert isinstance(problem.z, UniformZ) and (problem.z.lower, problem.z.upper) == (0.0, 1.0)


def test_f_is_minus_borisks_f6_on_the_rescaled_box(problem) -> None:
    rng = np.random.default_rng(0)
    x, z = rng.random((500, 4)), rng.random((500, 3))
    ours = problem.f(torch.from_numpy(x), torch.from_numpy(z)).numpy()
    np.testing.assert_allclose(ours, -borisk_f6(10 * x - 5, 4 * z - 2), rtol=1e-13, atol=1e-11)


def test_the_mean_is_four_minus_the_quadratic(problem) -> None:
    """E[w] = 0 and E[w_i^2] = 4/3 on [-2, 2]: E[-F] = 4 - g(x). The QMC nodes integrate a
    quadratic to within 1e-6 of it."""
    rng = np.random.default_rng(1)
    x = rng.random((20, 4))
    u = 10 * x - 5
    closed = 4 - (5 * u[:, 0] ** 2 + 4 * u[:, 1] ** 2 + 3 * u[:, 2] ** 2 + 2 * u[:, 3] ** 2)
    np.testing.assert_allclose(problem.mean(torch.from_numpy(x)).numpy(), closed, atol=1e-6 * 250)
    assert problem.optimum.mean == pytest.approx(4.0, abs=1e-5)
    np.testing.assert_allclose(problem.optimum.argmax_mean, [0.5] * 4, atol=1e-3)


def test_the_semi_analytic_cvar_agrees_with_a_monte_carlo() -> None:
    """The test's own reference, checked first: 8 x 10^6 draws, within 4 standard errors of the
    tail-mean estimator (sd of (X - q) 1{X <= q} / (alpha sqrt(n)), q the sample quantile)."""
    x = np.array([0.3, -0.2, 0.1, 0.4])
    n, alpha = 8_000_000, 0.25
    values = -borisk_f6(np.broadcast_to(x, (n, 4)), np.random.default_rng(10).uniform(-2, 2, (n, 3)))
    k = int(alpha * n)
    tail = np.partition(values, k)[:k]
    q = tail.max()
    excess = np.where(values <= q, values - q, 0.0)
    standard_error = excess.std() / (alpha * np.sqrt(n))
    assert exact_cvar(x, alpha) == pytest.approx(tail.mean(), abs=4 * standard_error)


@pytest.mark.parametrize("point", ["optimum", "center", "random"])
def test_problem_cvar_is_within_1e_4_of_the_semi_analytic_value(problem, point) -> None:
    """The QMC CVaR (2^16 Sobol nodes) against the integral: the error this problem's regret has."""
    x = {"optimum": np.array(problem.optimum.argmax_cvar), "center": np.full(4, 0.5),
         "random": np.random.default_rng(3).random(4)}[point]
    ours = float(problem.cvar(torch.from_numpy(x)[None])[0])
    assert ours == pytest.approx(exact_cvar(10 * x - 5, 0.25), abs=1e-4, rel=1e-5)


def test_no_random_point_beats_the_stored_cvar(problem) -> None:
    """256 Sobol x, f on the QMC nodes once for both measures (as Problem.var and Problem.cvar take
    them on this problem)."""
    x = torch.quasirandom.SobolEngine(4, scramble=True, seed=11).draw(256, dtype=torch.float64)
    nodes = problem.z.qmc_points(QMC_NODES)
    masses = nodes.new_full((QMC_NODES,), 1.0 / QMC_NODES)
    var, cvar = [], []
    for chunk in x.split(32):
        values = problem.f(chunk[:, None, :], nodes)  # 32 x QMC_NODES
        var.append(weighted_var(values, masses, problem.alpha))
        cvar.append(weighted_cvar(values, masses, problem.alpha))
    assert torch.equal(var[0], problem.var(x[:32]))  # the same computation as the problem's
    assert float(torch.cat(cvar).max()) <= problem.optimum.cvar
    assert float(torch.cat(var).max()) <= problem.optimum.var


@pytest.mark.slow
def test_no_one_of_ten_thousand_random_points_beats_the_stored_optima(problem) -> None:
    """10^4 random x (40 s: the slow set), scored on the same QMC nodes through the structure
    -F = |w|^2 - a(x) . w - g(x) (a matrix product rather than f at every node), VaR the k-th
    smallest of the 2^16 values and CVaR the mean of the k smallest, k = alpha 2^16."""
    w = 4.0 * problem.z.qmc_points(QMC_NODES) - 2.0  # QMC_NODES x 3, BoRisk's units
    u = 10.0 * torch.rand(10_000, 4, generator=torch.Generator().manual_seed(5), dtype=torch.float64) - 5.0
    a = torch.stack([u[:, 0] ** 2 - u[:, 1] + u[:, 2] - u[:, 3] + 2,
                     -u[:, 0] + 2 * u[:, 1] ** 2 - u[:, 2] ** 2 + 2 * u[:, 3] + 1,
                     2 * u[:, 0] - u[:, 1] + 2 * u[:, 2] - u[:, 3] ** 2 + 5], dim=-1)
    g = 5 * u[:, 0] ** 2 + 4 * u[:, 1] ** 2 + 3 * u[:, 2] ** 2 + 2 * u[:, 3] ** 2
    k = int(problem.alpha * QMC_NODES)
    best_var = best_cvar = -np.inf
    for a_part, g_part in zip(a.split(500), g.split(500), strict=True):
        lowest = ((w**2).sum(-1)[None] - a_part @ w.T - g_part[:, None]).topk(k, dim=-1, largest=False)
        best_var = max(best_var, float(lowest.values.max(dim=-1).values.max()))
        best_cvar = max(best_cvar, float(lowest.values.mean(dim=-1).max()))
    assert best_var <= problem.optimum.var and best_cvar <= problem.optimum.cvar
