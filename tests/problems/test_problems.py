"""The problems' objectives against the textbook formulas, their Z, and their initial designs."""

import math

import numpy as np
import pytest
import torch

from problems import PROBLEMS, DiscreteZ, TruncatedNormalZ, build_problem


def branin_textbook(a: float, b: float) -> float:
    return ((b - 5.1 / (4 * math.pi**2) * a**2 + 5 / math.pi * a - 6) ** 2
            + 10 * (1 - 1 / (8 * math.pi)) * math.cos(a) + 10)


def goldstein_textbook(a: float, b: float) -> float:
    return ((1 + (a + b + 1) ** 2 * (19 - 14 * a + 3 * a * a - 14 * b + 6 * a * b + 3 * b * b))
            * (30 + (2 * a - 3 * b) ** 2
               * (18 - 32 * a + 12 * a * a + 48 * b - 36 * a * b + 27 * b * b)))


HARTMANN_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
HARTMANN_P = 1e-4 * np.array([[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547],
                              [381, 5743, 8828]])
HARTMANN_C = np.array([1.0, 1.2, 3.0, 3.2])


def hartmann_textbook(u: np.ndarray) -> float:
    return -float(np.sum(HARTMANN_C * np.exp(-np.sum(HARTMANN_A * (u - HARTMANN_P) ** 2, axis=1))))


def test_textbook_minima() -> None:
    # the textbook functions themselves, at their known minimizers
    assert branin_textbook(math.pi, 2.275) == pytest.approx(0.397887, abs=1e-6)
    assert goldstein_textbook(0.0, -1.0) == pytest.approx(3.0)
    assert hartmann_textbook(np.array([0.114614, 0.555649, 0.852547])) == pytest.approx(
        -3.86278, abs=1e-5)


@pytest.mark.parametrize("seed", range(3))
def test_objectives_match_textbook_formulas(seed: int) -> None:
    rng = np.random.default_rng(seed)
    u = rng.uniform(size=(50, 3))
    branin = build_problem("branin-1-1-discrete", with_optimum=False)
    goldstein = build_problem("goldstein-1-1-discrete", with_optimum=False)
    h12 = build_problem("hartmann-1-2-discrete", with_optimum=False)
    h21 = build_problem("hartmann-2-1-discrete", with_optimum=False)
    for row in u:
        x, z = torch.tensor(row[:1]), torch.tensor(row[1:2])
        expected = -(branin_textbook(15 * row[0] - 5, 15 * row[1]) - 54.81) / 51.95
        assert float(branin.f(x, z)) == pytest.approx(expected, rel=1e-12, abs=1e-12)
        expected = -(math.log(goldstein_textbook(4 * row[0] - 2, 4 * row[1] - 2)) - 8.693)
        assert float(goldstein.f(x, z)) == pytest.approx(expected, rel=1e-12, abs=1e-12)
        expected = -hartmann_textbook(row)
        # rel 1e-12: float32-rounded constants anywhere would show here (they cost ~1e-9)
        got = float(h12.f(torch.tensor(row[:1]), torch.tensor(row[1:])))
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-14)
        got = float(h21.f(torch.tensor(row[:2]), torch.tensor(row[2:])))
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-14)


def test_f_broadcasts_over_batches() -> None:
    p = build_problem("hartmann-1-2-discrete", with_optimum=False)
    x = torch.rand(4, 1, 1)
    z = torch.rand(5, 2)
    values = p.f(x, z)
    assert values.shape == (4, 5)
    assert float(values[2, 3]) == float(p.f(x[2, 0], z[3]))


@pytest.mark.parametrize("name, n, d_z", [("branin-1-1-discrete", 100, 1),
                                          ("goldstein-1-1-discrete", 100, 1),
                                          ("hartmann-1-2-discrete", 64, 2),
                                          ("hartmann-2-1-discrete", 100, 1)])
