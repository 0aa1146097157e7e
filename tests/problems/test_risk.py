"""Weighted VaR and CVaR against their definitions: brute force in exact rational arithmetic, expanded
samples and the integral of VaR over the lower levels."""

from fractions import Fraction

import numpy as np
import pytest
import torch

from problems.risk import (
    piecewise_linear_cvar,
    piecewise_linear_var,
    stable_argsort,
    triangulated_cvar,
    triangulated_var,
    weighted_cvar,
    weighted_var,
)


def brute_force_var(values: list[float], masses: list[Fraction], alpha: Fraction) -> float:
    """inf{w : P(F <= w) >= alpha}, scanning every candidate w among the values."""
    candidates = sorted(set(values))
    for w in candidates:
        if sum(m for v, m in zip(values, masses, strict=True) if v <= w) >= alpha:
            return w
    raise AssertionError("masses sum below alpha")


def random_case(rng: np.random.Generator, n: int) -> tuple[list[float], list[Fraction]]:
    # Small integer values make ties frequent; rational masses make cumulative sums exact.
    values = rng.integers(-4, 5, size=n).astype(float).tolist()
    weights = rng.integers(1, 10, size=n)
    masses = [Fraction(int(w), int(weights.sum())) for w in weights]
    return values, masses


def test_matches_brute_force_on_random_inputs_with_ties() -> None:
    rng = np.random.default_rng(0)
    for _ in range(400):
        n = int(rng.integers(1, 12))
        values, masses = random_case(rng, n)
        # alpha at every cumulative mass (the boundary case) and at random levels
        cumulative = np.cumsum([Fraction(0), *masses])[1:-1].tolist()
        levels = cumulative + [Fraction(int(k), 97) for k in rng.integers(1, 97, size=3)]
        for alpha in levels:
            if not 0 < alpha < 1:
                continue
            got = weighted_var(torch.tensor(values), torch.tensor([float(m) for m in masses]),
                               float(alpha))
            assert float(got) == brute_force_var(values, masses, alpha), (values, masses, alpha)


def test_alpha_exactly_at_a_cumulative_mass_takes_the_lower_value() -> None:
    values = torch.tensor([3.0, 1.0, 2.0, 4.0])
    masses = torch.full((4,), 0.1 + 0.15)  # 0.25 each, cumulative 0.25, 0.5, 0.75
    assert float(weighted_var(values, masses, 0.5)) == 2.0
    # tenths do not add up exactly in binary: 0.1 + 0.1 + 0.1 != 0.3
    values = torch.arange(10.0)
    masses = torch.full((10,), 0.1)
    for k in range(1, 10):
        assert float(weighted_var(values, masses, k / 10)) == k - 1


def test_batched_and_broadcast_masses() -> None:
    rng = np.random.default_rng(1)
    values = torch.tensor(rng.normal(size=(3, 5, 7)))
    masses = torch.tensor(rng.dirichlet(np.ones(7)))
    got = weighted_var(values, masses, 0.3)
    assert got.shape == (3, 5)
    for i in range(3):
        for j in range(5):
            assert got[i, j] == weighted_var(values[i, j], masses, 0.3)


def test_below_the_smallest_mass_is_the_minimum() -> None:
    values = torch.tensor([[0.3, -1.2, 5.0], [2.0, 1.0, 0.5]])
    masses = torch.tensor([0.2, 0.3, 0.5])
    assert torch.equal(weighted_var(values, masses, 0.1999), values.min(dim=-1).values)


def test_gradient_flows_to_the_selected_value_only() -> None:
    values = torch.tensor([0.5, -1.0, 2.0, 0.0], requires_grad=True)
    masses = torch.tensor([0.25, 0.25, 0.25, 0.25])
    weighted_var(values, masses, 0.5).backward()
    assert values.grad.tolist() == [0.0, 0.0, 0.0, 1.0]


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5])
def test_alpha_outside_the_open_unit_interval_is_rejected(alpha: float) -> None:
    with pytest.raises(ValueError, match="alpha"):
        weighted_var(torch.zeros(3), torch.full((3,), 1 / 3), alpha)


def test_partial_sort_path_and_its_fallback_agree_with_a_full_sort() -> None:
    # n = 100 takes the top-k path; rows whose smallest values carry little mass fall back
    rng = np.random.default_rng(3)
    values = rng.normal(size=(500, 100))
    masses = rng.dirichlet(np.full(100, 0.3))
    masses_t = torch.tensor(masses)
    for alpha in (0.01, 0.1, 0.5, 0.93):
        got = weighted_var(torch.tensor(values), masses_t, alpha).numpy()
        order = np.argsort(values, axis=-1, kind="stable")
        cumulative = np.cumsum(masses[order], axis=-1)
        first = np.argmax(cumulative >= alpha - 1e-12, axis=-1)
        expected = np.take_along_axis(values, order, -1)[np.arange(500), first]
        np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------------------------------------
