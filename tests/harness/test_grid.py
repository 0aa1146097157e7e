"""Grids as data and the grid command line's input checks (no Ray: everything here fails before it)."""

import itertools
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from algorithms import ALGORITHMS
from harness.cell import CellSpec
from harness.grid import resolve_grid, smoke_grid, with_overrides
from harness.grid_cells import GridError, select, unavailable_reason
from harness.run import main
from harness.spec import RISKS
from problems import PROBLEMS, build_problem
from studies.nguyen2021.grids import cvar_grid, paper_grid

DISCRETE = ["branin-1-1-discrete", "goldstein-1-1-discrete", "hartmann-1-2-discrete",
            "hartmann-2-1-discrete"]
CONTINUOUS = [p.replace("discrete", "continuous") for p in DISCRETE]


#: Algorithms that handle one kind of Z only (StableOpt: discrete; the SAA variant: continuous).
ONLY_ON = {"stableopt": True, "vucb-prob-saa": False}


def handles(problem: str, algorithm: str) -> bool:
    discrete = build_problem(problem, with_optimum=False).z.is_discrete
    return ONLY_ON.get(algorithm, discrete) == discrete


def test_smoke_grid_is_every_registered_problem_and_algorithm_with_two_seeds() -> None:
    """... and every risk measure the algorithm optimizes (as it declares)."""
    cells = smoke_grid().cells
    expected = {(p, a, r, s) for p, a, r, s in itertools.product(PROBLEMS, ALGORITHMS, RISKS, (0, 1))
                if handles(p, a) and r in ALGORITHMS[a].risks}
    assert {(c.problem, c.algorithm, c.risk, c.seed) for c in cells} == expected
    assert {c.algorithm for c in cells if c.risk == "cvar"} == {
        "cvucb", "cvts", "rhokg-apx", "rhokg-apx-released", "botorch-risk", "rhokg-oneshot", "rahbo",
        "random"}
    assert len(cells) == len(expected)
    assert all(c.iterations is not None and 1 <= c.iterations <= 5 for c in cells)


def test_cvar_grid_is_the_readme_s_tables_and_shares_the_paper_grid_s_var_cells() -> None:
    cells = cvar_grid().cells
    problems = [*DISCRETE, "branin-1-1-continuous"]
    series = {(c.risk, c.algorithm, c.options) for c in cells}
    assert {(r, a) for r, a, _ in series} == {
        ("cvar", "cvucb"), ("cvar", "rhokg-apx"), ("cvar", "botorch-risk"), ("cvar", "random"),
        ("var", "vucb-prob"), ("var", "botorch-risk"), ("var", "random")}
    assert ("cvar", "cvucb", (("beta", "authors"),)) in series and ("cvar", "cvucb", ()) in series
    # every series on every problem with seeds 0-9 and the paper's iterations
    assert len(cells) == len(series) * len(problems) * 10 == 400
    assert {(c.problem, c.seed) for c in cells} == set(itertools.product(problems, range(10)))
    assert {c.iterations for c in cells} == {60}
    # the VaR cells of vucb-prob and random are the paper grid's (one folder can hold both grids)
    paper = {c.to_json() for c in paper_grid().cells}
    shared = [c for c in cells if c.risk == "var" and c.algorithm in ("vucb-prob", "random")]
    assert len(shared) == 100 and all(c.to_json() in paper for c in shared)


def test_sensitivity_grid_is_the_issue_s_design() -> None:
    from studies.nguyen2021.grids import SENSITIVITY_RHOKG_OPTIONS, sensitivity_grid

    cells = sensitivity_grid().cells
    assert len(cells) == len(set(cells)) == 300
    assert {c.problem for c in cells} == {"branin-1-1-discrete", "hartmann-1-2-discrete"}
    assert all(c.iterations == 60 and c.alpha is None and c.seed in range(10) for c in cells)
    configs = {(c.problem, c.algorithm, c.gp, tuple(c.options)) for c in cells}
    for problem in ("branin-1-1-discrete", "hartmann-1-2-discrete"):
        for gp in ("paper", "borisk"):
            for v in ("vucb-unif", "vucb-prob"):
                assert (problem, v, gp, ()) in configs and (problem, v, gp, (("beta", "authors"),)) in configs
            for kg in ("rhokg-apx", "rhokg-apx-released"):
                assert (problem, kg, gp, tuple(sorted(SENSITIVITY_RHOKG_OPTIONS.items()))) in configs
            assert (problem, "random", gp, ()) in configs
    # the decisive pair at full effort, and the default cells are the paper grid's
    assert ("hartmann-1-2-discrete", "rhokg-apx-released", "paper", ()) in configs
    assert ("branin-1-1-discrete", "rhokg-apx", "paper", ()) not in configs
    paper = set(paper_grid().cells)
    shared = [c for c in cells if c.gp == "paper" and not c.options and c.algorithm != "rhokg-apx-released"]
    assert shared and all(c in paper for c in shared)


