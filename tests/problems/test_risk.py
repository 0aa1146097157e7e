"""Weighted VaR against the definition, evaluated by brute force in exact rational arithmetic."""

from fractions import Fraction

import numpy as np
import pytest
import torch

from problems.risk import weighted_var


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
