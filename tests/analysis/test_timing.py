"""The timing ratios (analysis.timing.ratio_table): the pairs come from the study's "cheaper" claims
(with the variants its aliases name), never from algorithm names the engine knows."""

import pandas as pd
import pytest

from analysis.timing import RATIO_COLUMNS, cost_pairs, ratio_table
from harness.study import NO_STUDY, Beats, Cheaper, Claim, Study


def _timing(rows: list[tuple[str, str, str, float]]) -> pd.DataFrame:
    """A timing table (as analysis.timing.timing_table gives) of (problem, algorithm, options,
    median seconds per proposal) rows; fits take 1 s, cells twice the proposals."""
    return pd.DataFrame([{"problem": p, "alpha": 0.1, "target": "var", "algorithm": a, "options": o,
                          "iterations": 60, "n_cells": 10, "acq_s_median": s, "fit_s_median": 1.0,
                          "total_s_median": 2 * s} for p, a, o, s in rows])


STUDY = Study("mine", claims=(
    Claim("M1", "a beats b", (Beats(("p",), "fast", "slow"),)),
    Claim("M2", "fast and quick are cheaper than slow", (Cheaper((), ("fast", "quick"), "slow"),)),
), aliases={"slow-variant": "slow"})


def test_the_pairs_are_the_cheaper_claims_with_their_variants() -> None:
    assert cost_pairs(STUDY) == [((), ("fast", "quick"), ("slow", "slow-variant"))]
    assert cost_pairs(NO_STUDY) == []


def test_the_ratios_are_the_costlier_median_over_the_cheaper_one() -> None:
    timing = _timing([("p", "slow", "{}", 8.0), ("p", "slow-variant", '{"maxiter": 5}', 4.0),
                      ("p", "fast", "{}", 2.0), ("p", "fast", '{"beta": "authors"}', 1.0),
                      ("p", "quick", "{}", 0.5), ("p", "other", "{}", 100.0),
                      ("q", "fast", "{}", 1.0)])  # no costlier series on q
    table = ratio_table(timing, STUDY)
    assert list(table.columns) == RATIO_COLUMNS
    got = {(r.costlier, r.cheaper): r.acq_ratio for r in table.itertuples()}
    # the cheaper side at its default options only (one exists); the costlier side at any options
    assert got == pytest.approx({("slow", "fast"): 4.0, ("slow", "quick"): 16.0,
                                 ("slow-variant (maxiter=5)", "fast"): 2.0,
                                 ("slow-variant (maxiter=5)", "quick"): 8.0})
    assert set(table["problem"]) == {"p"} and (table["fit_ratio"] == 1.0).all()


def test_no_cheaper_claim_no_ratio() -> None:
    timing = _timing([("p", "slow", "{}", 8.0), ("p", "fast", "{}", 2.0)])
    for study in (NO_STUDY, Study("beats only", claims=(STUDY.claims[0],))):
        table = ratio_table(timing, study)
        assert table.empty and list(table.columns) == RATIO_COLUMNS


def test_a_cheaper_claim_on_named_problems_compares_there_only() -> None:
    timing = _timing([("p", "slow", "{}", 8.0), ("p", "fast", "{}", 2.0),
                      ("q", "slow", "{}", 9.0), ("q", "fast", "{}", 3.0)])
    study = Study("on q", claims=(Claim("M1", "", (Cheaper(("q",), ("fast",), "slow"),)),))
    table = ratio_table(timing, study)
    assert list(table["problem"]) == ["q"] and table["acq_ratio"].iloc[0] == pytest.approx(3.0)