def test_paper_grid_covers_every_figure_by_name() -> None:
    cells = paper_grid().cells
    triples = [(c.problem, c.algorithm, c.alpha) for c in cells]
    expected = (
        [(p, a, None) for p in DISCRETE for a in ("vucb-unif", "vucb-prob", "rhokg-apx")]
        + [(p, a, None) for p in CONTINUOUS for a in ("vucb-prob", "rhokg-apx")]
        + [("portfolio-3-2", a, None) for a in ("vucb-prob", "rhokg-apx")]
        + [("robot-push-3-2", a, None) for a in ("vucb-unif", "vucb-prob", "rhokg-apx")]
        + [(p, a, build_problem(p, with_optimum=False).z.min_mass / 2)
           for p in DISCRETE for a in ("stableopt", "vucb-unif", "vucb-prob", "random")]
        # random search, the floor, on every problem
        + [(p, "random", None) for p in (*DISCRETE, *CONTINUOUS, "portfolio-3-2", "robot-push-3-2")]
    )
    assert sorted(set(triples), key=str) == sorted(expected, key=str)
    assert all(triples.count(t) == 10 for t in expected)  # 10 seeds each, 0..9
    assert len(cells) == 510 == len(set(cells))
    for c in cells:
        assert c.seed in range(10)
        assert c.iterations == {"portfolio-3-2": 80, "robot-push-3-2": 100}.get(c.problem, 60)
        if c.alpha is not None:  # below the smallest mass: VaR is the worst case
            assert c.alpha < build_problem(c.problem, with_optimum=False).z.min_mass
    # nothing unregistered is dropped: it is listed with a reason (which names are registered
    # changes as issues land, so the expectation is computed from the registries)
    for c in cells:
        reason = unavailable_reason(c)
        assert (reason is None) == (c.problem in PROBLEMS and c.algorithm in ALGORITHMS)
        if reason:
            assert (c.problem in reason) == (c.problem not in PROBLEMS)


def test_a_planned_problem_not_yet_registered_is_listed_not_dropped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(PROBLEMS, "robot-push-3-2", raising=False)
    missing = [c for c in paper_grid().cells if unavailable_reason(c)]
    assert {(c.problem, c.algorithm) for c in missing} >= {
        ("robot-push-3-2", a) for a in ("vucb-unif", "vucb-prob", "rhokg-apx")}
    assert all("problem robot-push-3-2 not registered" in unavailable_reason(c) for c in missing
               if c.problem == "robot-push-3-2")


def test_overrides_and_selection() -> None:
    grid = with_overrides(smoke_grid(), seeds=3, iterations=1)
    pairs = sum(handles(p, a) * len(ALGORITHMS[a].risks) for p, a in itertools.product(PROBLEMS, ALGORITHMS))
    assert len(grid.cells) == pairs * 3
    assert {c.iterations for c in grid.cells} == {1} and {c.seed for c in grid.cells} == {0, 1, 2}
    chosen = select(grid.cells, "branin-1-1-discrete/vucb-*/seed1*")  # no vucb-prob-saa there
    assert {(c.algorithm, c.seed) for c in chosen} == {("vucb-prob", 1), ("vucb-unif", 1)}
    assert {c.algorithm for c in select(grid.cells, "/random/")} == {"random"}


def test_seeds_override_takes_a_count_or_a_list_as_grid_files_do(capsys: pytest.CaptureFixture) -> None:
    grid = with_overrides(paper_grid(), seeds=[0, 5, 7])
    assert {c.seed for c in grid.cells} == {0, 5, 7} and len(grid.cells) == 510 // 10 * 3
    with pytest.raises(GridError, match="seeds"):
        with_overrides(paper_grid(), seeds=[1, 1])
    assert main(["--grid", "paper", "--seeds", "2,4", "--only", "/random/", "--dry-run",
                 "--verbose", "--out", "/nonexistent/never"]) == 0
    cells = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  to run ")]
    assert cells and {line.split("/seed")[1].split()[0] for line in cells} == {"2", "4"}


