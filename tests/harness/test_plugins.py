"""A researcher's own problem and algorithm, from a module outside the package
(``tests/plugins/toy_plugin.py``), named by import path: a cell and a two-cell grid (on Ray) through
the command line, run from the module's folder as a user would, then read back by the report. The
toy problem's VaR is known in closed form (see the module), so the stored regrets are checked
against it; a problem declaring its optimum unknown stores null regrets and the report measures it
against the best value found."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from harness.results import result_files

#: processes of their own (Ray, drivers, servers): one xdist group, one test at a time (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("processes")

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
REPO = Path(__file__).resolve().parents[2]

GRID = """seeds = 1
iterations = 3
[[cells]]
problems = ["toy_plugin:toy_problem", "toy_plugin:toy_unknown"]
algorithms = ["toy_plugin:Toy"]
"""


def _run(*args: str, cwd: Path = PLUGINS, timeout: float = 300) -> subprocess.CompletedProcess:
    """A command as a user runs it from the folder of their module (this repository first on the
    path, so that a work tree tests its own code)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _rows(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist()


@pytest.mark.slow
def test_own_problem_and_algorithm_run_as_a_cell_and_a_grid_and_reach_the_report(tmp_path: Path) -> None:
    out = tmp_path / "out"
    single = _run("-m", "harness.run", "--problem", "toy_plugin:toy_problem", "--algorithm", "vucb-prob",
                  "--iterations", "3", "--out", str(out))
    assert single.returncode == 0, single.stderr
    grid_file = tmp_path / "toy.toml"
    grid_file.write_text(GRID)
    grid = _run("-m", "harness.run", "--grid", str(grid_file), "--out", str(out), "--num-cpus", "1",
                "--no-progress")
    assert grid.returncode == 0, grid.stdout + grid.stderr
    assert "grid toy: 2 done, 0 missing, 0 failed" in grid.stdout + grid.stderr, grid.stdout + grid.stderr

    files = {(p.parent.parent.name, p.parent.name): p for p in result_files(out)}
    assert set(files) == {("toy_plugin:toy_problem", "vucb-prob"),
                          ("toy_plugin:toy_problem", "toy_plugin:Toy"),
                          ("toy_plugin:toy_unknown", "toy_plugin:Toy")}
    for key in [("toy_plugin:toy_problem", "vucb-prob"), ("toy_plugin:toy_problem", "toy_plugin:Toy")]:
        rows = _rows(files[key])
        assert [r["iteration"] for r in rows] == [0, 1, 2, 3]
        for r in rows:  # closed form: VaR_0.1(f(x, Z)) = -(x - 0.5)^2 - 1, optimum -1 at x = 0.5
            x = r["x_rec"][0]
            assert r["target"] == "var" and r["optimum"] == -1.0
            assert r["var_rec"] == pytest.approx(-((x - 0.5) ** 2) - 1.0, abs=1e-12)
            assert r["regret"] == pytest.approx((x - 0.5) ** 2, abs=1e-12)
    toy_rows = _rows(files["toy_plugin:toy_problem", "toy_plugin:Toy"])
    assert [json.loads(r["info"]) for r in toy_rows[1:]] == [{"draw": 1}, {"draw": 2}, {"draw": 3}]
    unknown = _rows(files["toy_plugin:toy_unknown", "toy_plugin:Toy"])
    assert all(r["regret"] is None and r["optimum"] is None for r in unknown)
    # the same function, seeds and algorithm as the known problem's cell, but another name: the
    # seeds derive from the name, so the runs differ; each true VaR is still the closed form
    for r in unknown:
        assert r["var_rec"] == pytest.approx(-((r["x_rec"][0] - 0.5) ** 2) - 1.0, abs=1e-12)

    report = _run("-m", "analysis.report", str(out), "--out", str(tmp_path / "report"), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "report" / "report.html").read_text()
    assert "Problems without a known optimum" in html
    assert (tmp_path / "report" / "fig_best_value.png").stat().st_size > 0
    finals = pd.read_csv(tmp_path / "report" / "final_regret.csv")
    by_problem = finals.set_index(["problem", "algorithm"])
    best = max(r["var_rec"] for r in unknown)  # the best value any recommendation reached
    assert by_problem.loc[("toy_plugin:toy_unknown", "toy_plugin:Toy"), "regret_basis"] == "best found"
    assert by_problem.loc[("toy_plugin:toy_unknown", "toy_plugin:Toy"), "regret"] == pytest.approx(
        best - unknown[-1]["var_rec"], abs=1e-12)
    assert by_problem.loc[("toy_plugin:toy_problem", "vucb-prob"), "regret_basis"] == "optimum"


@pytest.mark.slow
@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--problem", "toy_plugin:nothing", "'toy_plugin:nothing': toy_plugin has no attribute 'nothing'"),
    ("--problem", "toy_plugin:not_a_problem", "is of type int, not a problems.Problem"),
    ("--problem", "no_such_module:f", "no module named 'no_such_module' on the Python path"),
    ("--problem", "toy plugin:f", "is not an import path MODULE:ATTR"),
    ("--algorithm", "toy_plugin:toy_problem", "is of type function, not a subclass of algorithms"),
    ("--algorithm", "toy_plugin:NoName", "sets no class attribute name (e.g. name = 'noname')"),
])
def test_a_bad_import_path_is_one_line_and_exit_2(tmp_path: Path, flag: str, value: str,
                                                  message: str) -> None:
    args = {"--problem": "toy_plugin:toy_problem", "--algorithm": "toy_plugin:Toy", flag: value}
    out = tmp_path / "out"
    single = _run("-m", "harness.run", *[a for kv in args.items() for a in kv], "--out", str(out))
    assert single.returncode == 2 and single.stderr.count("\n") == 1, single.stderr
    assert message in single.stderr
    key = "problems" if flag == "--problem" else "algorithms"
    grid = GRID.replace(f'{key} = [', f'{key} = ["{value}", ', 1)
    (tmp_path / "bad.toml").write_text(grid)
    from_grid = _run("-m", "harness.run", "--grid", str(tmp_path / "bad.toml"), "--out", str(out))
    assert from_grid.returncode == 2 and from_grid.stderr.count("\n") == 1, from_grid.stderr
    assert message in from_grid.stderr
    assert not out.exists()


