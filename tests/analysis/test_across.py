"""The views across problems (:mod:`analysis.across`) against their definitions, computed here
independently: profiles by counting runs, ranks by sorting, Friedman's statistic by its formula,
the pairwise tests by scipy's exact Wilcoxon test and Holm's rule written out."""

import itertools
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import across
from analysis.report_output import Document
from analysis.report_parts import across_part
from harness.study import Study

RNG = np.random.default_rng(11)


def _cells(spec: dict[tuple[str, str], np.ndarray], target: str = "var") -> pd.DataFrame:
    """Cell values (as :func:`analysis.claims.cell_values` gives them) of (problem, algorithm) -> finals."""
    rows = [{"problem": p, "alpha": 0.1, "target": target, "iterations": 30, "algorithm": a, "options": "{}",
             "seed": s, "settings": "{}", "final": float(v)}
            for (p, a), values in spec.items() for s, v in enumerate(values)]
    return pd.DataFrame(rows)


def test_a_profile_is_the_fraction_of_runs_at_or_below_tau_averaged_over_problems() -> None:
    spec = {(p, a): RNG.normal(loc, 1.0, n) for p, n in (("p1", 8), ("p2", 12))
            for a, loc in (("random", 0.0), ("good", -1.5))}
    table = across.profile_table(_cells(spec), "random", points=31)
    good = table.loc[table["algorithm"] == "good"]
    for tau, fraction in zip(good["tau"], good["fraction"], strict=True):
        by_problem = [np.mean(spec[(p, "good")] - np.median(spec[(p, "random")]) <= tau)
                      for p in ("p1", "p2")]
        assert fraction == pytest.approx(np.mean(by_problem))
    assert (good["low"] <= good["fraction"] + 1e-12).all()
    assert (good["fraction"] <= good["high"] + 1e-12).all()
    assert good["fraction"].iloc[0] == 0.0 and good["fraction"].iloc[-1] == 1.0  # the grid spans every run
    assert set(good["n_runs"]) == {20} and set(good["n_problems"]) == {2}


def test_without_the_baseline_there_is_no_profile() -> None:
    cells = _cells({("p1", "a"): RNG.normal(size=5), ("p1", "b"): RNG.normal(size=5)})
    assert across.profile_table(cells, "random").empty
    assert across.profile_table(cells, "").empty


def test_ranks_friedman_and_holm_corrected_pairs_match_their_formulas() -> None:
    methods = ("a", "b", "c", "d")
    shift = {"a": -1.0, "b": -0.8, "c": 0.0, "d": 0.6}
    spec = {(p, m): RNG.normal(shift[m], 0.7, 9) for p in ("p1", "p2", "p3") for m in methods}
    ranks, friedman, pairs = across.rank_tables(_cells(spec))
    x = np.array([[spec[(p, m)][s] for m in methods] for p in ("p1", "p2", "p3") for s in range(9)])
    order = np.argsort(np.argsort(x, axis=1), axis=1) + 1  # continuous draws: no ties
    overall = ranks.loc[ranks["problem"] == "all"].set_index("algorithm")["mean_rank"]
    for j, m in enumerate(methods):
        assert overall[m] == pytest.approx(order[:, j].mean())
    n, k = x.shape
    chi2 = 12 / (n * k * (k + 1)) * np.sum(order.sum(axis=0) ** 2) - 3 * n * (k + 1)
    row = friedman.iloc[0]
    assert row["statistic"] == pytest.approx(chi2)
    assert row["p"] == pytest.approx(stats.chi2.sf(chi2, k - 1))
    assert (row["n_blocks"], row["n_problems"], row["n_methods"]) == (27, 3, 4)
    raw = [stats.wilcoxon(x[:, i] - x[:, j], method="exact").pvalue
           for i, j in itertools.combinations(range(k), 2)]
    sorted_idx = np.argsort(raw)
    holm = np.empty(len(raw))
    running = 0.0
    for rank, idx in enumerate(sorted_idx):
        running = max(running, min(1.0, (len(raw) - rank) * raw[idx]))
        holm[idx] = running
    assert pairs["p"].to_numpy() == pytest.approx(raw)
    assert pairs["p_holm"].to_numpy() == pytest.approx(holm)
    assert (pairs["different"] == (holm < 0.05)).all()


def test_tied_finals_share_their_mean_rank() -> None:
    spec = {("p", "a"): np.zeros(6), ("p", "b"): np.zeros(6), ("p", "c"): np.ones(6)}
    ranks, _, _ = across.rank_tables(_cells(spec))
    overall = ranks.loc[ranks["problem"] == "all"].set_index("algorithm")["mean_rank"]
    assert overall.to_dict() == {"a": 1.5, "b": 1.5, "c": 3.0}


def test_a_method_missing_from_a_problem_is_not_ranked_and_said() -> None:
    spec = {(p, m): RNG.normal(size=5) for p in ("p1", "p2") for m in ("a", "b", "c")}
    del spec[("p2", "c")]
    ranks, friedman, _ = across.rank_tables(_cells(spec))
    assert set(ranks["algorithm"]) == {"a", "b"}
    assert "not ranked (absent from some problem): c" in friedman.iloc[0]["note"]
    assert np.isnan(friedman.iloc[0]["p"])  # two methods: no Friedman test


