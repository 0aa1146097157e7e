"""The 70 % band against the formula written out with numpy and a t-table, the floor, the negative check."""

import numpy as np
import pandas as pd
import pytest

from analysis.bands import band_table, t_quantile
from analysis.data import NegativeRegretError, check_regret, with_log_regret


def _frame(regret: np.ndarray, algorithm: str = "vucb-prob") -> pd.DataFrame:
    """``regret[seed, iteration]`` as stored rows of one series."""
    seeds, iterations = regret.shape
    return pd.DataFrame({
        "problem": "branin-1-1-discrete", "alpha": 0.1, "target": "var", "algorithm": algorithm,
        "options": "{}", "iterations": iterations - 1,
        "seed": np.repeat(np.arange(seeds), iterations), "iteration": np.tile(np.arange(iterations), seeds),
        "regret": regret.ravel(), "optimum": 1.0,
    })


def test_t_quantile_matches_a_printed_t_table() -> None:
    # t_{0.85, nu} from a standard t-table (one-sided 15 % upper tail)
    assert t_quantile(np.array([2, 5, 10]), 0.70) == pytest.approx([1.963, 1.190, 1.100], abs=1e-3)
    assert np.isnan(t_quantile(np.array([1]))[0])


def test_band_equals_the_formula() -> None:
    rng = np.random.default_rng(0)
    regret = 10.0 ** rng.normal(-2, 1, size=(7, 4))
    table = band_table(with_log_regret(_frame(regret))).sort_values("iteration")
    logs = np.log10(regret)
    mean = logs.mean(axis=0)
    sd = np.sqrt(((logs - mean) ** 2).sum(axis=0) / (7 - 1))
    half = 1.134 * sd / np.sqrt(7)  # t_{0.85, 6} = 1.134 (t-table)
    assert table["n_seeds"].tolist() == [7] * 4
    np.testing.assert_allclose(table["mean"], mean, rtol=1e-12)
    np.testing.assert_allclose(table["lower"], mean - half, rtol=1e-3)
    np.testing.assert_allclose(table["upper"], mean + half, rtol=1e-3)


def test_floor_counts_seeds_and_keeps_the_rest() -> None:
    regret = np.array([[0.0, 1e-3], [5e-10, 1e-2], [-5e-10, 1e-1], [1e-4, 1.0]])
    frame = with_log_regret(_frame(regret), floor=1e-9)
    table = band_table(frame).sort_values("iteration")
    assert table["n_floor"].tolist() == [3, 0]
    np.testing.assert_allclose(table["mean"], [(3 * -9 + -4) / 4, (-3 - 2 - 1 + 0) / 4])


def test_one_seed_has_no_band() -> None:
    table = band_table(with_log_regret(_frame(np.array([[0.1, 0.01]]))))
    assert table["lower"].isna().all() and table["upper"].isna().all()
    np.testing.assert_allclose(table["mean"], [-1, -2])


def test_negative_regret_beyond_noise_fails_naming_the_cell() -> None:
    regret = np.array([[0.1, -1e-10], [0.1, 0.01]])
    check_regret(_frame(regret))  # rounding noise passes
    regret[1, 1] = -2e-6
    expected = r"branin-1-1-discrete/vucb-prob/seed1 .*-2\.000e-06 at iteration 1"
    with pytest.raises(NegativeRegretError, match=expected):
        check_regret(_frame(regret))


def test_a_lower_bound_optimum_may_be_beaten_and_the_best_value_is_reported() -> None:
    from analysis.data import beaten_bounds

    regret = np.array([[0.1, 0.02, -0.003], [0.2, -0.001, 0.05]])
    frame = _frame(regret).assign(problem="robot-push-3-2", optimum=-0.5)
    with pytest.raises(NegativeRegretError):  # without the flag the optimum is a certified maximum
        check_regret(frame)
    frame["optimum_lower_bound"] = True
    check_regret(frame)  # with it, beating the bound is allowed ...
    bounds = beaten_bounds(frame)  # ... and reported
    assert len(bounds) == 1
    row = bounds.iloc[0]
    assert row["bound"] == -0.5 and row["best_found"] == pytest.approx(-0.5 + 0.003)
    assert row["beaten_by"] == pytest.approx(0.003) and bool(row["beaten"])
    assert (row["seed"], row["iteration"], row["cells"]) == (0, 2, 2)
    # a certified problem in the same frame still fails
    mixed = pd.concat([frame, _frame(np.array([[0.1, -1e-6]])).assign(optimum_lower_bound=False)])
    with pytest.raises(NegativeRegretError, match="branin-1-1-discrete"):
        check_regret(mixed)
    assert beaten_bounds(_frame(regret)).empty
