"""The final-iteration tables (analysis.summary): the last iteration's mean and 70 % band written out
with numpy and a t-table, the median seconds per proposal, the layout and the notes."""

import numpy as np
import pandas as pd

from analysis.bands import band_table
from analysis.data import with_log_regret
from analysis.summary import final_summary, pivot_tables
from analysis.timing import timing_table


def _series(regret: np.ndarray, problem: str, algorithm: str, target: str = "var", options: str = "{}",
            t_acq: float = 0.5) -> pd.DataFrame:
    """``regret[seed, iteration]`` as stored rows of one series; proposal time ``t_acq`` at
    iterations >= 1 and ``10 * t_acq`` at iteration 0 (which the median must leave out)."""
    seeds, iterations = regret.shape
    iteration = np.tile(np.arange(iterations), seeds)
    return pd.DataFrame({
        "problem": problem, "alpha": 0.1, "target": target, "algorithm": algorithm, "options": options,
        "iterations": iterations - 1, "seed": np.repeat(np.arange(seeds), iterations),
        "iteration": iteration, "regret": regret.ravel(), "optimum": 1.0,
        "t_acq_s": np.where(iteration == 0, 10 * t_acq, t_acq), "t_fit_s": 0.01, "t_rec_s": 0.0,
        "t_eval_s": 0.0,
    })


def _tables(frame: pd.DataFrame):
    frame = with_log_regret(frame)
    summary = final_summary(band_table(frame), timing_table(frame))
    return summary, pivot_tables(summary)


def test_the_last_iteration_mean_and_band_equal_the_formula() -> None:
    rng = np.random.default_rng(3)
    regret = 10.0 ** rng.normal(-2, 1, size=(7, 5))
    problem = "branin-1-1-discrete"
    summary, pivots = _tables(pd.concat([_series(regret, problem, "cvucb", "cvar", t_acq=0.25),
                                         _series(regret[:, :3] * 2, problem, "random", "cvar")]))
    logs = np.log10(regret[:, -1])
    mean = logs.mean()
    half = 1.134 * logs.std(ddof=1) / np.sqrt(7)  # t_{0.85, 6} = 1.134 (t-table)
    row = summary.loc[summary["algorithm"] == "cvucb"].iloc[0]
    assert row["iteration"] == 4 and row["n_seeds"] == 7 and row["acq_s_median"] == 0.25
    np.testing.assert_allclose([row["mean"], row["lower"], row["upper"]], [mean, mean - half, mean + half],
                               rtol=1e-3)
    regret_pivot, seconds, note = pivots["cvar"]
    assert list(regret_pivot.columns) == ["problem", "alpha", "T", "cvucb", "random"]
    expected = f"{mean:.2f} [{mean - half:.2f}, {mean + half:.2f}]"
    assert regret_pivot.loc[regret_pivot["T"] == 4, "cvucb"].iloc[0] == expected
    # a series with fewer iterations (T = 2) is its own row; the other column is empty there
    assert sorted(regret_pivot["T"]) == [2, 4]
    assert regret_pivot.loc[regret_pivot["T"] == 2, "cvucb"].iloc[0] == ""
    assert seconds.loc[seconds["T"] == 4, "cvucb"].iloc[0] == "0.25"
    assert seconds.loc[seconds["T"] == 4, "random"].iloc[0] == ""
    assert note == "7 seeds per cell."


def test_one_table_per_target_and_names_with_options_only_where_needed() -> None:
    regret = np.full((5, 3), 1e-2)
    frame = pd.concat([
        _series(regret, "hartmann-1-2-discrete", "vucb-prob"),
        _series(regret, "hartmann-1-2-discrete", "botorch-risk", options='{"num_fantasies": 8}'),
        _series(regret, "hartmann-1-2-discrete", "rhokg-apx", options="{}"),
        _series(regret, "hartmann-1-2-discrete", "rhokg-apx", options='{"gp": "borisk"}'),
        _series(regret[:3], "branin-1-1-discrete", "vucb-prob"),
        _series(np.zeros((5, 3)), "branin-1-1-discrete", "botorch-risk", "cvar"),
    ])
    _, pivots = _tables(frame)
    assert sorted(pivots) == ["cvar", "var"]
    regret_pivot, _, note = pivots["var"]
    assert list(regret_pivot.columns) == ["problem", "alpha", "T", "botorch-risk", "rhokg-apx",
                                          "rhokg-apx (gp=borisk)", "vucb-prob"]
    assert regret_pivot["problem"].tolist() == ["branin-1-1-discrete", "hartmann-1-2-discrete"]
    assert regret_pivot["vucb-prob"].tolist() == ["-2.00 [-2.00, -2.00]"] * 2
    assert note == ("5 seeds per cell except branin-1-1-discrete vucb-prob: 3. "
                    "Options: botorch-risk: num_fantasies=8.")
    regret_pivot, _, note = pivots["cvar"]
    assert regret_pivot["botorch-risk"].tolist() == ["-9.00 [-9.00, -9.00]"]  # every seed at the floor
    assert note == "5 seeds per cell. Seeds at the floor at the end: branin-1-1-discrete botorch-risk: 5."


def test_the_timing_table_has_the_rows_of_the_regret_table_not_every_product_of_their_keys() -> None:
    """Two problems at different T and alpha: 2 settings, not 2 problems x 2 alphas x 2 T = 8 rows."""
    regret = np.full((3, 4), 1e-2)
    first = _series(regret, "branin-1-1-discrete", "random")
    second = _series(regret[:, :3], "goldstein-1-1-discrete", "random").assign(alpha=0.2)
    regret_pivot, seconds, _ = _tables(pd.concat([first, second]))[1]["var"]
    assert len(regret_pivot) == 2
    pd.testing.assert_frame_equal(seconds[["problem", "alpha", "T"]], regret_pivot[["problem", "alpha", "T"]])
    assert list(seconds["random"]) == ["0.5", "0.5"]
