"""The claims table on synthetic results whose verdicts are known by construction."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.claims import claims_table, overall
from analysis.data import with_log_regret
from analysis.signed_rank import signed_rank_p, tost_p
from analysis.subclaims import INCONCLUSIVE, NOT_REPRODUCED, NOT_RUN, REPRODUCED
from studies.nguyen2021.study import STUDY


def _cells(problem: str, algorithm: str, final_log10: np.ndarray, target: str = "var", alpha: float = 0.1,
           t_acq: float = 0.1, queries: np.ndarray | None = None,
           lv_count: np.ndarray | None = None) -> pd.DataFrame:
    """Cells of one series with 3 iterations; seed s ends at 10 ** final_log10[s]; ``queries``
    (seed x iteration x (x, z)) and ``lv_count`` (seed x iteration) default to fixed values."""
    rows = []
    for seed, final in enumerate(final_log10):
        for it in range(4):
            q = queries[seed, it] if queries is not None else np.array([0.5, 0.5])
            rows.append({"problem": problem, "algorithm": algorithm, "alpha": alpha, "target": target,
                         "options": "{}", "iterations": 3, "seed": seed, "iteration": it,
                         "regret": 10.0 ** (final if it == 3 else 0.0), "optimum": 1.0,
                         "x": q[:1] if it else np.array([]), "z": q[1:] if it else np.array([]),
                         "t_acq_s": t_acq * (1 + 0.01 * seed) if it else np.nan,
                         "lv_count": (lv_count[seed, it] if lv_count is not None else 1) if it else np.nan})
    return pd.DataFrame(rows)


def _table(*frames: pd.DataFrame) -> pd.DataFrame:
    frame = with_log_regret(pd.concat(frames, ignore_index=True))
    return claims_table(frame, STUDY)


def _row(table: pd.DataFrame, claim: str, problem: str, comparison: str, variant: str = "default",
         statistic: str | None = None) -> pd.Series:
    """The row of one sub-claim, variant and statistic (default: the claim's headline statistic)."""
    statistic = statistic or {"C7": "queries", "C8": "time"}.get(claim, "final")
    hit = table.loc[(table["claim"] == claim) & (table["problem"] == problem)
                    & (table["comparison"] == comparison) & (table["variant"] == variant)
                    & (table["statistic"] == statistic)]
    assert len(hit) == 1
    return hit.iloc[0]


RNG = np.random.default_rng(1)
BASE = RNG.normal(-2, 0.5, 10)


def test_clear_win_is_reproduced_and_its_reverse_is_not() -> None:
    unif = _cells("hartmann-1-2-discrete", "vucb-unif", BASE)
    prob = _cells("hartmann-1-2-discrete", "vucb-prob", BASE - 1 + RNG.normal(0, 0.1, 10))
    pair = "vucb-prob vs vucb-unif"
    row = _row(_table(unif, prob), "C3", "hartmann-1-2-discrete", pair)
    assert row["verdict"] == REPRODUCED and row["n_seeds"] == 10
    assert row["p_value"] == pytest.approx(2.0 ** -10)  # every seed better: the exact one-sided p
    final = {name: np.log10(f.loc[f.iteration == 3, "regret"].to_numpy())
             for name, f in (("u", unif), ("p", prob))}
    assert row["effect_value"] == pytest.approx(np.median(final["p"] - final["u"]))
    worse = _cells("hartmann-1-2-discrete", "vucb-prob", BASE + 1 + RNG.normal(0, 0.1, 10))
    assert _row(_table(unif, worse), "C3", "hartmann-1-2-discrete", pair)["verdict"] == NOT_REPRODUCED


def test_clear_tie_is_on_par_and_a_large_gap_is_not() -> None:
    unif = _cells("branin-1-1-discrete", "vucb-unif", BASE)
    kg = _cells("branin-1-1-discrete", "rhokg-apx", BASE + RNG.normal(0, 0.05, 10))
    problem, pair = "branin-1-1-discrete", "vucb-unif vs rhokg-apx"
    assert _row(_table(unif, kg), "C1", problem, pair)["verdict"] == REPRODUCED
    far = _cells(problem, "rhokg-apx", BASE + 2 + RNG.normal(0, 0.05, 10))
    assert _row(_table(unif, far), "C1", problem, pair)["verdict"] == NOT_REPRODUCED
    # a tie is not a win: "beats" on the same data is not reproduced (equivalent within the margin)
    prob = _cells(problem, "vucb-prob", BASE + RNG.normal(0, 0.05, 10))
    assert _row(_table(unif, prob), "C3", problem, "vucb-prob vs vucb-unif")["verdict"] == NOT_REPRODUCED


def test_too_few_seeds_is_inconclusive_and_missing_is_not_run() -> None:
    unif = _cells("hartmann-2-1-discrete", "vucb-unif", BASE[:4])
    prob = _cells("hartmann-2-1-discrete", "vucb-prob", BASE[:4] - 2)
    table = _table(unif, prob)
    row = _row(table, "C3", "hartmann-2-1-discrete", "vucb-prob vs vucb-unif")
    assert row["verdict"] == INCONCLUSIVE and row["n_seeds"] == 4 and "fewer than 5" in row["note"]
    missing = _row(table, "C2", "hartmann-2-1-discrete", "vucb-unif vs rhokg-apx")
    assert missing["verdict"] == NOT_RUN and "no rhokg-apx cells on hartmann-2-1-discrete" in missing["note"]
    verdicts = overall(table, STUDY).set_index("claim")["verdict"]
    assert verdicts["C4"] == NOT_RUN and verdicts["C3"] == INCONCLUSIVE  # one inconclusive, three not run


def test_seeds_pair_by_seed_not_by_position() -> None:
    unif = _cells("goldstein-1-1-discrete", "vucb-unif", BASE)
    prob = _cells("goldstein-1-1-discrete", "vucb-prob", BASE - 1)
    prob = prob.loc[prob["seed"] != 0]  # seed 0 missing on one side
    row = _row(_table(unif, prob), "C3", "goldstein-1-1-discrete", "vucb-prob vs vucb-unif")
    assert row["n_seeds"] == 9 and row["verdict"] == REPRODUCED and "without a partner" in row["note"]


def test_c7_compares_queries_cell_by_cell() -> None:
    queries = RNG.random((6, 4, 2))
    stable = _cells("branin-1-1-discrete", "stableopt", BASE[:6], "worst_case", 0.005, queries=queries)
    unif = _cells("branin-1-1-discrete", "vucb-unif", BASE[:6], "worst_case", 0.005, queries=queries)
    moved = queries.copy()
    moved[2, 3, 1] += 1e-3  # seed 2, iteration 3, z
    prob = _cells("branin-1-1-discrete", "vucb-prob", BASE[:6], "worst_case", 0.005, queries=moved)
    table = _table(stable, unif, prob)
    assert _row(table, "C7", "branin-1-1-discrete", "vucb-unif vs stableopt")["verdict"] == REPRODUCED
    row = _row(table, "C7", "branin-1-1-discrete", "vucb-prob vs stableopt")
    assert row["verdict"] == NOT_REPRODUCED and "seed2: t=3" in row["note"]
    assert row["effect_value"] == pytest.approx(1 - 1 / 18)


@pytest.mark.parametrize(("moved", "tied", "verdict"), [
    ((2, 3, 1), 100, REPRODUCED),       # a different z where every z was a minimizer: tie-breaking
    ((2, 3, 1), 1, NOT_REPRODUCED),     # a different z where the minimizer was unique
    ((2, 3, 0), 100, NOT_REPRODUCED),   # a different x is never a tie of z
])
def test_c7_counts_a_choice_among_tied_z_as_consistent(moved: tuple[int, int, int], tied: int,
                                                        verdict: str) -> None:
    queries = RNG.random((6, 4, 2))
    stable = _cells("goldstein-1-1-discrete", "stableopt", BASE[:6], "worst_case", 0.005, queries=queries)
    other = queries.copy()
    other[moved] += 1e-3
    lv_count = np.ones((6, 4), dtype=int)
    lv_count[2, 3] = tied
    prob = _cells("goldstein-1-1-discrete", "vucb-prob", BASE[:6], "worst_case", 0.005, queries=other,
                  lv_count=lv_count)
    row = _row(_table(stable, prob), "C7", "goldstein-1-1-discrete", "vucb-prob vs stableopt")
    assert row["verdict"] == verdict and "seed2: t=3" in row["note"]
    assert ("(a tie of 100 z)" in row["note"]) == (verdict == REPRODUCED)
    assert row["effect"].startswith("5/6 cells identical")


def test_c8_per_iteration_cost() -> None:
    unif = _cells("branin-1-1-discrete", "vucb-unif", BASE, t_acq=0.1)
    kg = _cells("branin-1-1-discrete", "rhokg-apx", BASE, t_acq=20.0)
    row = _row(_table(unif, kg), "C8", "branin-1-1-discrete", "vucb-unif vs rhokg-apx")
    assert row["verdict"] == REPRODUCED and row["effect_value"] == pytest.approx(200.0)


def test_c8_compares_only_the_vucb_variants_run_on_a_problem() -> None:
    prob = _cells("branin-1-1-continuous", "vucb-prob", BASE, t_acq=2.5)
    kg = _cells("branin-1-1-continuous", "rhokg-apx", BASE, t_acq=1.0)
    table = _table(prob, kg)
    c8 = table.loc[table["claim"] == "C8"]
    assert c8["comparison"].tolist() == ["vucb-prob vs rhokg-apx"]  # no "not run" row for Unif
    assert c8["verdict"].iloc[0] == NOT_REPRODUCED and c8["effect_value"].iloc[0] == pytest.approx(0.4)


def _brute_force_p(d: np.ndarray, alternative: str) -> float:
    """Enumerate every sign assignment of the nonzero |d| (midranks): the exact null of W+."""
    d = d[d != 0]
    ranks = stats.rankdata(np.abs(d))
    observed = ranks[d > 0].sum()
    null = np.array([sum(r for r, s in zip(ranks, signs, strict=True) if s)
                     for signs in itertools.product([0, 1], repeat=len(d))])
    less, greater = np.mean(null <= observed + 1e-9), np.mean(null >= observed - 1e-9)
    return {"less": less, "greater": greater, "two-sided": min(1.0, 2 * min(less, greater))}[alternative]


@pytest.mark.parametrize("alternative", ["less", "greater", "two-sided"])
def test_signed_rank_p_against_scipy_and_enumeration(alternative: str) -> None:
    rng = np.random.default_rng(3)
    for n in (3, 6, 10):
        d = rng.normal(0.3, 1, n)
        assert signed_rank_p(d, alternative) == pytest.approx(
            stats.wilcoxon(d, alternative=alternative, method="exact").pvalue)
    tied = np.array([-1.0, -1.0, 0.5, 2.0, -2.0, 0.0, 3.0, -0.5, -0.5])
    assert signed_rank_p(tied, alternative) == pytest.approx(_brute_force_p(tied, alternative))


def test_tost_needs_both_sides_inside_the_margin() -> None:
    assert tost_p(np.full(8, 0.1) + np.linspace(-0.01, 0.01, 8), 0.5) == pytest.approx(2.0 ** -8)
    assert tost_p(np.full(8, 0.6) + np.linspace(-0.01, 0.01, 8), 0.5) == pytest.approx(1.0)


def test_the_default_variant_uses_default_settings_only() -> None:
    unif = _cells("branin-1-1-discrete", "vucb-unif", BASE)
    kg = _cells("branin-1-1-discrete", "rhokg-apx", BASE).assign(options='{"n_raw": 8}')
    table = _table(unif, kg)
    row = _row(table, "C1", "branin-1-1-discrete", "vucb-unif vs rhokg-apx")
    assert row["verdict"] == NOT_RUN and "(10 with other settings)" in row["note"]
    # the other options are a variant of their own, tested and labelled
    variant = _row(table, "C1", "branin-1-1-discrete", "vucb-unif vs rhokg-apx", "n_raw=8")
    assert variant["verdict"] == REPRODUCED


def test_on_par_is_refused_only_when_non_equivalence_is_shown() -> None:
    from analysis.subclaims import non_equivalence_p

    problem, pair = "branin-1-1-discrete", "vucb-unif vs rhokg-apx"
    unif = _cells(problem, "vucb-unif", BASE)
    # a median difference of 0.6 with a spread of 1: the two-sided test rejects zero, yet nothing
    # shows the difference exceeds the margin 0.5, so it is inconclusive (it was "not reproduced")
    spread = np.linspace(-1, 1, 10)
    d = 0.6 + spread + np.where(spread > 0, 0.4, 0.0)
    near = _cells(problem, "rhokg-apx", BASE - d)
    row = _row(_table(unif, near), "C1", problem, pair)
    assert signed_rank_p(d, "two-sided") < 0.05 < non_equivalence_p(d)
    assert row["verdict"] == INCONCLUSIVE
    # clearly beyond the margin: shown apart, and the p-value is twice scipy's one-sided exact one
    far_d = 2.0 + RNG.normal(0, 0.1, 10)
    row = _row(_table(unif, _cells(problem, "rhokg-apx", BASE - far_d)), "C1", problem, pair)
    assert row["verdict"] == NOT_REPRODUCED and "non-equivalence" in row["note"]
    want = 2 * stats.wilcoxon(far_d - 0.5, alternative="greater", method="exact").pvalue
    assert non_equivalence_p(far_d) == pytest.approx(want)


def _long_cells(problem: str, algorithm: str, curves: np.ndarray, options: str = "{}") -> pd.DataFrame:
    """Cells with ``curves.shape[1] - 1`` iterations: seed s has log10 regret curves[s, t] at t."""
    rows = [{"problem": problem, "algorithm": algorithm, "alpha": 0.1, "target": "var", "options": options,
             "iterations": curves.shape[1] - 1, "seed": seed, "iteration": t, "regret": 10.0 ** value,
             "optimum": 1.0, "x": np.array([0.5]), "z": np.array([0.5]), "t_acq_s": 0.1, "lv_count": 1}
            for seed, curve in enumerate(curves) for t, value in enumerate(curve)]
    return pd.DataFrame(rows)


def test_the_second_statistic_is_the_mean_over_the_last_ten_iterations() -> None:
    rng = np.random.default_rng(7)
    problem = "hartmann-1-2-discrete"
    a = rng.normal(-2, 1, (8, 16))
    b = rng.normal(-1, 1, (8, 16))
    table = _table(_long_cells(problem, "vucb-prob", a), _long_cells(problem, "vucb-unif", b))
    row = _row(table, "C3", problem, "vucb-prob vs vucb-unif", statistic="last10")
    d = a[:, -10:].mean(axis=1) - b[:, -10:].mean(axis=1)  # iterations 6..15
    assert row["effect_value"] == pytest.approx(np.median(d))
    assert row["p_value"] == pytest.approx(signed_rank_p(d, "less"))
    final = _row(table, "C3", problem, "vucb-prob vs vucb-unif", statistic="final")
    assert final["effect_value"] == pytest.approx(np.median(a[:, -1] - b[:, -1]))


def test_variants_pair_like_with_like() -> None:
    problem = "hartmann-1-2-discrete"
    frames = [
        _cells(problem, "vucb-prob", BASE - 1),
        _cells(problem, "vucb-unif", BASE),
        _cells(problem, "vucb-prob", BASE - 1).assign(options='{"beta": "authors"}'),
        _cells(problem, "vucb-unif", BASE).assign(options='{"beta": "authors"}'),
        _cells(problem, "vucb-prob", BASE + 1).assign(options='{"gp": "borisk"}'),
        _cells(problem, "vucb-unif", BASE).assign(options='{"gp": "borisk"}'),
        _cells(problem, "rhokg-apx", BASE + 1),
        _cells(problem, "rhokg-apx-released", BASE - 1),
        _cells(problem, "rhokg-apx-released", BASE - 1).assign(options='{"gp": "borisk"}'),
    ]
    table = _table(*frames)
    c3 = table.loc[(table["claim"] == "C3") & (table["problem"] == problem) & (table["statistic"] == "final")]
    # beta=authors meets beta=authors only; gp=borisk meets gp=borisk only
    assert sorted(c3["variant"]) == ["beta=authors", "default", "gp=borisk"]
    assert _row(table, "C3", problem, "vucb-prob vs vucb-unif", "gp=borisk")["verdict"] == NOT_REPRODUCED
    c2 = table.loc[(table["claim"] == "C2") & (table["problem"] == problem) & (table["statistic"] == "final")]
    # no shared option between V-UCB and rho-KG^apx: every combination under one GP profile
    assert sorted(c2["variant"]) == sorted(["default", "beta=authors", "rhokg-apx-released",
                                            "rhokg-apx-released, beta=authors",
                                            "gp=borisk, rhokg-apx-released"])
    assert _row(table, "C2", problem, "vucb-unif vs rhokg-apx")["verdict"] == REPRODUCED
    released = _row(table, "C2", problem, "vucb-unif vs rhokg-apx", "rhokg-apx-released")
    assert released["verdict"] == NOT_REPRODUCED
    verdicts = overall(table, STUDY).set_index("claim")
    assert verdicts.loc["C2", "verdict"] == INCONCLUSIVE  # reproduced on one problem, not run on the other
    assert verdicts.loc["C2", "flipped"]
    assert ("rhokg-apx-released on hartmann-1-2-discrete: final reproduced -> not reproduced, "
            "last10 reproduced -> not reproduced") in verdicts.loc["C2", "changes"]
    # gp=borisk pairs V-UCB Unif with rhokg-apx-released under that GP; compared with the default
    assert "gp=borisk, rhokg-apx-released on hartmann-1-2-discrete: final reproduced -> not reproduced" in (
        verdicts.loc["C2", "changes"])
    # a variant where the default did not run is said to be alone
    alone = overall(_table(*frames[6:8], _cells("hartmann-2-1-discrete", "vucb-unif", BASE),
                           _cells("hartmann-2-1-discrete", "rhokg-apx-released", BASE - 1)), STUDY)
    c2 = alone.set_index("claim").loc["C2"]
    assert c2["where_default_not_run"] == "final: 1 not reproduced; last10: 1 not reproduced"
    assert "hartmann-2-1" not in c2["changes"]
    assert verdicts.loc["C3", "changes"].startswith("gp=borisk on hartmann-1-2-discrete: final reproduced ->")


def test_random_search_is_the_floor_of_claim_c9() -> None:
    prob = _cells("goldstein-1-1-continuous", "vucb-prob", BASE - 1)
    rand = _cells("goldstein-1-1-continuous", "random", BASE)
    table = _table(prob, rand)
    assert _row(table, "C9", "goldstein-1-1-continuous", "vucb-prob vs random")["verdict"] == REPRODUCED
    assert overall(table, STUDY).set_index("claim").loc["C9", "verdict"] == INCONCLUSIVE  # others not run


def test_sensitivity_table_has_one_column_per_variant() -> None:
    from analysis.claims import sensitivity_table

    problem = "hartmann-1-2-discrete"
    table = _table(_cells(problem, "vucb-unif", BASE), _cells(problem, "rhokg-apx", BASE + 1),
                   _cells(problem, "rhokg-apx-released", BASE - 1))
    wide = sensitivity_table(table, ("C2",)).set_index("variant")
    column = "C2 hartmann-1-2-discrete: vucb-unif vs rhokg-apx"
    assert list(wide.index) == ["default", "rhokg-apx-released"] and list(wide.columns) == [column]
    assert wide.loc["default", column] == "yes / yes" and wide.loc["rhokg-apx-released", column] == "NO / NO"


def test_the_reduced_search_effort_is_named_as_such() -> None:
    from analysis.claim_cells import variant_label

    effort = {"restarts_per_dim": 2, "raw_per_restart": 10, "maxiter": 100}
    named = STUDY.named_options
    assert variant_label({"beta": "authors"}, {**effort, "algorithm": "rhokg-apx-released"}, named) == (
        "rhokg-apx-released, beta=authors, reduced effort")
    partly = variant_label({}, {**effort, "maxiter": 50}, named)
    assert partly == "maxiter=50, raw_per_restart=10, restarts_per_dim=2"


def test_a_claim_on_cvar_reads_the_cvar_cells_and_names_the_measure() -> None:
    """The same pair run at both measures: a CVaR claim decides on the CVaR cells alone (A wins
    there and loses on VaR), and a VaR claim on the VaR cells."""
    from harness.study import Beats, Claim, Study

    study = Study("t", claims=(Claim("V", "var", (Beats(("branin-1-1-discrete",), "cvucb", "random"),)),
                               Claim("W", "cvar", (Beats(("branin-1-1-discrete",), "cvucb", "random",
                                                         target="cvar"),))))
    frame = with_log_regret(pd.concat([
        _cells("branin-1-1-discrete", "cvucb", BASE - 1.0, target="cvar"),
        _cells("branin-1-1-discrete", "random", BASE, target="cvar"),
        _cells("branin-1-1-discrete", "cvucb", BASE + 1.0),
        _cells("branin-1-1-discrete", "random", BASE)], ignore_index=True))
    table = claims_table(frame, study)
    final = table.loc[table["statistic"] == "final"].set_index("claim")
    assert final.loc["W", "verdict"] == REPRODUCED and "of CVaR" in final.loc["W", "data"]
    assert final.loc["V", "verdict"] == NOT_REPRODUCED and "CVaR" not in final.loc["V", "data"]


def test_a_toml_claim_names_its_measure_and_an_unknown_one_is_refused(tmp_path) -> None:
    from harness.study import study_from_toml

    text = ('name = "t"\n[[claims]]\nid = "W"\ncomparisons = [{ kind = "beats", problems = '
            '["branin-1-1-discrete"], a = "cvucb", b = "random", target = "%s" }]\n')
    (tmp_path / "ok.toml").write_text(text % "cvar")
    assert study_from_toml(tmp_path / "ok.toml").claims[0].comparisons[0].target == "cvar"
    (tmp_path / "bad.toml").write_text(text % "cvr")
    with pytest.raises(ValueError, match="unknown risk measure 'cvr'"):
        study_from_toml(tmp_path / "bad.toml")


def test_a_toml_study_sets_options_on_one_problem_and_an_unknown_name_is_refused(tmp_path) -> None:
    from harness.study import study_from_toml

    text = ('name = "t"\nreduced_effort = ["rhokg-apx"]\n[problem_options."%s"]\n'
            '"rhokg-apx" = { num_w_samples = 40 }\n')
    (tmp_path / "ok.toml").write_text(text % "marzat-f6-4-3")
    study = study_from_toml(tmp_path / "ok.toml")
    assert study.problem_options == {"marzat-f6-4-3": {"rhokg-apx": {"num_w_samples": 40}}}
    assert study.reduced_effort == ("rhokg-apx",)
    (tmp_path / "bad.toml").write_text(text % "marzat-f6")
    with pytest.raises(ValueError, match="unknown problem 'marzat-f6'"):
        study_from_toml(tmp_path / "bad.toml")


def test_signed_rank_p_refuses_an_unknown_alternative() -> None:
    """A misspelt alternative used to run two-sided unnoticed."""
    from analysis.signed_rank import signed_rank_p

    with pytest.raises(ValueError, match="two_sided"):
        signed_rank_p(np.array([1.0, -2.0, 3.0]), "two_sided")
