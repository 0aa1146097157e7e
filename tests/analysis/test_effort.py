"""A study's reduced effort: which cells count as its default configuration, and the paired
comparison of the two efforts against scipy's Wilcoxon test and the medians computed here."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from algorithms.botorch_risk import BotorchRisk
from analysis.claim_cells import cell_values
from analysis.data import with_log_regret
from analysis.effort import effort_table

REDUCED = BotorchRisk.reduced_options("discrete")  # what the class declares, read here directly


def _frame(finals: dict[tuple[str, int], float], seconds: dict[str, float]) -> pd.DataFrame:
    """Cells (effort, seed) of botorch-risk on yacht-5-1 (discrete Z), 3 iterations, ending at
    10 ** finals, each iteration taking ``seconds[effort]`` of acquisition."""
    rows = []
    for (effort, seed), final in finals.items():
        options = json.dumps(REDUCED if effort == "reduced" else {}, sort_keys=True)
        for t in range(4):
            rows.append({"problem": "yacht-5-1", "algorithm": "botorch-risk", "alpha": 0.3, "target": "cvar",
                         "options": options, "iterations": 3, "seed": seed, "iteration": t,
                         "regret": 10.0 ** (final if t == 3 else 0.0), "optimum": 1.0,
                         "t_acq_s": seconds[effort] if t else np.nan, "t_fit_s": 0.0})
    return with_log_regret(pd.DataFrame(rows))


def test_the_reduced_effort_is_the_default_configuration_and_the_defaults_are_full_effort() -> None:
    frame = _frame({("reduced", 0): -1.0, ("full", 0): -2.0}, {"reduced": 1.0, "full": 10.0})
    cells = cell_values(frame, reduced=("botorch-risk",)).set_index("final")
    assert cells.loc[-1.0, "settings"] == "{}"
    assert json.loads(cells.loc[-2.0, "settings"]) == {"effort": "full"}
    plain = cell_values(frame).set_index("final")  # a study without a reduced effort: as before
    assert plain.loc[-2.0, "settings"] == "{}" and json.loads(plain.loc[-1.0, "settings"]) == REDUCED


def test_the_efforts_are_paired_by_seed_and_tested_as_the_claims_are() -> None:
    rng = np.random.default_rng(5)
    reduced = rng.normal(-1.0, 0.5, 8)
    d = rng.normal(-0.4, 0.3, 8)
    finals = {**{("reduced", s): v for s, v in enumerate(reduced)},
              **{("full", s): v + dv for s, (v, dv) in enumerate(zip(reduced, d, strict=True))},
              ("full", 9): -5.0}  # no reduced partner: not paired
    frame = _frame(finals, {"reduced": 2.0, "full": 30.0})
    table = effort_table(frame, cell_values(frame, reduced=("botorch-risk",)))
    row = table.iloc[0]
    assert (row["problem"], row["algorithm"], row["n_seeds"]) == ("yacht-5-1", "botorch-risk", 8)
    assert row["median_d"] == pytest.approx(np.median(d))
    assert row["p_difference"] == pytest.approx(stats.wilcoxon(d, method="exact").pvalue)
    assert row["time_ratio"] == pytest.approx(15.0)


@pytest.mark.parametrize("n, decidable", [(4, ()), (5, ("equivalence",)), (6, ("equivalence", "difference"))])
def test_the_note_says_what_the_paired_seeds_can_decide(n: int, decidable: tuple[str, ...]) -> None:
    """The smallest p an exact signed-rank test reaches on n pairs all of one sign is scipy's, here;
    the note must say a test cannot decide exactly when that p is not below 0.05."""
    frame = _frame({**{("reduced", s): -1.0 for s in range(n)}, **{("full", s): -2.0 - s for s in range(n)}},
                   {"reduced": 1.0, "full": 2.0})
    note = effort_table(frame, cell_values(frame, reduced=("botorch-risk",))).iloc[0]["note"]
    d = -1.0 - np.arange(n)
    two_sided = stats.wilcoxon(d, method="exact").pvalue
    one_sided = stats.wilcoxon(d, method="exact", alternative="less").pvalue
    assert ("difference" in decidable) == (two_sided < 0.05)
    assert ("equivalence" in decidable) == (one_sided < 0.05)
    if len(decidable) == 2:
        assert note == ""
    elif decidable == ("equivalence",):
        assert "a difference cannot" in note
    else:
        assert "no test can decide" in note


def test_options_a_study_sets_on_one_problem_are_its_default_there() -> None:
    """``fixed`` (a study's problem_options): on its problem those options are no setting, at either
    effort; on another problem the same options are a variant."""
    frame = _frame({("reduced", 0): -1.0, ("full", 0): -2.0}, {"reduced": 1.0, "full": 10.0})
    frame["options"] = frame["options"].map(lambda o: json.dumps({**json.loads(o), "w_set": 7},
                                                                 sort_keys=True))
    fixed = {"yacht-5-1": {"botorch-risk": {"w_set": 7}}}
    cells = cell_values(frame, reduced=("botorch-risk",), fixed=fixed).set_index("final")
    assert cells.loc[-1.0, "settings"] == "{}"
    assert json.loads(cells.loc[-2.0, "settings"]) == {"effort": "full"}
    elsewhere = cell_values(frame, reduced=("botorch-risk",), fixed={"hartmann6-5-1": fixed["yacht-5-1"]})
    assert json.loads(elsewhere.set_index("final").loc[-1.0, "settings"]) == {"w_set": 7}
