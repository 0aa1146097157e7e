"""Options on the command line and in grid files, read from the algorithms' declarations: bad ones are
one line and exit code 2 before anything runs; a list of values in a grid file is one cell per value
(the same cells, hash for hash, as written one by one); the cost estimate comes from the declared
models and from measured rates with the same options."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.cell import CellSpec, run_cell
from harness.estimates import declared_rate, estimate_seconds
from harness.grid import resolve_grid, smoke_options
from harness.results import spec_hash
from harness.run import main

ROOT = Path(__file__).resolve().parents[2]
CELL = ["--problem", "branin-1-1-discrete", "--algorithm"]


def _one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture, tmp_path: Path) -> str:
    out = tmp_path / "out"
    code = main([*argv, "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not out.exists()
    return err


@pytest.mark.parametrize("argv, needle", [
    ([*CELL, "rhokg-apx", "--option", "restart_per_dim=2"],
     "unknown option 'restart_per_dim' for rhokg-apx (did you mean 'restarts_per_dim'?); "
     "valid: num_fantasies"),
    ([*CELL, "random", "--option", "beta=2"], "unknown option 'beta' for random: it takes no options"),
    ([*CELL, "vucb-prob", "--option", "n_raw=true"], "n_raw must be a positive integer or null, got True"),
    ([*CELL, "vucb-prob", "--option", "beta=[1, 2]"], "beta must be 'paper', 'authors' or a positive"),
    ([*CELL, "rhokg-apx", "--option", "refine=wrost"], "did you mean 'worst'?"),
    ([*CELL, "rhokg-apx", "--option", "eta=-0.5"], "eta must be a finite number >= 0, got -0.5"),
    ([*CELL, "tests.plugins.options_plugin:Listed", "--option", "steps=9"],
     "steps must be an integer in [1, 8], got 9"),
])
def test_a_bad_option_of_one_cell_is_one_line_and_exit_2(
        argv: list[str], needle: str, capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    assert needle in _one_line_exit_2(argv, capsys, tmp_path)


def test_the_issue_s_example_from_a_real_process(tmp_path: Path) -> None:
    """Was: ``RhoKGApx.__init__() got an unexpected keyword argument 'restart_per_dim'``."""
    done = subprocess.run([sys.executable, "-m", "harness.run", *CELL, "rhokg-apx", "--option",
                           "restart_per_dim=2", "--out", str(tmp_path / "o")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and not done.stdout
    assert done.stderr.startswith("harness.run: error: unknown option 'restart_per_dim' for rhokg-apx "
                                  "(did you mean 'restarts_per_dim'?)")
    assert len(done.stderr.strip().splitlines()) == 1 and "__init__" not in done.stderr


TOP = "seeds = [0, 3]\niterations = 4\n"
HEAD = TOP + '[[cells]]\nproblems = ["branin-1-1-discrete", "hartmann-1-2-discrete"]\n'


def _grid(tmp_path: Path, text: str) -> list[CellSpec]:
    path = tmp_path / "g.toml"
    path.write_text(text)
    return list(resolve_grid(str(path)).cells)


def test_a_list_of_values_expands_into_the_product_of_cells_written_one_by_one(tmp_path: Path) -> None:
    listed = _grid(tmp_path, HEAD + 'algorithms = ["vucb-prob", "stableopt"]\n'
                   'options = { beta = ["paper", "authors", 4], n_restarts = [2, 5], maxiter = 50 }\n')
    one_by_one = TOP + "".join(
        f'[[cells]]\nproblems = ["{p}"]\nalgorithms = ["{a}"]\n'
        f'options = {{ beta = {b}, n_restarts = {r}, maxiter = 50 }}\n'
        for p in ("branin-1-1-discrete", "hartmann-1-2-discrete") for a in ("vucb-prob", "stableopt")
        for b in ('"paper"', '"authors"', 4) for r in (2, 5))
    written = _grid(tmp_path, one_by_one)
    assert len(listed) == 2 * 2 * 3 * 2 * 2  # problems x algorithms x beta x n_restarts x seeds
    assert listed == written  # same cells, in the same order
    assert [spec_hash(c) for c in listed] == [spec_hash(c) for c in written]
    assert {dict(c.options)["beta"] for c in listed} == {"paper", "authors", 4}
    assert {c.seed for c in listed} == {0, 3}


def test_a_grid_without_lists_keeps_its_cells_and_hashes(tmp_path: Path) -> None:
    cells = _grid(tmp_path, HEAD + 'algorithms = ["vucb-prob"]\noptions = { beta = "authors" }\n')
    assert cells == [CellSpec.make(p, "vucb-prob", s, 4, options={"beta": "authors"})
                     for p in ("branin-1-1-discrete", "hartmann-1-2-discrete") for s in (0, 3)]
    assert spec_hash(cells[0]) == spec_hash(CellSpec.make("branin-1-1-discrete", "vucb-prob", 0, 4, None,
                                                          {"beta": "authors"}))


def test_top_level_lists_apply_to_every_block_and_a_block_may_override_them(tmp_path: Path) -> None:
    cells = _grid(tmp_path, 'options = { beta = ["paper", "authors"] }\n' + HEAD
                  + 'algorithms = ["vucb-prob"]\n[[cells]]\nproblems = ["branin-1-1-discrete"]\n'
                  'algorithms = ["vucb-unif"]\noptions = { beta = 3 }\n')
    assert len(cells) == 2 * 2 * 2 + 2  # problems x beta x seeds, then the second block's seeds
    assert [dict(c.options)["beta"] for c in cells if c.algorithm == "vucb-unif"] == [3, 3]


def test_a_list_value_of_an_option_that_takes_lists_is_a_list_of_lists(tmp_path: Path) -> None:
    plugin = "tests.plugins.options_plugin:Listed"
    cells = _grid(tmp_path, HEAD + f'algorithms = ["{plugin}"]\n'
                  'options = { weights = [[1, 2], [3, 4]] }\n')
    assert sorted({dict(c.options)["weights"] for c in cells}) == [(1, 2), (3, 4)]
    one = _grid(tmp_path, HEAD + f'algorithms = ["{plugin}"]\noptions = {{ weights = [[1, 2]] }}\n')
    assert {dict(c.options)["weights"] for c in one} == {(1, 2)} and len(one) == 4


BAD_GRIDS = [
    ('algorithms = ["rhokg-apx"]\noptions = { restart_per_dim = [1, 2] }\n',
     "unknown option 'restart_per_dim' for rhokg-apx (did you mean 'restarts_per_dim'?)"),
    ('algorithms = ["vucb-prob"]\noptions = { beta = [] }\n', "option 'beta' lists no values"),
    ('algorithms = ["vucb-prob"]\noptions = { beta = ["paper", -1] }\n',
     "beta must be 'paper', 'authors' or a positive finite number, got -1"),
    ('algorithms = ["vucb-prob"]\noptions = { beta = [["paper"]] }\n',
     "option 'beta' of vucb-prob takes one value, not a list"),
    ('algorithms = ["vucb-prob"]\noptions = { beta = [{ a = 1 }] }\n', "option 'beta' must be a string"),
    ('algorithms = ["vucb-prob"]\noptions = { n_restarts = [1, 2.5] }\n',
     "n_restarts must be a positive integer, got 2.5"),
    ('algorithms = ["vucb-prob"]\noptions = { beta = ["paper", "paper"] }\n', "twice"),
    ('algorithms = ["tests.plugins.options_plugin:Listed"]\noptions = { weights = [1, 2] }\n',
     "takes a list: give a list of lists"),
]


@pytest.mark.parametrize("text, needle", BAD_GRIDS)
def test_a_bad_option_list_in_a_grid_file_is_one_line_and_exit_2(
        text: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(HEAD + text)
    assert needle in _one_line_exit_2(["--grid", str(path), "--dry-run"], capsys, tmp_path)


# ---------------------------------------------------------------------------------------------------
# cost


def test_the_estimate_comes_from_the_declared_model() -> None:
    cell = CellSpec.make("branin-1-1-discrete", "rhokg-apx", 0, 60)
    cheaper = CellSpec.make("branin-1-1-discrete", "rhokg-apx", 0, 60, options={"restarts_per_dim": 2})
    assert estimate_seconds(cheaper) < estimate_seconds(cell)
    assert estimate_seconds(cell) == pytest.approx(1.0 + 60 * declared_rate(cell))
    plugin = CellSpec.make("tests.plugins.toy_plugin:toy_problem", "tests.plugins.toy_plugin:Toy", 0, 4)
    assert estimate_seconds(plugin) == pytest.approx(1.0 + 4 * (0.05 + 0.45))  # declares no model
    assert estimate_seconds(CellSpec.make("no-such-problem", "no-such-algorithm", 0, 10)) > 0
    # the paper grid's estimate is within 10 % of the 10.9 CPU-hours the first publication's cells took
    # (the pinned re-run's 22.9 hours inside the cells shared the two cores with other work: the
    # reproduction page, "How it was run")
    paper = resolve_grid("paper").cells
    assert sum(estimate_seconds(c) for c in paper) / 3600 == pytest.approx(10.9, rel=0.1)


def test_the_harness_share_of_an_iteration_is_what_the_problem_declares(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """declared_rate adds the problem's overhead_seconds (0.05 s by default) to the algorithm's model;
    a problem that does not build here gets the default."""
    from dataclasses import replace

    from harness import estimates
    from problems import PROBLEMS, build_problem

    cell = CellSpec.make("branin-1-1-discrete", "random", 0, 10)
    base = declared_rate(cell)
    assert build_problem(cell.problem, with_optimum=False).overhead_seconds == 0.05
    slow = replace(build_problem(cell.problem, with_optimum=False), overhead_seconds=0.55)
    monkeypatch.setitem(PROBLEMS, cell.problem, lambda: slow)
    estimates._overhead_seconds.cache_clear()
    try:
        assert declared_rate(cell) == pytest.approx(base + 0.5)
    finally:
        estimates._overhead_seconds.cache_clear()
    unknown = CellSpec.make("no-such-problem", "random", 0, 10)
    assert declared_rate(unknown) == pytest.approx(base)


def test_measured_rates_count_for_cells_with_the_same_options_and_scale_for_others() -> None:
    full = CellSpec.make("branin-1-1-discrete", "rhokg-apx", 0)
    reduced = next(c for c in resolve_grid("quick").cells
                   if (c.problem, c.algorithm) == (full.problem, full.algorithm))
    assert dict(reduced.options) == smoke_options("rhokg-apx", False)
    measured = {(full.problem, full.algorithm, ()): 3.0}
    assert estimate_seconds(full, measured) == pytest.approx(1.0 + 3.0 * 60)
    scaled = 3.0 * declared_rate(reduced) / declared_rate(full)
    assert scaled < 1.0  # a quick-grid cell is not priced at the full effort's measured rate
    assert estimate_seconds(reduced, measured) == pytest.approx(1.0 + scaled * 60)
    measured[(reduced.problem, reduced.algorithm, reduced.options)] = 0.9
    assert estimate_seconds(reduced, measured) == pytest.approx(1.0 + 0.9 * 60)
    # a key (problem, algorithm) stands for the default options
    assert estimate_seconds(full, {(full.problem, full.algorithm): 2.0}) == pytest.approx(121.0)


def test_an_algorithm_measured_on_other_problems_is_priced_by_its_measured_factor() -> None:
    """No finished cell of (problem, algorithm): the declared rate times the geometric mean of the
    measured / declared factors of the algorithm on other problems; other algorithms do not count."""
    cell = CellSpec.make("hartmann-2-1-discrete", "botorch-risk", 0)
    on_branin = CellSpec.make("branin-1-1-discrete", "botorch-risk", 0)
    on_goldstein = CellSpec.make("goldstein-1-1-discrete", "botorch-risk", 0)
    measured = {(on_branin.problem, "botorch-risk", ()): 2.0 * declared_rate(on_branin),
                (on_goldstein.problem, "botorch-risk", ()): 8.0 * declared_rate(on_goldstein),
                (cell.problem, "random", ()): 100.0}
    # sqrt(2 * 8) = 4
    assert estimate_seconds(cell, measured) == pytest.approx(1.0 + 4.0 * declared_rate(cell) * 60)
    alone = {(cell.problem, "random", ()): 100.0}
    assert estimate_seconds(cell, alone) == pytest.approx(1.0 + declared_rate(cell) * 60)


def test_the_measured_rates_keep_the_risk_measure(tmp_path: Path) -> None:
    """A rate measured on CVaR cells prices a CVaR cell as it is, a VaR cell of the same pair scaled by the
    declared model (whose VaR search costs 2.2 times CVaR's here), and gives the same factor for another
    problem's VaR cell as for its CVaR cell (taken at the measured cells' own measure, not the priced
    cell's, which made a factor of 0.92 come out 0.43). The rates read from a folder keep each cell's
    measure; a key without one stands for the default."""
    from harness.estimates import calibration, measured_rate
    from harness.grid_cli import measured_rates
    from harness.store import write_cell

    cvar = CellSpec.make("branin-1-1-discrete", "botorch-risk", 0, risk="cvar")
    var = CellSpec.make("branin-1-1-discrete", "botorch-risk", 0)
    assert declared_rate(var) > 1.5 * declared_rate(cvar)  # else the test could not tell them apart
    measured = {(cvar.problem, cvar.algorithm, (), "cvar"): 3.0 * declared_rate(cvar)}
    assert measured_rate(cvar, measured) == pytest.approx(3.0 * declared_rate(cvar))
    assert measured_rate(var, measured) == pytest.approx(3.0 * declared_rate(var))
    for risk in ("var", "cvar"):
        other = CellSpec.make("hartmann-2-1-discrete", "botorch-risk", 0, risk=risk)
        assert calibration(other, measured) == (pytest.approx(3.0), ("branin-1-1-discrete",))
    assert measured_rate(var, {(var.problem, var.algorithm, ()): 5.0}) == 5.0  # the default measure
    cells = [CellSpec.make("branin-1-1-discrete", "random", 0, iterations=2, risk=r) for r in ("var", "cvar")]
    for spec, wall in zip(cells, (5.0, 9.0), strict=True):
        result = run_cell(spec)
        result.metadata["wall_time_s"] = wall
        write_cell(tmp_path, spec, result)
    assert measured_rates(tmp_path) == {("branin-1-1-discrete", "random", (), "var"): pytest.approx(2.0),
                                        ("branin-1-1-discrete", "random", (), "cvar"): pytest.approx(4.0)}


def test_the_measured_factor_is_taken_at_the_finished_cells_own_size_and_the_dry_run_names_it() -> None:
    """A factor measured on Branin's default cells (3 times the declared rate there) is 3 for a cell of
    10 iterations on Hartmann (2,1), not 3 x Branin's declared rate at 60 over that at 10 (the model
    grows with the data); the dry run's line gives the factor, its source and the problems it prices."""
    from harness.dry_run import Plan, calibration_lines
    from harness.estimates import calibration

    on_branin = CellSpec.make("branin-1-1-discrete", "botorch-risk", 0)
    short = CellSpec.make("hartmann-2-1-discrete", "botorch-risk", 0, iterations=10)
    measured = {(on_branin.problem, "botorch-risk", ()): 3.0 * declared_rate(on_branin)}
    assert declared_rate(CellSpec.make(on_branin.problem, "botorch-risk", 0, iterations=10)) != pytest.approx(
        declared_rate(on_branin))  # else the test could not tell the two sizes apart
    assert calibration(short, measured) == (pytest.approx(3.0), ("branin-1-1-discrete",))
    assert estimate_seconds(short, measured) == pytest.approx(1.0 + 3.0 * declared_rate(short) * 10)
    assert calibration(on_branin, measured) is None  # its own problem is measured: no factor
    plan = Plan({}, [short, on_branin], [0.0, 0.0], "", measured)
    assert calibration_lines(plan) == [
        "scaled: botorch-risk on 1 problem(s) with no finished cell of it is priced at 3.00 times its "
        "declared rate, the factor its finished cells measured on branin-1-1-discrete; the declared "
        "model's error can differ by problem"]
