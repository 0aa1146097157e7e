"""Holm's adjustment and the power of the claims' tests, against their definitions: Holm's step-down
procedure run by hand, and power estimated by an independent Monte Carlo with scipy's exact
Wilcoxon test."""

import numpy as np
import pytest
from scipy import stats

from analysis.power import holm, lower_critical, power, seeds_for_power
from analysis.signed_rank import signed_rank_p
from analysis.subclaims import INCONCLUSIVE, REPRODUCED

from .test_claims import _cells, _row, _table


def _step_down_rejects(p: np.ndarray, level: float) -> np.ndarray:
    """Holm (1979) as a procedure: order the p-values, reject while p_(i) <= level / (m - i + 1)."""
    order = np.argsort(p, kind="stable")
    rejected = np.zeros(p.size, dtype=bool)
    for i, j in enumerate(order):
        if p[j] > level / (p.size - i):
            break
        rejected[j] = True
    return rejected


@pytest.mark.parametrize("m", [1, 2, 3, 5, 8])
def test_holm_adjusted_p_rejects_what_the_step_down_procedure_rejects(m: int) -> None:
    rng = np.random.default_rng(m)
    for _ in range(200):
        p = rng.uniform(0, 0.2, m) ** 2
        adjusted = holm(p)
        assert np.all(adjusted >= p) and np.all(adjusted <= 1)
        for level in (0.01, 0.05, 0.1):
            np.testing.assert_array_equal(adjusted <= level, _step_down_rejects(p, level))


def test_holm_leaves_nan_out_of_the_family() -> None:
    adjusted = holm(np.array([0.01, np.nan, 0.04, 0.03]))
    assert np.isnan(adjusted[1])
    np.testing.assert_allclose(adjusted[[0, 2, 3]], [0.03, 0.06, 0.06])


@pytest.mark.parametrize("n", [5, 6, 9, 10, 14])
def test_the_critical_value_is_where_the_exact_p_crosses_the_level(n: int) -> None:
    level = 0.05
    critical = lower_critical(n, level)
    # a sample whose W+ is w: the ranks 1..w... made positive; its exact p against the level
    for w in range(0, n * (n + 1) // 2 + 1):
        d = -np.arange(1.0, n + 1)
        remaining = w
        for r in range(n, 0, -1):  # a subset of ranks summing to w
            if r <= remaining:
                d[r - 1] = r
                remaining -= r
        assert remaining == 0
        assert (signed_rank_p(d, "less") <= level) == (w <= critical), w


def _independent_power(mean: float, sd: float, n: int, kind: str, level: float, margin: float) -> float:
    rng = np.random.default_rng(12345)
    hits = 0
    draws = 3000
    for _ in range(draws):
        d = rng.normal(mean, sd, n)
        if kind == "beats":
            p = stats.wilcoxon(d, alternative="less", method="exact").pvalue
        else:
            p = max(stats.wilcoxon(d + margin, alternative="greater", method="exact").pvalue,
                    stats.wilcoxon(d - margin, alternative="less", method="exact").pvalue)
        hits += p <= level
    return hits / draws


@pytest.mark.parametrize(("mean", "sd", "n", "kind"), [(-0.5, 1.0, 10, "beats"), (-0.3, 0.5, 8, "beats"),
                                                       (0.1, 0.4, 10, "on_par"), (0.0, 0.8, 12, "on_par")])
def test_power_matches_an_independent_monte_carlo(mean: float, sd: float, n: int, kind: str) -> None:
    mine = power(mean, sd, n, kind, 0.05, 0.5, "test")
    other = _independent_power(mean, sd, n, kind, 0.05, 0.5)
    assert abs(mine - other) < 4 * np.sqrt(0.25 / 2000 + 0.25 / 3000)


def test_power_at_no_effect_is_at_most_the_level_and_grows_with_seeds() -> None:
    assert power(0.0, 1.0, 10, "beats", 0.05, 0.5, "null") <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 2000)
    powers = [power(-0.4, 1.0, n, "beats", 0.05, 0.5, "grow") for n in (10, 20, 40, 80)]
    assert powers == sorted(powers) and powers[-1] > 0.9
    n80 = seeds_for_power(-0.4, 1.0, "beats", 0.05, 0.5, "grow")
    assert power(-0.4, 1.0, int(n80), "beats", 0.05, 0.5, "grow") >= 0.8
    # the normal approximation of the signed-rank test: n ~ (z_a + z_b)^2 / (3/pi delta^2) (Lehmann)
    z = stats.norm.ppf(0.95) + stats.norm.ppf(0.8)
    assert n80 == pytest.approx(z ** 2 / (3 / np.pi * 0.4 ** 2), rel=0.2)
    assert np.isnan(seeds_for_power(0.3, 1.0, "beats", 0.05, 0.5, "wrong way"))


def test_a_claims_family_is_holm_adjusted_and_decided_on_the_adjusted_p() -> None:
    """Three sub-claims of C3: one clear (p = 2^-10), one whose raw p is between 0.025 and 0.05, one
    without an effect (p ~ 0.5). The middle one's p gets Holm's factor 2, above 0.05: reproduced
    unadjusted, inconclusive adjusted."""
    base = np.linspace(-3, -1, 10)
    # differences with exact one-sided p in (0.025, 0.05): ranks 1..10, the four smallest positive
    d = -np.arange(1.0, 11) / 10
    d[[0, 1, 2, 3]] *= -1  # W+ = 1 + 2 + 3 + 4 = 10: p = P(W+ <= 10) = 43/1024
    p_mid = signed_rank_p(d, "less")
    assert 0.025 < p_mid < 0.05
    frames = [_cells("hartmann-1-2-discrete", "vucb-unif", base),
              _cells("hartmann-1-2-discrete", "vucb-prob", base - 1),
              _cells("hartmann-2-1-discrete", "vucb-unif", base),
              _cells("hartmann-2-1-discrete", "vucb-prob", base + d),
              _cells("branin-1-1-discrete", "vucb-unif", base),
              _cells("branin-1-1-discrete", "vucb-prob", base + np.array([1, -1] * 5) * np.arange(1, 11))]
    table = _table(*frames)
    clear = _row(table, "C3", "hartmann-1-2-discrete", "vucb-prob vs vucb-unif")
    mid = _row(table, "C3", "hartmann-2-1-discrete", "vucb-prob vs vucb-unif")
    assert clear["family"] == mid["family"] == 3
    assert mid["p_value"] == pytest.approx(p_mid) and mid["p_holm"] == pytest.approx(2 * p_mid)
    assert clear["p_holm"] == pytest.approx(3 * 2.0 ** -10)
    assert clear["verdict"] == REPRODUCED
    assert mid["verdict_unadjusted"] == REPRODUCED and mid["verdict"] == INCONCLUSIVE
    assert mid["effect_mean"] == pytest.approx(d.mean(), abs=1e-12)
    assert mid["effect_sd"] == pytest.approx(d.std(ddof=1), abs=1e-12)
    assert 0 < mid["power_10"] < 1 and mid["seeds_80"] > 10
