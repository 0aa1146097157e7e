"""``analysis.recheck``: the statistical agreement of a rerun with a publication, decided on the
published paper folder with reruns made from its own rows (shifted where a test needs them to be
another draw)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.recheck import compare, main
from analysis.report import read_frame, results_study

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "docs" / "reproduction" / "paper"
PROBLEM = "hartmann-1-2-discrete"


@pytest.fixture(scope="module")
def published() -> pd.DataFrame:
    return read_frame(PAPER)[0]


def cells(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of C3's default cells on :data:`PROBLEM` (V-UCB Prob and Unif, every seed)."""
    return frame.loc[(frame["problem"] == PROBLEM) & frame["algorithm"].isin(["vucb-prob", "vucb-unif"])
                     & (frame["options"] == "{}") & (frame["alpha"] == frame.loc[
                         frame["problem"] == PROBLEM, "alpha"].max())]


def band(finals: np.ndarray) -> tuple[float, float]:
    """The 70 % two-sided t band of the mean, written again here."""
    n = len(finals)
    half = stats.t.ppf(0.85, n - 1) * finals.std(ddof=1) / np.sqrt(n)
    return finals.mean() - half, finals.mean() + half


def shifted(rows: pd.DataFrame, algorithm: str, by: float) -> pd.DataFrame:
    out = rows.copy()
    out.loc[out["algorithm"] == algorithm, "log10_regret"] += by
    return out


def check(published: pd.DataFrame, rerun: pd.DataFrame) -> tuple[bool, list[str]]:
    study = results_study(PAPER)
    claim = next(c for c in study.claims if c.id == "C3")
    return compare(published, rerun, set(cells(published)["spec_hash"]), study, claim, PROBLEM)


def test_the_publication_agrees_with_itself(published: pd.DataFrame) -> None:
    agrees, lines = check(published, cells(published))
    assert agrees and lines[0].startswith("vucb-prob vs vucb-unif (final): published ")
    assert lines[0].split("published ")[1].split(" (")[0] == lines[0].split("rerun ")[1].split(" (")[0]


def test_a_mean_outside_the_published_band_disagrees(published: pd.DataFrame) -> None:
    rows = cells(published)
    last = rows["iteration"] == rows.groupby("spec_hash")["iteration"].transform("max")
    finals = rows.loc[last & (rows["algorithm"] == "vucb-unif"), "log10_regret"].to_numpy()
    lower, _ = band(finals)  # shifted down, to the better side: the verdict (Prob beats Unif) stays
    inside, _ = check(published, shifted(rows, "vucb-unif", 0.9 * (lower - finals.mean())))
    outside, lines = check(published, shifted(rows, "vucb-unif", 1.1 * (lower - finals.mean())))
    assert inside and not outside
    assert any(line.startswith("vucb-unif") and "OUTSIDE" in line for line in lines)


def test_a_changed_verdict_disagrees(published: pd.DataFrame) -> None:
    """V-UCB Prob made 3 log10 units worse on every seed: V-UCB Unif is then significantly lower,
    which is not the published verdict (and the mean leaves its band too)."""
    agrees, lines = check(published, shifted(cells(published), "vucb-prob", 3.0))
    assert not agrees and "rerun not reproduced" in lines[0]


def claim_check(published: pd.DataFrame, claim_id: str, problem: str,
                change=lambda rows: rows, folder: Path = PAPER) -> tuple[bool, list[str]]:
    """``compare`` for every sub-claim of ``claim_id`` on ``problem``, the rerun being the published
    rows of the cells ``chosen_cells`` picks in ``folder``, passed through ``change``."""
    from analysis.recheck import _claim, chosen_cells
    from harness.results import spec_hash

    study = results_study(folder)
    claim, comparisons = _claim(study, claim_id, problem)
    hashes = {spec_hash(spec) for spec, _ in chosen_cells(folder, study, comparisons, problem)}
    return compare(published, change(published.loc[published["spec_hash"].isin(hashes)]), hashes,
                   study, claim, problem)