def test_discrete_z_is_the_gaussian_weighted_grid(name: str, n: int, d_z: int) -> None:
    z = build_problem(name, with_optimum=False).z
    assert isinstance(z, DiscreteZ)
    assert z.points.shape == (n, d_z)
    per_axis = round(n ** (1 / d_z))
    axis = np.linspace(0, 1, per_axis)
    grid = np.stack(np.meshgrid(*([axis] * d_z), indexing="ij"), -1).reshape(-1, d_z)
    np.testing.assert_allclose(z.points.numpy(), grid, atol=1e-15)
    weights = np.exp(-((grid - 0.5) ** 2).sum(-1) / 0.01)
    np.testing.assert_allclose(z.masses.numpy(), weights / weights.sum(), rtol=1e-12)


def test_truncated_normal_density_integrates_to_one_and_samples_match() -> None:
    tn = TruncatedNormalZ(d_z=1)
    grid = torch.linspace(0.2, 0.8, 600_001).unsqueeze(-1)
    mass = torch.trapezoid(tn.density(grid), grid.squeeze(-1))
    assert float(mass) == pytest.approx(1.0, abs=1e-6)
    samples = tn.sample(200_000, torch.Generator().manual_seed(0))
    assert float(samples.min()) >= 0.25 and float(samples.max()) <= 0.75
    # sd of N(0.5, 0.125^2) truncated at +-2 sd: 0.125 * sqrt(1 - 2 * 2 phi(2) / (2 Phi(2) - 1))
    phi2 = math.exp(-2) / math.sqrt(2 * math.pi)
    sd = 0.125 * math.sqrt(1 - 4 * phi2 / (math.erf(2 / math.sqrt(2))))
    assert float(samples.std()) == pytest.approx(sd, rel=1e-2)


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_initial_design_depends_on_problem_and_seed_only(name: str) -> None:
    p = build_problem(name, with_optimum=False)
    x1, z1 = p.initial_design(3)
    x2, z2 = build_problem(name, with_optimum=False).initial_design(3)
    assert torch.equal(x1, x2) and torch.equal(z1, z2)
    assert x1.shape == (p.n_init, p.d_x) and z1.shape == (p.n_init, p.d_z)
    assert not torch.equal(p.initial_design(4)[0], x1)
    if p.z.is_discrete:
        support = p.z.points
        assert all(bool((support == zi).all(-1).any()) for zi in z1)
    else:  # uniform over the support box
        assert bool(((z1 >= p.z.lower) & (z1 <= p.z.upper)).all())


def test_a_problem_declares_a_non_negative_overhead_for_cost_estimates() -> None:
    """overhead_seconds (the harness's seconds an iteration besides the proposal) is 0.05 s unless a
    problem declares more; a negative one is refused in one line."""
    from dataclasses import replace

    from problems import check_problem

    overheads = {name: build_problem(name, with_optimum=False).overhead_seconds for name in PROBLEMS}
    assert all(v >= 0.05 for v in overheads.values())
    problem = build_problem("branin-1-1-discrete", with_optimum=False)
    with pytest.raises(ValueError, match="overhead_seconds must be >= 0, got -1"):
        check_problem("mine", replace(problem, overhead_seconds=-1.0))


def test_a_simulator_must_be_callable_and_its_draws_positive() -> None:
    """A problem's ``simulator`` and ``noise_draws`` are checked when it is named, in one line."""
    from dataclasses import replace

    from problems import check_problem

    problem = build_problem("branin-1-1-discrete", with_optimum=False)
    with pytest.raises(ValueError, match="simulator must be callable"):
        check_problem("mine", replace(problem, simulator=3))
    with pytest.raises(ValueError, match="noise_draws"):
        check_problem("mine", replace(problem, simulator=lambda xz, n: xz[..., 0], noise_draws=0))
    simulated = replace(problem, simulator=lambda xz, n: n.sum(-1), noise_draws=4)
    assert check_problem("mine", simulated).noise_shape == (4,)
    noise = simulated.draw_noise(5, torch.Generator().manual_seed(0))
    assert noise.shape == (5, 4)
    x, z = torch.zeros(5, 1, dtype=torch.float64), torch.zeros(5, 1, dtype=torch.float64)
    assert torch.equal(simulated.observe(x, z, noise), noise.sum(-1))
    # without a simulator the stream gives one draw an observation, as it always has
    g, h = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    assert torch.equal(problem.draw_noise(5, g), torch.randn(5, generator=h, dtype=torch.float64))
