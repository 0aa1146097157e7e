"""The log-log slope fit against timings with a known exponent."""

import numpy as np
import pandas as pd
import pytest

from analysis.complexity import PAPER_EXPONENTS, fit_slope, slope_table


def test_an_exact_power_law_gives_its_exponent_and_a_zero_width_interval() -> None:
    sizes = np.array([10, 20, 40, 80, 160] * 5, dtype=float)
    fitted = fit_slope(sizes, 3e-6 * sizes**2.5)
    assert fitted.slope == pytest.approx(2.5, abs=1e-12)
    assert fitted.high - fitted.low < 1e-6  # rounding only
    assert (fitted.points, fitted.sizes) == (25, 5)


def test_the_interval_covers_the_true_exponent_at_about_its_level() -> None:
    rng = np.random.default_rng(0)
    sizes = np.repeat([16.0, 64.0, 256.0, 1024.0], 5)
    covered = 0
    trials = 400
    for _ in range(trials):
        noise = np.exp(rng.normal(0.0, 0.2, sizes.shape))  # timing noise: multiplicative
        fitted = fit_slope(sizes, 1e-4 * sizes**1.3 * noise, level=0.9)
        covered += fitted.low <= 1.3 <= fitted.high
    # 90% nominal; binomial sd over 400 trials is 1.5%
    assert 0.85 <= covered / trials <= 0.95


def test_the_slope_is_the_least_squares_slope_of_the_logs() -> None:
    rng = np.random.default_rng(1)
    sizes = np.repeat([10.0, 20.0, 40.0, 80.0], 6)
    seconds = 0.01 * sizes**2 * np.exp(rng.normal(0, 0.3, sizes.shape))
    x, y = np.log10(sizes), np.log10(seconds)
    expected = ((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum()
    assert fit_slope(sizes, seconds).slope == pytest.approx(expected, rel=1e-12)


def test_too_few_sizes_or_non_positive_times_are_refused() -> None:
    with pytest.raises(ValueError, match="distinct"):
        fit_slope(np.array([8.0, 8.0, 8.0]), np.array([1.0, 1.1, 0.9]))
    with pytest.raises(ValueError, match="positive"):
        fit_slope(np.array([8.0, 16.0, 32.0]), np.array([1.0, 0.0, 2.0]))


def test_the_table_compares_with_the_paper() -> None:
    sizes = np.array([16.0, 64.0, 256.0, 1024.0] * 3)
    frame = pd.concat([
        pd.DataFrame({"method": "vucb-prob", "varied": "Dz", "size": sizes, "fixed": 40,
                      "seconds": 1e-5 * sizes**0.8}),
        pd.DataFrame({"method": "rhokg-apx", "varied": "Dz", "size": sizes, "fixed": 40,
                      "seconds": 1e-7 * sizes**3.4}),
    ])
    table = slope_table(frame).set_index("method")
    assert table.loc["vucb-prob", "slope"] == pytest.approx(0.8)
    assert table.loc["vucb-prob", "paper_exponent"] == PAPER_EXPONENTS[("vucb-prob", "Dz")][0] == 1.0
    assert bool(table.loc["vucb-prob", "within_paper"]) is True
    assert bool(table.loc["rhokg-apx", "within_paper"]) is False  # 3.4 exceeds the predicted 3
