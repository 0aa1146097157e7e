"""The grid's ETA (harness.progress.Eta) on timelines whose remaining time is known by construction,
and the running cells' iterations as harness.status shows them."""

import pytest

from harness.cell import CellSpec
from harness.progress import Eta


def _cells(n: int) -> list[CellSpec]:
    return [CellSpec.make("branin-1-1-discrete", "vucb-prob", seed=s) for s in range(n)]


def test_exact_costs_give_the_exact_remaining_time_and_it_falls_while_cells_run() -> None:
    a, b, c, d = _cells(4)
    eta = Eta(dict.fromkeys((a, b, c, d), 10.0))
    assert eta.seconds(0.0, cpus=2) == pytest.approx(20.0)  # 40 s of work on 2 CPUs
    eta.running([a, b], 0.0)
    # no cell finishes between t = 0 and 9: the ETA falls by one second a second (never grows)
    assert [eta.seconds(t, 2) for t in (1.0, 4.0, 9.0)] == pytest.approx([19.0, 16.0, 11.0])
    eta.finished(a, 10.0)
    eta.finished(b, 10.0)
    eta.running([c, d], 10.0)
    assert eta.seconds(13.0, 2) == pytest.approx(7.0)


def test_finished_cells_calibrate_the_cost_model() -> None:
    a, b, c, d = _cells(4)
    eta = Eta(dict.fromkeys((a, b, c, d), 10.0))
    eta.running([a, b], 0.0)
    eta.finished(a, 20.0)  # the cells take twice their estimate
    eta.finished(b, 20.0)
    assert eta.seconds(20.0, 2) == pytest.approx(20.0)  # two cells of 20 s on 2 CPUs
    eta.running([c, d], 20.0)
    assert eta.seconds(25.0, 2) == pytest.approx(15.0)


def test_the_last_cell_is_not_shared_by_idle_cpus_and_a_requeued_cell_starts_over() -> None:
    a, b = _cells(2)
    eta = Eta({a: 30.0, b: 1.0})
    eta.running([a, b], 0.0)
    eta.finished(b, 1.0)
    assert eta.seconds(10.0, 2) == pytest.approx(20.0)  # one 30 s cell, 10 s in: not (20 / 2)
    eta.requeued(a)  # its worker died; it reruns (from a checkpoint, which the ETA ignores)
    assert eta.seconds(10.0, 2) == pytest.approx(30.0)
    eta.finished(a, 30.0)
    assert eta.seconds(40.0, 2) == 0.0


def test_running_cells_iterations_calibrate_and_shorten_the_estimate() -> None:
    """Two 10 s cells that run at half speed (20 s each): after 10 s each has done half of its
    iterations, so the cost model doubles and 10 s of each are left (not the 0 s that cost - elapsed
    gives)."""
    a, b = _cells(2)
    eta = Eta(dict.fromkeys((a, b), 10.0))
    eta.running([a, b], 0.0)
    assert eta.seconds(10.0, 2) == pytest.approx(0.0)  # no iteration reported: cost - elapsed
    eta.progress(a, 0.5)
    eta.progress(b, 0.5)
    assert eta.seconds(10.0, 2) == pytest.approx(10.0)
    eta.progress(a, 0.75)
    eta.progress(b, 0.75)
    assert eta.seconds(15.0, 2) == pytest.approx(5.0)


def test_a_resumed_cell_counts_only_the_iterations_it_ran_here() -> None:
    """A cell resumed at half its iterations that runs at its estimated speed: 5 s for the last half
    of a 10 s cell, whatever it had done before."""
    (a,) = _cells(1)
    eta = Eta({a: 10.0})
    eta.resumes(a, 0.5)
    eta.running([a], 0.0)
    assert eta.seconds(0.0, 1) == pytest.approx(5.0)
    eta.progress(a, 0.75)
    assert eta.seconds(2.5, 1) == pytest.approx(2.5)  # 2.5 s for a quarter: the estimate's speed


def test_status_lists_the_running_cells_and_says_when_the_record_is_stale(
        tmp_path, capsys: pytest.CaptureFixture) -> None:
    import json
    import time

    from harness.status import STALE_PROGRESS_S, main, running_lines
    from harness.store import clear_progress, write_progress

    assert running_lines(tmp_path) == []  # no grid writing here
    write_progress(tmp_path, [{"cell": "robot-push-3-2/rhokg-apx/seed0", "iteration": 10, "iterations": 100,
                               "seconds": 95.0},
                              {"cell": "portfolio-3-2/vucb-prob/seed1", "iteration": None, "iterations": 80,
                               "seconds": 1.0}])
    updated = json.loads((tmp_path / "_progress.json").read_text())["updated"]
    lines = running_lines(tmp_path, now=updated + 12)
    assert lines[0].startswith("running (2 cells, as of 12 s ago") and "stale" not in lines[0]
    assert lines[1].split() == ["robot-push-3-2/rhokg-apx/seed0", "it", "10/100", "(95", "s)"]
    assert lines[2].split()[:3] == ["portfolio-3-2/vucb-prob/seed1", "it", "?/80"]
    assert "stale" in running_lines(tmp_path, now=updated + STALE_PROGRESS_S + 1)[0]
    assert main([str(tmp_path)]) == 0
    assert "robot-push-3-2/rhokg-apx/seed0  it 10/100" in capsys.readouterr().out
    assert time.time() - updated < 60
    clear_progress(tmp_path)
    assert running_lines(tmp_path) == []


def test_the_eta_says_its_units() -> None:
    from harness.progress import format_eta

    assert format_eta(45.2) == "45 s"
    assert format_eta(7 * 60 + 30) == "7 min 30 s"
    assert format_eta(2 * 3600 + 5 * 60 + 59) == "2 h 05 min"
    assert format_eta(float("nan")) == "?" and format_eta(float("inf")) == "?"