def test_an_algorithm_that_does_not_handle_the_problems_z_is_refused_before_any_work(tmp_path: Path) -> None:
    result = _run("-m", "harness.run", "--problem", "branin-1-1-continuous", "--algorithm", "toy_plugin:Toy",
                  "--out", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == ("harness.run: error: algorithm 'toy_plugin:Toy' handles a discrete Z "
                                     "only; problem 'branin-1-1-continuous' has a continuous one")


def test_the_optimum_of_an_own_problem_is_searched_on_request() -> None:
    found = _run("-m", "problems", "--search-optimum", "toy_plugin:toy_problem", "--points", "256")
    assert found.returncode == 0, found.stderr
    entry = json.loads(found.stdout.split("\n# declare it")[0])
    assert entry["var"]["value"] == pytest.approx(-1.0, abs=1e-12)  # the closed form's maximum
    assert entry["var"]["argmax"][0] == pytest.approx(0.5, abs=1e-6)
    assert entry["lower_bound"] is True and "Optimum(var=" in found.stdout
    bad = _run("-m", "problems", "--search-optimum", "toy_plugin:missing")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr


LIKE_SUITE = """[[cells]]
like = "suite"
algorithms = [{algorithms}]
problems = ["yacht-5-1"]
seeds = [0, 1]
"""


@pytest.mark.slow
@pytest.mark.xdist_group("untimed")  # with the module's: a unit of its own (it times nothing)
def test_an_own_method_is_compared_with_published_rows_without_rerunning_them(tmp_path: Path) -> None:
    """The documented path of ``docs/how-to/compare-with-suite.md`` on one problem and two seeds: a
    stand-in publication (the suite grid's random-search cells of yacht, seeds 0-1), the toy
    method's cells from a ``like = "suite"`` grid, and the report of the toy's folder ``--with``
    the publication: the suite's study (from the publication's grid) decides its claims on both
    folders' rows, nothing of the publication is run again, and the toy's run checks itself against
    the publication through its own random-search cells (about 80 s: two Ray grids of two and four
    20-iteration cells and a report)."""
    published, mine = tmp_path / "published", tmp_path / "mine"
    grid_file = tmp_path / "mine.toml"
    grid_file.write_text(LIKE_SUITE.format(algorithms='"toy_plugin:SuiteToy", "random"'))
    # 20 of the suite's 60 iterations on both sides, as a user shortens a trial run: the same specs
    # on both sides, so the random-search cells still match (about 40 s less of cells)
    for args in (("--grid", "suite", "--only", "yacht-5-1/random/seed[01]*", "--out", str(published)),
                 ("--grid", str(grid_file), "--out", str(mine))):
        run = _run("-m", "harness.run", *args, "--iterations", "20", "--num-cpus", "1", "--no-progress")
        assert run.returncode == 0, run.stdout + run.stderr
    before = {p: p.stat().st_mtime_ns for p in result_files(published)}
    assert {p.parent.name for p in result_files(mine)} == {"toy_plugin:SuiteToy", "random"}
    report = _run("-m", "analysis.report", str(mine), "--with", str(published), "--out", str(tmp_path / "r"),
                  cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert {p: p.stat().st_mtime_ns for p in result_files(published)} == before
    finals = pd.read_csv(tmp_path / "r" / "final_regret.csv")
    assert sorted(set(finals["algorithm"])) == ["random", "toy_plugin:SuiteToy"]
    assert sorted(finals["seed"]) == [0, 0, 1, 1]
    pairs = pd.read_csv(tmp_path / "r" / "across_pairs.csv")  # the suite study asks for these views
    assert {frozenset((a, b)) for a, b in zip(pairs["a"], pairs["b"], strict=True)} == {
        frozenset(("random", "toy_plugin:SuiteToy"))}
    claims = pd.read_csv(tmp_path / "r" / "claims.csv")
    assert set(claims["claim"]) >= {"S1", "S3", "S4"}  # the suite's claims, not run on this data
    html = (tmp_path / "r" / "report.html").read_text()
    # the check the how-to adds random search for: its cells are in both folders, and identical
    assert "The runs compared" in html and "2 of them have identical rows" in html
    shared = pd.read_csv(tmp_path / "r" / "across_runs.csv")
    assert len(shared) == 2 and shared["identical"].all()


def test_a_dry_run_says_which_estimates_are_a_guess(tmp_path: Path) -> None:
    """A plug-in without a cost model (the toy: no ``iteration_seconds``) is priced at the default
    and the dry run says so, with how to declare one; a registered method (random search declares
    one) gets no such line."""
    grid = tmp_path / "g.toml"
    grid.write_text("seeds = 1\niterations = 3\n[[cells]]\nproblems = [\"toy_plugin:toy_problem\"]\n"
                    "algorithms = [\"toy_plugin:Toy\", \"random\"]\n")
    done = _run("-m", "harness.run", "--grid", str(grid), "--out", str(tmp_path / "out"), "--dry-run")
    assert done.returncode == 0, done.stderr
    guesses = [line for line in done.stdout.splitlines() if line.startswith("guess: ")]
    assert len(guesses) == 1
    assert guesses[0].startswith("guess: toy_plugin:Toy (1 cells) declares no cost model")
    assert "iteration_seconds" in guesses[0] and "docs/how-to/own-algorithm.md" in guesses[0]
