"""The log-log slope fit against timings with a known exponent, and the paper study's formulas and
labels (studies/nguyen2021/complexity.py) as the report uses them."""

import numpy as np
import pandas as pd
import pytest

from analysis.complexity import NO_COMPLEXITY, fit_slope, method_label, slope_table
from harness.study import Complexity
from studies.nguyen2021.complexity import COMPLEXITY, PAPER_EXPONENTS


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
    table = slope_table(frame, complexity=COMPLEXITY).set_index("method")
    assert table.loc["vucb-prob", "slope"] == pytest.approx(0.8)
    assert table.loc["vucb-prob", "formula_exponent"] == PAPER_EXPONENTS[("vucb-prob", "Dz")][0] == 1.0
    assert bool(table.loc["vucb-prob", "within_formula"]) is True
    assert bool(table.loc["rhokg-apx", "within_formula"]) is False  # 3.4 exceeds the predicted 3
    # without a study's formulas: the fit alone
    bare = slope_table(frame).set_index("method")
    assert bare.loc["vucb-prob", "slope"] == pytest.approx(0.8)
    assert bare[["formula_slope", "formula_exponent"]].isna().all().all()
    assert bare["within_formula"].isna().all() and (bare["formula_term"] == "").all()


def test_formula_slopes_follow_the_regime_of_the_paper_formulas() -> None:
    from analysis.complexity import formula_slope as slope_of

    d = np.array([10.0, 20.0, 40.0, 80.0, 160.0])
    z = np.array([16.0, 64.0, 256.0, 1024.0])
    def formula_slope(method, varied, fixed, sizes):  # the paper's formulas
        return slope_of(method, varied, fixed, sizes, COMPLEXITY)

    assert formula_slope("gp-fit", "D", 64, d) == pytest.approx(3.0, abs=1e-12)
    # V-UCB: |Dz| (|D|^2 + log |Dz|) is linear in |Dz| up to the slowly varying log term ...
    assert 1.0 <= formula_slope("vucb-prob", "Dz", 40, z) <= 1.01
    # ... and quadratic in |D| once |D|^2 >> log |Dz| (log 1024 = 6.9 against |D|^2 >= 100)
    assert formula_slope("vucb-prob", "D", 1024, d) == pytest.approx(2.0, abs=0.05)
    # rho-KG^apx: |D| K |Dz| (|D|^2 + |Dz| |D| + |Dz|^2 + M |Dz|): by hand at two sizes
    def f(dd: float, zz: float) -> float:
        return dd * 10 * zz * (dd**2 + zz * dd + zz**2 + 10 * zz)

    two = np.array([16.0, 1024.0])
    expected = (np.log10(f(160, 1024)) - np.log10(f(160, 16))) / (np.log10(1024) - np.log10(16))
    assert formula_slope("rhokg-apx", "Dz", 160, two) == pytest.approx(expected, rel=1e-12)
    # its regime: |D|^2 dominates at small |Dz| (exponent near 1 + 0), |Dz|^2 at large (near 3)
    assert formula_slope("rhokg-apx", "Dz", 160, np.array([1.0, 2.0])) < 1.2
    assert formula_slope("rhokg-apx", "Dz", 10, np.array([1e4, 2e4])) > 2.9
    assert np.isnan(formula_slope("vucb-prob (continuous Z, LNSO)", "D", 64, d))
    assert np.isnan(slope_of("vucb-prob", "D", 64, d))  # no study, no formula


def test_a_method_is_labelled_by_its_algorithm_and_kind_of_z_unless_the_study_says_more() -> None:
    assert method_label("vucb-prob", "discrete") == "vucb-prob"
    assert method_label("vucb-prob", "continuous") == "vucb-prob (continuous Z)"
    assert method_label("vucb-prob", "continuous", COMPLEXITY) == "vucb-prob (continuous Z, LNSO)"
    assert method_label("vucb-unif", "continuous", COMPLEXITY) == "vucb-unif (continuous Z, LNSO)"
    assert method_label("vucb-prob-saa", "continuous", COMPLEXITY) == "vucb-prob-saa (continuous Z)"
    mine = Complexity(labels={("mine", "discrete"): "my method"})
    assert method_label("mine", "discrete", mine) == "my method"
    assert method_label("mine", "discrete", NO_COMPLEXITY) == "mine"


def test_timing_points_recover_known_exponents_in_both_sizes() -> None:
    from analysis.complexity import median_table, timing_points

    rows = []
    for n_obs in (10, 20, 40, 80):
        for n_z in (16, 64, 256):
            for repeat in (1, 2, 3):
                rows.append({"algorithm": "vucb-prob", "z_kind": "discrete", "what": "acquisition",
                             "n_obs": n_obs, "n_z": n_z, "repeat": repeat,
                             "cpu_seconds": 1e-6 * n_obs**1.5 * n_z**0.75, "seconds": 1.0})
                rows.append({"algorithm": "vucb-prob", "z_kind": "discrete", "what": "fit",
                             "n_obs": n_obs, "n_z": n_z, "repeat": repeat,
                             "cpu_seconds": 1e-7 * n_obs**3, "seconds": 1.0})
                rows.append({"algorithm": "vucb-prob-saa", "z_kind": "continuous", "what": "acquisition",
                             "n_obs": n_obs, "n_z": n_z, "repeat": repeat,
                             "cpu_seconds": 1e-5 * n_z, "seconds": 1.0})
    timings = pd.DataFrame(rows)
    points = timing_points(timings)
    assert len(points) == 2 * len(timings)
    table = slope_table(points).set_index(["method", "varied", "fixed"])
    assert table.loc[("vucb-prob", "D", 64), "slope"] == pytest.approx(1.5)
    assert table.loc[("vucb-prob", "Dz", 40), "slope"] == pytest.approx(0.75)
    assert table.loc[("gp-fit", "D", 16), "slope"] == pytest.approx(3.0)
    assert table.loc[("gp-fit", "Dz", 80), "slope"] == pytest.approx(0.0, abs=1e-9)
    assert table.loc[("vucb-prob-saa (continuous Z)", "Dz", 10), "slope"] == pytest.approx(1.0)
    assert len(table) == 3 * (3 + 4)  # every method: a line per |Dz| and a line per |D|
    medians = median_table(timings).set_index(["method", "n_obs", "n_z"])
    assert medians.loc[("vucb-prob", 20, 64), "median_s"] == pytest.approx(1e-6 * 20**1.5 * 64**0.75)
    assert medians.loc[("vucb-prob", 20, 64), "repeats"] == 3
    # wall clock on request
    assert (timing_points(timings, clock="seconds")["seconds"] == 1.0).all()