def test_cliques_are_the_maximal_runs_of_methods_no_test_tells_apart() -> None:
    order = ["a", "b", "c", "d", "e"]
    different = {frozenset(p) for p in (("a", "c"), ("a", "d"), ("a", "e"), ("b", "e"))}
    assert across.cliques(order, different) == [(0, 1), (1, 3), (2, 4)]
    assert across.cliques(order, set()) == [(0, 4)]
    everything = {frozenset(p) for p in itertools.combinations(order, 2)}
    assert across.cliques(order, everything) == []


def _frame(seconds: dict[tuple[str, int], list[float]]) -> pd.DataFrame:
    """Rows of cells (algorithm, seed) on one problem: iteration 0, then one row per value of
    ``seconds`` with its acquisition time and a fixed fit of 0.5 s."""
    rows = []
    for (algorithm, seed), values in seconds.items():
        for t, acq in enumerate([None, *values]):
            rows.append({"problem": "p", "target": "var", "options": "{}", "algorithm": algorithm,
                         "alpha": 0.1, "iterations": len(values), "seed": seed, "iteration": t,
                         "t_acq_s": acq, "t_fit_s": 0.5, "t_rec_s": None, "t_eval_s": 0.0,
                         "log10_regret": -float(seed) - t})
    return pd.DataFrame(rows)


def test_cost_quality_takes_medians_over_seeds_of_each_cells_median_iteration() -> None:
    from analysis.claim_cells import cell_values

    seconds = {("a", 0): [1.0, 3.0, 2.0], ("a", 1): [5.0, 4.0, 6.0], ("a", 2): [0.5, 0.5, 9.0]}
    frame = _frame(seconds)
    table = across.cost_quality_table(frame, cell_values(frame))
    per_cell = [np.median(np.array(v) + 0.5) for v in seconds.values()]  # iterations >= 1, fit added
    finals = [-0.0 - 3, -1.0 - 3, -2.0 - 3]
    row = table.iloc[0]
    assert row["seconds_median"] == pytest.approx(np.median(per_cell))
    assert row["seconds_q25"] == pytest.approx(np.quantile(per_cell, 0.25))
    assert row["final_median"] == pytest.approx(np.median(finals))
    assert row["n_seeds"] == 3


def test_a_study_that_asks_for_them_gets_the_section_its_tables_and_its_figures(tmp_path) -> None:
    rows = []
    for problem, algorithm, seed in itertools.product(("p1", "p2"), ("random", "a", "b"), range(5)):
        level = {"random": 0.0, "a": -1.0, "b": -0.5}[algorithm] + RNG.normal(0, 0.3)
        for t in range(4):
            rows.append({"problem": problem, "target": "var", "options": "{}", "algorithm": algorithm,
                         "alpha": 0.1, "iterations": 3, "seed": seed, "iteration": t,
                         "t_acq_s": 0.1 * (t > 0), "t_fit_s": 0.2, "t_rec_s": 0.01, "t_eval_s": 0.0,
                         "log10_regret": level - 0.1 * t})
    doc, paths = Document("t"), {}
    with warnings.catch_warnings():  # a figure drawn with a layout problem warns (save_figure): none may
        warnings.simplefilter("error", UserWarning)
        across_part(doc, pd.DataFrame(rows), Study("s", baseline="random", across_problems=True), tmp_path,
                    paths)
    for name in ("fig_profiles.png", "fig_ranks.png", "fig_cost_quality.png", "across_pairs.csv",
                 "across_friedman.csv", "across_profiles.csv"):
        assert paths[name].is_file(), name
    assert "## Across problems" in "\n".join(doc.md)
    friedman = pd.read_csv(paths["across_friedman.csv"])
    assert friedman.iloc[0]["n_blocks"] == 10 and friedman.iloc[0]["n_methods"] == 3


def _curves(spec: dict[tuple[str, str], np.ndarray]) -> pd.DataFrame:
    """Rows of cells (problem, algorithm) x seeds, 4 iterations: log10 regret ``curve[seed, t]``."""
    rows = []
    for (problem, algorithm), curves in spec.items():
        for seed, curve in enumerate(curves):
            for t, value in enumerate(curve):
                rows.append({"problem": problem, "target": "var", "options": "{}", "algorithm": algorithm,
                             "alpha": 0.1, "iterations": len(curve) - 1, "seed": seed, "iteration": t,
                             "t_acq_s": 1.0 if algorithm == "slow" else 0.1, "log10_regret": float(value)})
    return pd.DataFrame(rows)