# weighted CVaR: the lower-tail mean


def test_cvar_equals_the_mean_of_the_lowest_values_of_the_expanded_sample() -> None:
    """Masses c_i / N with integer counts: the distribution is N equally likely draws (value i
    repeated c_i times), and at alpha = m / N its CVaR is the mean of the m smallest draws."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        counts = rng.integers(0, 6, size=n)
        counts[rng.integers(n)] += 1  # at least one draw
        total = int(counts.sum())
        values = np.round(rng.normal(size=n), 1)  # rounding makes ties
        m = int(rng.integers(1, total)) if total > 1 else 1
        if m >= total:
            continue
        draws = np.sort(np.repeat(values, counts))
        got = weighted_cvar(torch.tensor(values), torch.tensor(counts / total), m / total)
        assert float(got) == pytest.approx(draws[:m].mean(), abs=1e-12)


def test_cvar_is_the_integral_of_var_over_the_lower_levels() -> None:
    """(1 / alpha) times the integral of VaR_u over (0, alpha], with VaR_u = the first sorted value
    whose cumulative mass reaches u (numpy's searchsorted) on a midpoint grid of u."""
    rng = np.random.default_rng(1)
    values = rng.normal(size=(50, 30))
    masses = rng.dirichlet(np.ones(30), size=50)
    for alpha in (0.03, 0.1, 0.37, 0.9):
        u = (np.arange(200_000) + 0.5) / 200_000 * alpha
        expected = []
        for row, mass in zip(values, masses, strict=True):
            order = np.argsort(row, kind="stable")
            cumulative = np.cumsum(mass[order])
            index = np.minimum(np.searchsorted(cumulative, u, side="left"), row.size - 1)
            expected.append(row[order][index].mean())
        got = weighted_cvar(torch.tensor(values), torch.tensor(masses), alpha).numpy()
        # the midpoint rule misses at most one step of the step function per jump: h * range each
        assert np.abs(got - np.array(expected)).max() < 30 * (alpha / 200_000) * 10 / alpha


def test_cvar_lies_between_the_minimum_and_var_and_tends_to_both_ends() -> None:
    rng = np.random.default_rng(2)
    values = torch.tensor(rng.normal(size=(100, 64)))
    masses = torch.tensor(rng.dirichlet(np.ones(64) * 0.5))
    for alpha in (0.01, 0.1, 0.5, 0.95):
        cvar = weighted_cvar(values, masses, alpha)
        assert torch.all(cvar >= values.min(-1).values - 1e-12)
        assert torch.all(cvar <= weighted_var(values, masses, alpha) + 1e-12)
    tiny = float(masses.min()) / 2  # below the smallest mass: the minimum
    assert torch.allclose(weighted_cvar(values, masses, tiny), values.min(-1).values, atol=0, rtol=1e-14)
    mean = (values * masses).sum(-1)  # alpha -> 1: the mean
    assert torch.allclose(weighted_cvar(values, masses, 1 - 1e-12), mean, atol=1e-9)
    a, b = weighted_cvar(values, masses, 0.3), weighted_cvar(values, masses, 0.3 + 1e-9)
    assert torch.allclose(a, b, atol=1e-6)  # continuous in alpha (VaR jumps, CVaR does not)


def test_cvar_gradient_spreads_over_the_tail_with_weights_that_sum_to_one() -> None:
    values = torch.tensor([3.0, 1.0, 2.0, 0.5], requires_grad=True)
    masses = torch.tensor([0.1, 0.2, 0.3, 0.4])
    weighted_cvar(values, masses, 0.5).backward()
    # sorted: 0.5 (0.4), 1.0 (0.2), 2.0, 3.0: the tail takes 0.4 of 0.5, then 0.1 of the 1.0
    assert values.grad.tolist() == pytest.approx([0.0, 0.1 / 0.5, 0.0, 0.4 / 0.5])


def test_cvar_with_per_row_masses_equals_row_by_row() -> None:
    rng = np.random.default_rng(3)
    values = torch.tensor(rng.normal(size=(7, 5, 9)))
    masses = torch.tensor(rng.dirichlet(np.ones(9), size=(7, 5)))
    batched = weighted_cvar(values, masses, 0.2)
    for i in range(7):
        for j in range(5):
            alone = weighted_cvar(values[i, j], masses[i, j], 0.2)
            assert float(batched[i, j]) == pytest.approx(float(alone), abs=1e-15)
    with pytest.raises(ValueError, match="alpha"):
        weighted_cvar(values, masses, 1.0)


def _interpolant_cvar_by_sampling(rows: np.ndarray, row_masses: np.ndarray, alpha: float,
                                  samples: int = 2**20) -> float:
    """CVaR of the interpolant by brute force: each row's interpolant at ``samples`` equally spaced
    midpoints of U, weighted by its row's mass, then the lower-tail mean of that weighted sample."""
    u = (np.arange(samples) + 0.5) / samples
    grid = np.linspace(0.0, 1.0, rows.shape[-1])
    values = np.concatenate([np.interp(u, grid, row) for row in rows])
    weights = np.repeat(row_masses / samples, samples)
    order = np.argsort(values, kind="stable")
    reached = np.minimum(np.cumsum(weights[order]), alpha)
    share = np.diff(reached, prepend=0.0)
    return float((share * values[order]).sum() / alpha)


def test_piecewise_linear_cvar_closed_forms() -> None:
    """h(u) = u: U itself, CVaR_alpha = alpha / 2. A flat row is an atom: its value, whatever alpha."""
    nodes = torch.linspace(0.0, 1.0, 5).reshape(1, 5)
    for alpha in (0.05, 0.3, 0.9):
        cvar = piecewise_linear_cvar(nodes, torch.ones(1), alpha)
        assert float(cvar) == pytest.approx(alpha / 2, abs=1e-15)
    flat = torch.full((1, 7), 2.5)
    assert float(piecewise_linear_cvar(flat, torch.ones(1), 0.2)) == pytest.approx(2.5, abs=1e-15)


def test_piecewise_linear_cvar_equals_the_lower_tail_mean_of_the_interpolant() -> None:
    """Random rows with random masses (flat segments included), against a sample of 2^20 points of
    each row's interpolant: agreement to the sample's resolution."""
    rng = np.random.default_rng(4)
    for trial in range(6):
        rows = rng.normal(size=(3, 9))
        rows[0, 2:4] = rows[0, 1]  # a flat stretch: an atom
        masses = rng.dirichlet(np.ones(3))
        for alpha in (0.07, 0.25, 0.6):
            got = float(piecewise_linear_cvar(torch.tensor(rows), torch.tensor(masses), alpha))
            expected = _interpolant_cvar_by_sampling(rows, masses, alpha)
            assert got == pytest.approx(expected, abs=2e-5), (trial, alpha)
            var = float(piecewise_linear_var(torch.tensor(rows), torch.tensor(masses), alpha))
            assert rows.min() - 1e-12 <= got <= var + 1e-12


def test_triangulated_cvar_of_a_linear_function_is_the_triangular_law() -> None:
    """h = u1 + u2 is exact under linear interpolation and U1 + U2 has the triangular law on [0, 2]:
    for alpha <= 1/2, q = sqrt(2 alpha) and CVaR = q^3 / (3 alpha)."""
    grid = torch.linspace(0.0, 1.0, 33)
    values = grid[:, None] + grid[None, :]
    for alpha in (0.02, 0.1, 0.4):
        q = (2 * alpha) ** 0.5
        assert float(triangulated_cvar(values, alpha)) == pytest.approx(q**3 / (3 * alpha), abs=1e-9)


def test_triangulated_cvar_approaches_the_tail_mean_of_the_function() -> None:
    """A smooth h on a 257 x 257 grid against the lower-tail mean of h itself on a 2048 x 2048
    midpoint grid (another discretisation of the same integral): both O(h^2) / O(1/N) close."""
    def h(u1: torch.Tensor, u2: torch.Tensor) -> torch.Tensor:
        return torch.sin(3 * u1) * torch.cos(2 * u2) + 0.5 * u1 * u2

    nodes = torch.linspace(0.0, 1.0, 257)
    values = h(nodes[:, None], nodes[None, :])
    mid = (torch.arange(2048, dtype=torch.float64) + 0.5) / 2048
    sample = h(mid[:, None], mid[None, :]).reshape(-1)
    ordered = torch.sort(sample).values
    for alpha in (0.05, 0.2, 0.5):
        k = round(alpha * ordered.numel())
        assert float(triangulated_cvar(values, alpha)) == pytest.approx(float(ordered[:k].mean()), abs=2e-5)
        assert float(triangulated_cvar(values, alpha)) <= float(triangulated_var(values, alpha))


@pytest.mark.parametrize("n", [1, 2, 15, 100, 243])
def test_stable_argsort_is_torchs_stable_argsort(n: int) -> None:
    """The same permutation as ``torch.argsort(stable=True)`` (which the measures used before) on
    rows with ties, NaNs and signed zeros, so that no row computed with it moves by a bit."""
    g = torch.Generator().manual_seed(n)
    values = torch.randn(600, n, generator=g, dtype=torch.float64)
    values[::7, 0] = values[::7, -1]  # a tie between the ends
    values[::11] = torch.round(values[::11] * 2) / 2  # many ties
    values[3, -1] = float("nan")
    values[5, :] = float("nan")
    values[9, 0], values[9, -1] = -0.0, 0.0
    assert torch.equal(stable_argsort(values), torch.argsort(values, dim=-1, stable=True))
    batched = values.reshape(2, 300, n)
    assert torch.equal(stable_argsort(batched), torch.argsort(batched, dim=-1, stable=True))
