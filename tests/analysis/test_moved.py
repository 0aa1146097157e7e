"""``python -m analysis.moved``: the claims and sub-claims whose verdict moved between two reports, on
small claims tables written here."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from analysis.moved import ABSENT, main, moved_claims, moved_subclaims

D = "default"
COLUMNS = ["claim", "problem", "comparison", "statistic", "variant", "verdict", "n_seeds", "effect", "data"]


def subclaims(*rows: tuple) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS).astype(str)


OLD = subclaims(
    ("S1", "p", "a vs r", "final", D, "reproduced", "10", "e1", "a vs r on p: final regret"),
    ("S1", "p", "a vs r", "final", D, "inconclusive", "10", "e2", "a vs r on p: final regret of CVaR"),
    ("S2", "p", "a vs b", "time", D, "reproduced", "10", "e3", "a vs b on p: seconds"),
    ("S3", "q", "c vs r", "final", D, "not reproduced", "10", "e4", "c vs r on q: final regret of CVaR"),
)
NEW = subclaims(
    ("S1", "p", "a vs r", "final", D, "reproduced", "10", "f1", "a vs r on p: final regret"),
    ("S1", "p", "a vs r", "final", D, "not reproduced", "10", "f2", "a vs r on p: final regret of CVaR"),
    ("S2", "p", "a vs b", "time", D, "reproduced", "10", "f3", "a vs b on p: seconds"),
    ("S4", "p", "a vs h", "final", D, "inconclusive", "3", "f5", "a vs h on p: final regret of CVaR"),
)


def test_a_sub_claim_moves_by_its_label_and_occurrence_or_by_being_on_one_side_only() -> None:
    moved = moved_subclaims(OLD, NEW)
    shown = moved[["claim", "problem", "measure", "old", "new", "old_effect", "new_effect"]]
    assert shown.values.tolist() == [
        ["S1", "p", "final regret of CVaR", "inconclusive", "not reproduced", "e2", "f2"],  # the 2nd S1 row
        ["S4", "p", "final regret of CVaR", ABSENT, "inconclusive", ABSENT, "f5"],  # new only
        ["S3", "q", "final regret of CVaR", "not reproduced", ABSENT, "e4", ABSENT],  # old only
    ]
    assert moved_subclaims(OLD, OLD).empty


def test_a_claim_moves_on_either_statistic_and_an_empty_statistic_is_not_a_move() -> None:
    header = ["claim", "verdict", "verdict_last10", "sub-claims"]
    old = pd.DataFrame([["S1", "reproduced", "", "2 reproduced"], ["S2", "inconclusive", "reproduced", "x"],
                        ["S3", "reproduced", "reproduced", "y"]], columns=header)
    new = pd.DataFrame([["S1", "not reproduced", "", "1 reproduced, 1 not reproduced"],
                        ["S2", "inconclusive", "inconclusive", "z"]], columns=header)
    assert moved_claims(old, new).values.tolist() == [
        ["S1", "headline", "reproduced", "not reproduced", "1 reproduced, 1 not reproduced"],
        ["S2", "last 10", "reproduced", "inconclusive", "z"],
        ["S3", "headline", "reproduced", ABSENT, "y"], ["S3", "last 10", "reproduced", ABSENT, "y"]]


def _report(folder: Path, claims: pd.DataFrame, verdict: str) -> Path:
    folder.mkdir(parents=True)
    claims.to_csv(folder / "claims.csv", index=False)
    overall = pd.DataFrame([["S1", verdict, "", "n"]],
                           columns=["claim", "verdict", "verdict_last10", "sub-claims"])
    overall.to_csv(folder / "claims_overall.csv", index=False)
    return folder


def test_the_command_reads_report_and_results_folders_and_refuses_others(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    old = _report(tmp_path / "old", OLD, "inconclusive")
    _report(tmp_path / "run" / "_report", NEW, "not reproduced")
    assert main([str(old), str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "## Claims whose verdict moved (1)" in out
    assert "| S1 | headline | inconclusive | not reproduced |" in out
    assert "## Sub-claims whose verdict moved, or that one report lacks (3)" in out
    assert main([str(old), str(old)]) == 0 and capsys.readouterr().out.count("None.") == 2
    assert main([str(old), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{tmp_path} holds no report's claims" in err