def test_the_choice_is_the_best_average_rank_at_each_budget_with_the_methods_no_test_separates() -> None:
    """'fast' leads after half the budget and 'slow' at the end; 'close' is within noise of 'slow'
    at the end, 'bad' is last throughout. Ranks and the Holm-corrected Wilcoxon tests are computed
    here again from the curves."""
    rng, n = np.random.default_rng(2), 12
    noise = rng.normal(0, 0.05, (n, 5))
    spec = {("p1", "fast"): np.array([[0, -2, -2, -2, -2]] * n) + noise,
            ("p1", "slow"): np.array([[0, -1, -1, -3, -4]] * n) + noise[::-1],
            ("p1", "close"): np.array([[0, -1, -1, -3, -4]] * n) + rng.normal(0, 0.05, (n, 5)),
            ("p1", "bad"): np.array([[0, 0, 0, 0, 0]] * n) + noise}
    table = across.choice_table(_curves(spec), {"all": ("p1",)}, (0.5, 1.0)).set_index("fraction")
    assert table.loc[0.5, "best"] == "fast" and table.loc[0.5, "tied"] == ""
    end = table.loc[1.0]
    finals = {m: spec[("p1", m)][:, -1] for m in ("fast", "slow", "close", "bad")}
    order = np.argsort(np.argsort(np.column_stack(list(finals.values())), axis=1), axis=1) + 1
    mean_rank = dict(zip(finals, order.mean(axis=0), strict=True))
    best = min(sorted(mean_rank), key=mean_rank.get)  # equal average ranks: the first name
    others = [m for m in finals if m != best]
    raw = np.array([stats.wilcoxon(finals[m] - finals[best], method="exact").pvalue for m in others])
    adjusted, running = {}, 0.0
    for step, i in enumerate(np.argsort(raw)):  # Holm's step-down rule, written out
        running = max(running, min(1.0, (len(raw) - step) * raw[i]))
        adjusted[others[i]] = running
    assert end["best"] == best and best in ("slow", "close")
    assert end["tied"] == ", ".join(sorted((m for m in others if adjusted[m] >= 0.05), key=mean_rank.get))
    assert end["tied"] == ("close" if best == "slow" else "slow")  # this draw: the two are not told apart
    assert end["best_seconds"] == pytest.approx(1.0 if best == "slow" else 0.1)


@pytest.mark.parametrize("other", ["docs/reproduction/suite/_report", "docs", "docs/reproduction/_pinned"])
def test_with_takes_the_folder_of_one_run_only(other: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture) -> None:
    """``--with`` a report's folder, a folder of several publications or one without cells: one line
    naming the folder expected, exit 2, before anything is read (a report that said "compared with"
    and held none of the other run's methods misled)."""
    from analysis.report import main as report_main

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "report"
    assert report_main([str(root / "docs/reproduction/paper-extra"), "--with", str(root / other),
                        "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--with {root / other}: " in err
    assert "e.g. a publication (docs/reproduction/NAME)" in err
    assert not (out / "report.md").exists()


def test_the_overview_counts_each_runs_cells_apart() -> None:
    """A report with ``--with``: the overview's first line counts the folder's own cells and rows (the
    grid's status is its own), then those of the run compared with, apart, counted here again from
    the frame by spec hash (a combined report said "630 cells from results/mine" of an 80-cell run)."""
    from analysis.data import CELL_KEYS
    from analysis.report_sections import _overview

    rows = []
    for source, hashes in (("mine", ["a1", "a2"]), ("published", ["b1", "b2", "b3"])):
        for seed, spec_hash in enumerate(hashes):
            for iteration in range(4):
                row = {key: "x" for key in CELL_KEYS}
                row.update(seed=seed, spec_hash=spec_hash, iteration=iteration, algorithm=source)
                rows.append(row)
    frame = pd.DataFrame(rows)
    status = {"grid": "mine", "n_grid_cells": 2, "n_done": 2, "n_failed": 0, "n_missing": 0,
              "own_hashes": {"a1", "a2"}, "also": (Path("docs/reproduction/suite"),)}
    doc = Document("t")
    _overview(doc, Path("results/mine"), frame, status)
    text = "\n".join(doc.md)
    assert "2 cells (8 rows) from results/mine. Grid: mine (2 cells listed); completed 2" in text
    assert "Compared with 3 cells (12 rows) of docs/reproduction/suite, read, not rerun" in text


def test_timing_views_that_join_another_run_say_its_seconds_are_its_hosts(tmp_path: Path) -> None:
    """The timing section says that a joined run's seconds were measured on its own host only when
    a run is joined."""
    from analysis.report_sections import MIXED_HOSTS, _timing_section

    for name in ("t.png", "t.pdf"):  # the figure's files: the document embeds the PNG
        (tmp_path / name).write_bytes(b"\x89PNG\r\n\x1a\n")
    figure = [("fig_timing", "Timing", {"png": tmp_path / "t.png", "pdf": tmp_path / "t.pdf"})]
    alone, joined = Document("a"), Document("b")
    _timing_section(alone, pd.DataFrame(), pd.DataFrame(), figure)
    _timing_section(joined, pd.DataFrame(), pd.DataFrame(), figure, (Path("docs/reproduction/suite"),))
    assert MIXED_HOSTS not in "\n".join(alone.md) and MIXED_HOSTS in "\n".join(joined.md)
