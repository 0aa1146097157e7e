"""The risk measure as an axis of a cell: VaR cells keep their identity, CVaR cells are scored on the
true CVaR, and every way of asking for a risk measure an algorithm does not optimize is one line
and exit 2 before any work."""

import hashlib
import json
from pathlib import Path

import pytest
import torch

from algorithms import ALGORITHMS
from harness.cell import CellSpec, run_cell
from harness.frames import read_results
from harness.grid import parse_grid, with_overrides
from harness.grid_cells import GridError
from harness.results import spec_hash
from harness.run import main
from harness.store import write_cell
from problems import build_problem
from studies.nguyen2021.grids import paper_grid


def test_var_cells_keep_their_hash() -> None:
    """The hash of a VaR cell is that of its spec as written before risk measures existed: the
    canonical JSON of its fields without ``risk`` (written out here by hand)."""
    spec = CellSpec.make("branin-1-1-discrete", "vucb-prob", 3, 60, options={"beta": "authors"})
    before = {"alpha": None, "algorithm": "vucb-prob", "iterations": 60, "options": [["beta", "authors"]],
              "problem": "branin-1-1-discrete", "seed": 3}
    text = json.dumps(before, sort_keys=True, separators=(",", ":"))
    assert spec.to_json() == text
    assert spec_hash(spec) == hashlib.sha256(text.encode()).hexdigest()[:12]
    cvar = CellSpec.make("branin-1-1-discrete", "random", 3, 60, risk="cvar")
    assert json.loads(cvar.to_json())["risk"] == "cvar" and spec_hash(cvar) != spec_hash(
        CellSpec.make("branin-1-1-discrete", "random", 3, 60))


def test_a_cvar_cell_is_scored_on_the_true_cvar(tmp_path: Path) -> None:
    spec = CellSpec.make("hartmann-1-2-discrete", "cvucb", 1, 4, risk="cvar")
    result = run_cell(spec)
    problem = build_problem("hartmann-1-2-discrete")
    masses = problem.z.masses
    for row in result.rows:
        x = torch.tensor([row["x_rec"]], dtype=torch.float64)
        values = problem.support_values(x)[0]
        # the definition, written out: sorted values, each weighing its mass's share of [0, alpha]
        order = torch.argsort(values)
        upper = torch.clamp(torch.cumsum(masses[order], 0), max=problem.alpha)
        share = torch.diff(upper, prepend=torch.zeros(1, dtype=torch.float64))
        truth = float((values[order] * share).sum() / problem.alpha)
        assert row["target"] == "cvar" and row["cvar_rec"] == pytest.approx(truth, abs=1e-12)
        assert row["regret"] == pytest.approx(problem.optimum.cvar - truth, abs=1e-12)
        assert row["regret"] >= -1e-12
    assert result.metadata["target"] == "cvar" and result.metadata["optimum"]["cvar"] == problem.optimum.cvar
    write_cell(tmp_path, spec, result)
    frame = read_results(tmp_path)
    assert set(frame["risk"]) == {"cvar"} and frame["cvar_rec"].notna().all()


def test_a_var_cell_has_no_cvar_column_value() -> None:
    result = run_cell(CellSpec.make("branin-1-1-discrete", "random", 0, 2))
    assert all(r["cvar_rec"] is None and r["target"] == "var" for r in result.rows)
    assert "cvar" not in result.metadata["optimum"]


