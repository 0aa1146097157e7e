"""The aggregate views against their definitions, computed here by brute force."""

import numpy as np
import pandas as pd
import pytest

from analysis.aggregate import improvement_table, iqm_table, relative_iqm_table


def _cells(spec: dict[tuple[str, str], np.ndarray]) -> pd.DataFrame:
    """Cell values (as :func:`analysis.claims.cell_values` gives them) of (problem, algorithm) -> finals."""
    rows = [{"problem": p, "alpha": 0.1, "target": "var", "iterations": 60, "algorithm": a, "seed": s,
             "settings": "{}", "final": float(v)}
            for (p, a), values in spec.items() for s, v in enumerate(values)]
    return pd.DataFrame(rows)


RNG = np.random.default_rng(3)


def test_iqm_is_the_mean_of_the_middle_half() -> None:
    x = RNG.normal(-2, 1, 12)
    table = iqm_table(_cells({("p", "a"): x}))
    middle = np.sort(x)[3:9]  # 12 runs: drop the 3 lowest and the 3 highest
    row = table.iloc[0]
    assert row["iqm"] == pytest.approx(middle.mean()) and row["n_seeds"] == 12
    assert row["iqm_low"] <= row["iqm"] <= row["iqm_high"]


def test_probability_of_ending_below_is_counted_over_all_pairs_of_runs_and_averaged_over_problems() -> None:
    a1, b1 = RNG.normal(0, 1, 10), RNG.normal(0.5, 1, 10)
    a2, b2 = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 5.0])
    table = improvement_table(_cells({("p1", "a"): a1, ("p1", "b"): b1, ("p2", "a"): a2, ("p2", "b"): b2,
                                      ("p3", "a"): a2}))  # p3: b never ran there

    def brute(x, y):
        return np.mean([1.0 if u < v else 0.5 if u == v else 0.0 for u in x for v in y])

    want = (brute(a1, b1) + brute(a2, b2)) / 2
    row = table.iloc[0]
    if want < 0.5:
        assert (row["a"], row["b"]) == ("b", "a") and row["p_a_below_b"] == pytest.approx(1 - want)
    else:
        assert (row["a"], row["b"]) == ("a", "b") and row["p_a_below_b"] == pytest.approx(want)
    assert row["n_problems"] == 2 and row["problems"] == "p1, p2"
    assert row["low"] <= row["p_a_below_b"] <= row["high"]


def test_a_method_always_below_has_probability_one_and_a_point_interval() -> None:
    table = improvement_table(_cells({("p", "a"): np.arange(5.0), ("p", "b"): np.arange(5.0) + 10}))
    row = table.iloc[0]
    assert (row["a"], row["p_a_below_b"], row["low"], row["high"]) == ("a", 1.0, 1.0, 1.0)


def test_relative_iqm_subtracts_the_baselines_median_on_each_problem() -> None:
    base1, base2 = np.array([0.0, 1.0, 2.0, 3.0, 4.0]), np.array([-10.0, -9.0, -8.0, -7.0, -6.0])
    m1, m2 = np.array([-1.0, -1.0, -1.0, -1.0]), np.array([-11.0, -10.0, -10.0, -9.0])
    table = relative_iqm_table(_cells({("p1", "random"): base1, ("p2", "random"): base2,
                                       ("p1", "m"): m1, ("p2", "m"): m2}), "random")
    row = table.iloc[0]
    pooled = np.sort(np.concatenate([m1 - 2.0, m2 - (-8.0)]))  # 8 runs: the middle 4
    assert row["iqm_vs_baseline"] == pytest.approx(pooled[2:6].mean())
    assert (row["n_problems"], row["n_runs"], row["algorithm"]) == (2, 8, "m")