def test_every_pair_a_claim_compares_on_the_problem_is_checked(published: pd.DataFrame) -> None:
    """C6 compares three pairs on robot pushing (each V-UCB against rho-KG^apx, and the two V-UCBs):
    every verdict is checked, and changing one series changes the verdicts of its pairs."""
    agrees, lines = claim_check(published, "C6", "robot-push-3-2")
    assert agrees
    assert [line.split(" (")[0] for line in lines[:3]] == [
        "vucb-unif vs rhokg-apx", "vucb-prob vs rhokg-apx", "vucb-unif vs vucb-prob"]
    agrees, lines = claim_check(published, "C6", "robot-push-3-2",
                                lambda rows: shifted(rows, "vucb-prob", -3.0))
    verdicts = [(line.split("published ")[1].split(" (")[0], line.split("rerun ")[1].split(" (")[0])
                for line in lines[:3]]
    assert not agrees and verdicts[0][0] == verdicts[0][1] and verdicts[1][0] != verdicts[1][1]


def test_claims_on_queries_and_times_are_checked_on_their_own_statistic(published: pd.DataFrame) -> None:
    """C7 (the queries of V-UCB at alpha below the smallest mass and StableOpt's) and C8 (times) are
    decided on the rerun too: the publication agrees with itself, and a rerun whose queries or times
    moved does not."""
    agrees, lines = claim_check(published, "C7", "branin-1-1-discrete")
    assert agrees and "(queries)" in lines[0]

    def moved_queries(rows: pd.DataFrame) -> pd.DataFrame:
        out = rows.copy()
        unif = out["algorithm"] == "vucb-unif"
        out.loc[unif, "x"] = out.loc[unif, "x"].map(lambda x: [v + 0.01 for v in x] if len(x) else x)
        return out

    agrees, _ = claim_check(published, "C7", "branin-1-1-discrete", moved_queries)
    assert not agrees
    agrees, lines = claim_check(published, "C8", "branin-1-1-continuous")
    assert agrees and "(time)" in lines[0]

    def slower(rows: pd.DataFrame) -> pd.DataFrame:
        out = rows.copy()
        out.loc[out["algorithm"] == "vucb-prob", "t_acq_s"] /= 100.0  # V-UCB far cheaper: C8 then holds
        return out

    agrees, _ = claim_check(published, "C8", "branin-1-1-continuous", slower)
    assert not agrees


def test_the_cells_are_the_studys_configuration_on_the_claims_measure() -> None:
    """On the suite (its claims compare CVaR regrets; rho-KG^apx and the one-shot KGs ran at the
    reduced effort the study declares), the cells picked are the study's configuration on the
    sub-claim's risk measure, never the other measure's cells of the same algorithms."""
    from analysis.recheck import _claim, chosen_cells

    suite = ROOT / "docs" / "reproduction" / "suite"
    study = results_study(suite)
    _, comparisons = _claim(study, "S4", "branin-williams-2-2")
    picked = [spec for spec, _ in chosen_cells(suite, study, comparisons, "branin-williams-2-2")]
    assert {s.risk for s in picked} == {"var", "cvar"}  # S4 compares both measures there
    for spec in picked:
        assert spec.algorithm in {"vucb-prob", "cvucb", "cvts", "rhokg-apx", "rhokg-oneshot",
                                  "botorch-risk", "rahbo"}
        if spec.algorithm in study.reduced_effort:
            assert dict(spec.options)  # their reduced options are the study's configuration
    _, comparisons = _claim(study, "S3", "yacht-5-1")
    picked = [spec for spec, _ in chosen_cells(suite, study, comparisons, "yacht-5-1")]
    assert {s.algorithm for s in picked} == {"cvucb", "cvts", "random"} and len(picked) == 30