def test_status_says_what_the_missing_cells_will_cost(tmp_path, capsys: pytest.CaptureFixture) -> None:
    """A missing cell costs a fixed second plus its iterations at the rate measured on the finished
    cells of its (problem, algorithm, options): one that took 61 s for 4 iterations gives 15 s an
    iteration, so its two missing seeds cost 2 x (1 + 4 x 15) = 122 s; with no finished cell, status
    says the cost model is the basis."""
    from harness.cell import run_cell
    from harness.status import main
    from harness.store import write_cell, write_manifest

    specs = [CellSpec.make("branin-1-1-discrete", "random", seed=s, iterations=4) for s in range(3)]
    write_manifest(tmp_path / "none", "mine", specs)
    assert main([str(tmp_path / "none")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("remaining:"))
    assert line.startswith("remaining: 3 cells, about ") and "(estimate from the cost model;" in line
    result = run_cell(specs[0])
    result.metadata["wall_time_s"] = 61.0
    write_cell(tmp_path / "some", specs[0], result)
    write_manifest(tmp_path / "some", "mine", specs)
    assert main([str(tmp_path / "some")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("remaining:"))
    assert line.startswith("remaining: 2 cells, about 2.0 min of CPU time (estimate from the finished cells'")
    # "mine" is no named grid (it came from a file): the command asks for the grid's file
    assert (f"--grid GRID_FILE --out {tmp_path / 'some'} --dry-run, GRID_FILE the file that defines "
            "grid 'mine'") in line


def test_status_names_the_cells_resumed_from_a_checkpoint(tmp_path, capsys: pytest.CaptureFixture) -> None:
    """Of three done cells, the one whose provenance records a resume point is named; a folder with
    none resumed prints no such line."""
    from harness.cell import run_cell
    from harness.status import main
    from harness.store import provenance, write_cell, write_manifest

    specs = [CellSpec.make("branin-1-1-discrete", "random", seed=s, iterations=2) for s in range(3)]
    for spec in specs:
        info = provenance() | {"host": "here", "resumed_at": 1 if spec.seed == 1 else None}
        write_cell(tmp_path, spec, run_cell(spec), info)
    write_manifest(tmp_path, "mine", specs)
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "resumed from a checkpoint (provenance.resumed_at): 1 of 3 done cells: " \
           "branin-1-1-discrete/random/seed1 T=2" in out
    (tmp_path / "fresh").mkdir()
    write_cell(tmp_path / "fresh", specs[0], run_cell(specs[0]))
    assert main([str(tmp_path / "fresh")]) == 0
    assert "resumed" not in capsys.readouterr().out


def test_the_dry_run_and_status_price_a_resumed_cell_for_its_iterations_left(
        tmp_path, capsys: pytest.CaptureFixture) -> None:
    """Of four cells of 6 iterations, one is finished in 31 s (1 + 6 x 5: 5 s an iteration), one has a
    checkpoint after iteration 4 made on this host's vendor, one a checkpoint after iteration 4 made on
    another vendor (its task drops it: the cell starts afresh), one none. The dry run prices them at
    1 + 2 x 5 = 11 s, 1 + 6 x 5 = 31 s and 31 s, and says that one cell resumes; status agrees; the
    runner is handed the whole cells' costs (its ETA discounts a resumed cell when it submits it)."""
    import json

    from harness.cell import run_cell
    from harness.grid_args import build_parser, grid_and_cells
    from harness.grid_cli import _plan, main
    from harness.kernels import cpu_vendor
    from harness.status import main as status
    from harness.store import write_cell, write_checkpoint, write_manifest

    specs = [CellSpec.make("branin-1-1-discrete", "random", seed=s, iterations=6) for s in range(4)]
    grid = tmp_path / "g.toml"
    grid.write_text('seeds = 4\niterations = 6\n[[cells]]\nproblems = ["branin-1-1-discrete"]\n'
                    'algorithms = ["random"]\n')
    out = tmp_path / "out"
    finished = run_cell(specs[0])
    finished.metadata["wall_time_s"] = 31.0
    write_cell(out, specs[0], finished)
    here, other = cpu_vendor() or "GenuineIntel", "SomeOtherVendor"
    for spec, vendor in ((specs[1], here), (specs[2], other)):
        saved: dict[int, bytes] = {}
        run_cell(spec, on_checkpoint=lambda data, t, saved=saved: saved.__setitem__(t, data),
                 checkpoint_every_s=0.0, host={"vendor": vendor})
        write_checkpoint(out, spec, saved[4])
    assert main(["--grid", str(grid), "--out", str(out), "--dry-run", "--json"]) == 0
    captured = capsys.readouterr()
    cells = {c["spec"]["seed"]: c for c in json.loads(captured.out)["cells"]}
    assert "resume: 1 cell(s) from their checkpoints (4 iterations done in all)" in captured.err
    assert [cells[s]["resumes_after"] for s in range(4)] == [None, 4, None, None]
    assert [cells[s]["estimate_s"] for s in (1, 2, 3)] == pytest.approx([11.0, 31.0, 31.0])
    # the runner's ETA starts from whole cells (it discounts a resumed one itself when it submits it)
    args = build_parser().parse_args(["--grid", str(grid), "--out", str(out)])
    plan = _plan(args, *grid_and_cells(args), out)
    assert dict(zip(plan.to_run, plan.whole_costs, strict=True))[specs[1]] == pytest.approx(31.0)
    capsys.readouterr()
    write_manifest(out, "g", specs)  # what a run of the grid leaves, and status reads
    assert status([str(out)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("remaining:"))
    assert line.startswith("remaining: 3 cells, about 73 s of CPU time")