@pytest.mark.parametrize("argv,words", [
    (["--problem", "branin-1-1-discrete", "--algorithm", "vucb-prob", "--risk", "cvar"],
     "optimizes var only"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "cvucb"], "optimizes cvar only"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "random", "--risk", "es"], "--risk"),
])
def test_a_risk_measure_the_algorithm_does_not_optimize_is_one_line_and_exit_2(
        argv: list[str], words: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code = main([*argv, "--iterations", "1", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


def test_grid_files_take_a_risk_key_and_refuse_what_cannot_run() -> None:
    good = parse_grid({"seeds": 2, "iterations": 3, "risk": "cvar",
                       "cells": [{"problems": ["branin-1-1-discrete"], "algorithms": ["cvucb", "random"]},
                                 {"problems": ["branin-1-1-discrete"], "algorithms": ["vucb-prob"],
                                  "risk": "var"}]}, "g")
    assert {(c.algorithm, c.risk) for c in good.cells} == {("cvucb", "cvar"), ("random", "cvar"),
                                                           ("vucb-prob", "var")}
    with pytest.raises(GridError, match="optimizes var only"):
        parse_grid({"risk": "cvar", "cells": [{"problems": ["branin-1-1-discrete"],
                                               "algorithms": ["vucb-unif"]}]}, "g")
    with pytest.raises(GridError, match="risk must be one of"):
        parse_grid({"cells": [{"problems": ["branin-1-1-discrete"], "algorithms": ["random"],
                               "risk": "CVaR"}]}, "g")


def test_risk_override_keeps_the_cells_that_can_and_says_what_it_left_out() -> None:
    grid = with_overrides(paper_grid(), risk="cvar")
    assert grid.cells and all(c.risk == "cvar" for c in grid.cells)
    assert all("cvar" in ALGORITHMS[c.algorithm].risks for c in grid.cells)
    assert {c.algorithm for c in grid.cells} == {"rhokg-apx", "random"}
    assert "left out" in grid.description and "vucb-prob" in grid.description
    assert "(which do not optimize cvar)" in grid.description
    # the measure named is the one asked for, not VaR's (it said "(VaR only)" for --risk mean too)
    dropped = {c.algorithm for c in paper_grid().cells if "mean" not in ALGORITHMS[c.algorithm].risks}
    mean = with_overrides(paper_grid(), risk="mean").description
    assert "(which do not optimize mean)" in mean and all(a in mean for a in dropped)
    # every cell that could optimize CVaR is there, with its seeds
    assert len(grid.cells) == sum("cvar" in ALGORITHMS[c.algorithm].risks for c in paper_grid().cells)


@pytest.mark.parametrize(("algorithm", "options"), [
    ("random", None),
    ("botorch-risk", {"num_fantasies": 2, "num_restarts": 1, "raw_samples": 8, "inner_samples": 16,
                      "maxiter": 10, "n_w": 10, "n_w_rec": 20}),
])
def test_a_mean_cell_is_scored_on_the_true_expectation(algorithm: str, options: dict | None,
                                                       tmp_path: Path) -> None:
    """``--risk mean``: the risk-neutral expectation, optimized by random search and by BoTorch's own
    ``Expectation``; the truth written out here as the mass-weighted sum over the support."""
    spec = CellSpec.make("goldstein-1-1-discrete", algorithm, 0, 3, options=options, risk="mean")
    result = run_cell(spec)
    problem = build_problem("goldstein-1-1-discrete")
    for row in result.rows:
        x = torch.tensor([row["x_rec"]], dtype=torch.float64)
        truth = sum(float(m) * float(v) for m, v in zip(problem.z.masses, problem.support_values(x)[0],
                                                           strict=True))
        assert row["target"] == "mean" and row["mean_rec"] == pytest.approx(truth, abs=1e-12)
        assert row["regret"] == pytest.approx(problem.optimum.mean - truth, abs=1e-12)
        assert row["regret"] >= -1e-12 and row["cvar_rec"] is None
    assert result.metadata["optimum"]["mean"] == problem.optimum.mean
    write_cell(tmp_path, spec, result)
    assert set(read_results(tmp_path)["risk"]) == {"mean"}


def test_the_smoke_grid_has_every_algorithm_that_optimizes_the_mean() -> None:
    from harness.grid import smoke_grid

    mean = {(c.problem, c.algorithm) for c in smoke_grid().cells if c.risk == "mean"}
    assert {a for _, a in mean} == {a for a, f in ALGORITHMS.items() if "mean" in f.risks} == {
        "random", "botorch-risk", "rhokg-oneshot", "rahbo"}
    assert {p for p, _ in mean} >= {"branin-1-1-discrete", "branin-1-1-continuous", "portfolio-3-2"}


def test_risk_mean_on_the_command_line_is_refused_for_an_algorithm_without_it(
        capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    assert main(["--problem", "branin-1-1-discrete", "--algorithm", "vucb-prob", "--risk", "mean",
                 "--iterations", "1", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "optimizes var only, not mean" in err