def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture) -> None:
    for argv, text in ((["--claim", "C12", "--problem", PROBLEM], "no claim 'C12'"),
                       (["--claim", "C3", "--problem", "nowhere"], "no sub-claim on 'nowhere'"),
                       (["--claim", "C3", "--problem", PROBLEM, "--jobs", "0"], "--jobs must be >= 1")):
        assert main([str(PAPER), *argv, "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and text in err, err


def test_the_dry_run_prints_the_cells_and_their_published_cost(published: pd.DataFrame,
                                                               capsys: pytest.CaptureFixture) -> None:
    """20 cells: V-UCB Prob and Unif, seeds 0-9; their cost is the sum of their rows' recorded times,
    summed again here from the published rows."""
    assert main([str(PAPER), "--claim", "C3", "--problem", PROBLEM, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"C3 on {PROBLEM}: vucb-prob, vucb-unif, 20 cells (seeds 0-9)")
    rows = cells(published)
    seconds = rows[["t_fit_s", "t_acq_s", "t_rec_s", "t_eval_s"]].fillna(0.0).to_numpy().sum()
    shown = out.split("they took ")[1].split(" of CPU")[0]
    assert shown == (f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min")


def test_without_a_claim_the_claims_on_the_problem_are_listed(capsys: pytest.CaptureFixture) -> None:
    """The command verify's last line gives on a CPU the pin does not cover: the study's claims with
    a comparison on the problem (each claim's comparisons read here again), nothing run."""
    from studies.nguyen2021.study import STUDY

    def on(k: object) -> bool:
        return PROBLEM in k.problems or (not k.problems and k.kind == "cheaper")

    expected = [c.id for c in STUDY.claims if any(on(k) for k in c.comparisons)]
    assert expected and len(expected) < len(STUDY.claims)
    assert main([str(PAPER), "--problem", PROBLEM]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"--claim ID --problem {PROBLEM}" in lines[0]
    assert [line.split(":")[0].strip() for line in lines[1:]] == expected
    assert main([str(PAPER), "--problem", "nowhere"]) == 2
    assert "no problem 'nowhere'" in capsys.readouterr().err


SUITE = ROOT / "docs" / "reproduction" / "suite"


@pytest.fixture(scope="module")
def suite() -> pd.DataFrame:
    return read_frame(SUITE)[0]


@pytest.mark.parametrize(("claim_id", "problem", "pairs", "worse"), [
    # S1 on Branin-Williams: the two rho-KGs against random search, on VaR and on CVaR
    ("S1", "branin-williams-2-2", 4, "rhokg-apx"),
    # S3 on the yacht: CV-UCB and CV-TS against random search
    ("S3", "yacht-5-1", 2, "cvts"),
    # S4 on f6: every method that chooses z against RAHBO (CVaR)
    ("S4", "marzat-f6-4-3", 5, "cvucb"),
    # S5 on Branin-Williams: the one-shot rho-KG on par with rho-KG^apx, VaR and CVaR
    ("S5", "branin-williams-2-2", 2, "rhokg-oneshot"),
])
def test_the_suites_claims_recheck_pair_by_pair(suite: pd.DataFrame, claim_id: str, problem: str,
                                                pairs: int, worse: str) -> None:
    """The suite's claims compare several pairs on one problem, and S5 ran at the study's declared
    configuration: each is rechecked on its own rows (it agrees, one line per pair: the count of the
    pairs the study's comparisons make there, counted by hand above), and one method made 3 log10
    units worse on every seed is no longer what was published."""
    agrees, lines = claim_check(suite, claim_id, problem, folder=SUITE)
    verdicts = [line for line in lines if " vs " in line and "published " in line]
    assert agrees, "\n".join(lines)
    assert len(verdicts) == pairs, "\n".join(lines)
    agrees, lines = claim_check(suite, claim_id, problem, lambda rows: shifted(rows, worse, 3.0),
                                folder=SUITE)
    assert not agrees, "\n".join(lines)