def test_grid_file_expands_blocks_with_overrides(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('seeds = [0, 5]\niterations = 4\n'
                    '[[cells]]\nproblems = ["branin-1-1-discrete"]\nalgorithms = ["vucb-prob", "random"]\n'
                    '[[cells]]\nproblems = "goldstein-1-1-discrete"\nalgorithms = ["vucb-unif"]\n'
                    'seeds = 1\niterations = 2\nalpha = "below-min-mass"\noptions = { beta = "authors" }\n')
    grid = resolve_grid(str(path))
    alpha = build_problem("goldstein-1-1-discrete", with_optimum=False).z.min_mass / 2
    assert grid.name == "mine"
    assert list(grid.cells) == [
        CellSpec.make("branin-1-1-discrete", "vucb-prob", 0, 4), CellSpec.make("branin-1-1-discrete",
                                                                               "vucb-prob", 5, 4),
        CellSpec.make("branin-1-1-discrete", "random", 0, 4), CellSpec.make("branin-1-1-discrete",
                                                                            "random", 5, 4),
        CellSpec.make("goldstein-1-1-discrete", "vucb-unif", 0, 2, alpha, {"beta": "authors"}),
    ]


GOOD_BLOCK = '[[cells]]\nproblems = ["branin-1-1-discrete"]\nalgorithms = ["random"]\n'
BAD_FILES = [
    ("seeds = 2\n[[cells]\n", "not valid TOML"),
    ("sedes = 2\n" + GOOD_BLOCK, "unknown key 'sedes'"),
    ("seeds = 2\n", "[[cells]]"),
    ('[[cells]]\nproblems = ["branin-1-1-discrete"]\n', "missing key 'algorithms'"),
    ('[[cells]]\nproblems = ["brannin"]\nalgorithms = ["random"]\n', "unknown problem 'brannin'"),
    ('[[cells]]\nproblems = ["branin-1-1-discrete"]\nalgorithms = ["ucb"]\n', "unknown algorithm 'ucb'"),
    ("seeds = 0\n" + GOOD_BLOCK, "seeds"),
    ("seeds = [1, 1]\n" + GOOD_BLOCK, "seeds"),
    ("iterations = -1\n" + GOOD_BLOCK, "iterations"),
    ("alpha = 1.5\n" + GOOD_BLOCK, "alpha"),
    (GOOD_BLOCK + "options = { beta = -1 }\n", "beta"),
    (GOOD_BLOCK.replace("random", "vucb-prob") + "options = { colour = 1 }\n", "colour"),
    (GOOD_BLOCK + "colour = 1\n", "unknown key 'colour'"),
    (GOOD_BLOCK + GOOD_BLOCK, "twice"),
    ("options = 3\n" + GOOD_BLOCK, "options must be a table"),
    (GOOD_BLOCK + 'options = "x"\n', "options must be a table"),
    (GOOD_BLOCK + "options = { a = { b = 1 } }\n", "option 'a'"),
    ("cells = 3\n", "[[cells]]"),
    ("name = 5\n" + GOOD_BLOCK, "name"),
    ('[[cells]]\nproblems = []\nalgorithms = ["random"]\n', "problems"),
    ("seeds = true\n" + GOOD_BLOCK, "seeds"),
    ('alpha = "abc"\n' + GOOD_BLOCK, "alpha"),
    (GOOD_BLOCK + "iterations = 2.5\n", "iterations"),
    (GOOD_BLOCK.replace("random", "vucb-prob") + 'alpha = "below-min-mass"\nseeds = [-1]\n', "seeds"),
]


@pytest.mark.parametrize("text, needle", BAD_FILES)
def test_malformed_grid_file_is_one_line_exit_2_and_writes_nothing(
        text: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    out = tmp_path / "out"
    code = main(["--grid", str(path), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and needle in err and "Traceback" not in err, err
    assert not out.exists()


BAD_ARGS = [
    (["--grid", "papr"], "unknown grid 'papr'"),
    (["--grid", "missing.toml"], "cannot read grid file"),
    (["--grid", "smoke", "--only", "no-such-cell"], "matches no cell"),
    (["--grid", "smoke", "--seeds", "0"], "--seeds"),
    (["--grid", "smoke", "--iterations", "-1"], "--iterations"),
    (["--grid", "smoke", "--num-cpus", "0"], "--num-cpus"),
    (["--grid", "smoke", "--force", "--retry-failed"], "exclude"),
    (["--grid", "smoke", "--problem", "branin-1-1-discrete"], "unrecognized"),
    (["--grid", "smoke", "--seeds", "two"], "--seeds"),
]


@pytest.mark.parametrize("args, needle", BAD_ARGS)
def test_bad_grid_arguments_are_one_line_exit_2(args: list[str], needle: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "out"
    code = main([*args, "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and needle in err and "Traceback" not in err, err
    assert not out.exists()


def test_bad_grid_from_a_real_process_prints_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "harness.run", "--grid", "nope", "--out",
                           str(tmp_path / "o")], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "unknown grid 'nope'" in done.stderr
    assert not (tmp_path / "o").exists()


def test_unwritable_out_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("keep")
    assert main(["--grid", "smoke", "--out", str(a_file)]) == 2
    assert "--out" in capsys.readouterr().err and a_file.read_text() == "keep"


def test_list_and_dry_run(tmp_path: Path, capsys: pytest.CaptureFixture,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(PROBLEMS, "robot-push-3-2", raising=False)  # so one group is not available
    assert main(["--list"]) == 0
    listing = capsys.readouterr().out
    # by each grid's line (a description may name another grid: "the paper grid's panels")
    sizes = {line.split()[0]: line.split()[1] for line in listing.split("\n\n")[0].splitlines()[1:]}
    assert sizes["smoke"] == str(len(smoke_grid().cells))
    assert sizes["paper"] == "510"
    out = tmp_path / "never"
    assert main(["--grid", "paper", "--dry-run", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert not out.exists()
    available = sum(unavailable_reason(c) is None for c in paper_grid().cells)
    # one line per group of 10 seeds: the unavailable group's has its 10 cells as n/a
    assert "\n  to run " not in text  # no per-cell lines without --verbose
    # alpha: -
    assert re.search(r"^robot-push-3-2 +rhokg-apx +- +100 +paper +var +0 +0 +0 +10 +- *$", text, re.M)
    assert "robot-push-3-2 x rhokg-apx: 10 cells" in text
    # the alpha -> 0 study's alpha is named as grid files name it, with its value
    alpha0 = build_problem("branin-1-1-discrete", with_optimum=False).z.min_mass / 2
    assert re.search(rf"^branin-1-1-discrete +stableopt +below-min-mass \({alpha0:.4g}\) ", text, re.M)
    assert f"to run: {available} cells" in text and "CPU time" in text
    assert main(["--grid", "paper", "--dry-run", "--verbose", "--out", str(out)]) == 0
    verbose = capsys.readouterr().out
    assert verbose.count("\n  to run ") == available
    assert verbose.count("\n  not available ") == 510 - available
    assert verbose.endswith(text[text.index("\nproblem "):])  # the cells, then the same table and estimate


def test_a_second_driver_on_the_same_folder_is_refused(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "out"
    out.mkdir()
    other = subprocess.Popen(["sleep", "60"])  # a live process standing in for the first driver
    try:
        (out / "_running.lock").write_text(str(other.pid))
        code = main(["--grid", "smoke", "--only", "branin-1-1-discrete/random/seed0 T=*", "--out", str(out)])
    finally:
        other.kill()
        other.wait()
    err = capsys.readouterr().err
    assert code == 2 and f"pid {other.pid}" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in out.iterdir()) == ["_running.lock"]


def test_an_unreachable_cluster_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with socket.socket() as probe:  # a port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = tmp_path / "out"
    code = main(["--grid", "smoke", "--only", "branin-1-1-discrete/random/seed0 T=*", "--out", str(out),
                 "--address", f"127.0.0.1:{port}", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and f"127.0.0.1:{port}" in err, err
    assert not [p for p in out.rglob("*")]  # no cell, no manifest, no lock


def test_the_lock_is_judged_by_its_holders_pid_and_start_time(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture) -> None:
    from harness.procs import process_start

    out = tmp_path / "out"
    out.mkdir()
    lock = out / "_running.lock"
    host = socket.gethostname()
    run = ["--grid", "smoke", "--only", "branin-1-1-discrete/random/seed0 T=*", "--out", str(out),
           "--iterations", "0", "--no-progress"]
    # its one cell is done already: the run takes the lock without starting Ray in this process
    from harness.cell import CellSpec, run_cell
    from harness.store import write_cell

    done = CellSpec.make("branin-1-1-discrete", "random", 0, 0)
    write_cell(out, done, run_cell(done))
    other = subprocess.Popen(["sleep", "60"])
    try:
        started = process_start(other.pid)
        assert started is not None and started == process_start(other.pid)
        # the same pid, but another process started at another time: the pid was reused, stale
        lock.write_text(f"{host} {other.pid} {int(started) + 1}")
        assert main(run) == 0
        assert not lock.exists()  # taken over, then released
        # the very process that wrote it: refused
        lock.write_text(f"{host} {other.pid} {started}")
        assert main(run) == 2
        assert f"pid {other.pid}" in capsys.readouterr().err
    finally:
        other.kill()
        other.wait()
    assert lock.exists()  # a refused run leaves the holder's lock alone


def test_a_lock_held_by_another_users_process_is_not_stale(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.grid_cli as grid_cli_module

    out = tmp_path / "out"
    out.mkdir()
    (out / "_running.lock").write_text(f"{socket.gethostname()} 424242")

    def not_yours(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(grid_cli_module.os, "kill", not_yours)
    code = main(["--grid", "smoke", "--only", "branin-1-1-discrete/random/seed0 T=*", "--out", str(out),
                 "--iterations", "0", "--no-progress"])
    assert code == 2 and "pid 424242" in capsys.readouterr().err


def test_a_like_block_takes_the_settings_and_seeds_of_the_named_grid() -> None:
    """``like = "suite"``: the suite's cells (problem, measure, alpha, T, GP, seeds), written out
    again here from the suite's grid, for the block's algorithm; the measures it does not optimize
    are left out, and the block's ``problems`` and ``seeds`` narrow it."""
    from harness.grid import parse_grid

    suite = resolve_grid("suite").cells
    expected = {(c.problem, c.risk, c.alpha, c.iterations, c.gp, c.seed) for c in suite if c.kind == "bo"}
    cells = parse_grid({"cells": [{"like": "suite", "algorithms": ["random"]}]}, "mine").cells
    assert {(c.problem, c.risk, c.alpha, c.iterations, c.gp, c.seed) for c in cells} == expected
    assert {c.algorithm for c in cells} == {"random"} and len(cells) == len(expected)
    # V-UCB Prob optimizes VaR only: the suite's VaR settings (Branin-Williams)
    cells = parse_grid({"cells": [{"like": "suite", "algorithms": ["vucb-prob"]}]}, "mine").cells
    assert {(c.problem, c.risk) for c in cells} == {(p, r) for p, r, *_ in expected if r == "var"}
    narrow = parse_grid({"cells": [{"like": "suite", "algorithms": ["random"], "problems": ["yacht-5-1"],
                                    "seeds": [0, 1], "options": {}}]}, "mine").cells
    yacht_t = next(c.iterations for c in suite if c.problem == "yacht-5-1")
    assert [(c.problem, c.seed, c.iterations) for c in narrow] == [("yacht-5-1", 0, yacht_t),
                                                                    ("yacht-5-1", 1, yacht_t)]


@pytest.mark.parametrize(("block", "message"), [
    ({"like": "nope", "algorithms": ["random"]}, "like must name a grid"),
    ({"like": "suite", "algorithms": ["random"], "iterations": 5}, "'iterations' comes from grid 'suite'"),
    ({"like": "suite"}, "missing key 'algorithms'"),
    ({"like": "suite", "algorithms": ["vucb-unif"], "problems": ["yacht-5-1"]},
     "vucb-unif optimizes none of the risk measures of grid 'suite'"),
    ({"like": "suite", "algorithms": ["random"], "problems": ["branin-1-1-discrete"]}, "has no BO cell"),
])
def test_a_bad_like_block_is_one_line(block: dict, message: str) -> None:
    from harness.grid import parse_grid

    with pytest.raises(GridError, match=re.escape(message)):
        parse_grid({"cells": [block]}, "mine")
