"""Exit codes of a grid run tell the truth, counted from what happened as well as from the files:
without Ray (its start and the task loop replaced), so that each path is exact and fast."""

from pathlib import Path

import pytest

import harness.ray_runner as ray_runner
import harness.ray_session as ray_session
from harness.grid_cli import main
from harness.ray_runner import Outcome
from harness.results import RUNNING_LOCK

ONLY = "branin-1-1-discrete/random/seed0 T=*"


@pytest.fixture
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ray_session, "start_ray", lambda address, num_cpus: 0.0)
    monkeypatch.setattr("harness.grid_cli._cpus_used", lambda: 2)


def test_a_cell_that_failed_without_a_record_makes_exit_1(no_ray, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path, capsys) -> None:
    """A read-only folder refuses the cell and its failure record alike: on disk the cell is merely
    missing, and the exit code used to be counted from the disk (0)."""
    def failed_unrecorded(cells, out, *args, **kwargs) -> Outcome:
        return Outcome(failed=list(cells))  # nothing written, no record

    monkeypatch.setattr(ray_runner, "run_cells", failed_unrecorded)
    code = main(["--grid", "smoke", "--only", ONLY, "--out", str(tmp_path), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "1 cell(s) of this run are neither written nor recorded as failed" in out


def test_a_cell_done_before_the_run_and_damaged_during_it_makes_exit_1(
        no_ray, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys) -> None:
    """Found by benchmarks/chaos.py: a finished cell's file truncated while the grid ran its other
    cells; the driver said "1 missing" and exited 0."""
    from harness.cell import run_cell
    from harness.grid import resolve_grid
    from harness.grid_cells import select
    from harness.results import cell_path
    from harness.store import write_cell

    done, to_run = select(list(resolve_grid("smoke").cells), "branin-1-1-discrete/random/seed[01] T=*")
    write_cell(tmp_path, done, run_cell(done))

    def run_and_damage(cells, out, *args, **kwargs) -> Outcome:
        spec, = cells
        write_cell(out, spec, run_cell(spec))
        path = cell_path(out, done)
        path.write_bytes(path.read_bytes()[:100])  # the other cell's file, damaged meanwhile
        return Outcome(done=[spec])

    monkeypatch.setattr(ray_runner, "run_cells", run_and_damage)
    code = main(["--grid", "smoke", "--only", "branin-1-1-discrete/random/seed[01] T=*", "--out",
                 str(tmp_path), "--no-progress"])
    out = capsys.readouterr().out
    assert "1 done, 1 missing" in out and code == 1, out
    assert "1 cell(s) done before this run are missing now" in out
    assert to_run.seed == 1


#: Two V-UCB cells (done before the run) and random search (run by it), seed 0 of the smoke grid
DAMAGED_PATTERN = "branin-1-1-discrete/[rv][au][nc]*/seed0 T=*"


@pytest.mark.parametrize("damage", ["flipped bit", "swapped"])
def test_cells_damaged_during_a_run_make_exit_1_and_the_same_command_mends_them(
        no_ray, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys, damage: str) -> None:
    """Two of the chaos run's kinds of fault (``benchmarks/chaos.py``), here exact and without Ray: while
    the grid runs, a bit flips in a data page of a cell file written before the run, or two such files
    swap names. The run exits 1 and says so; the same command reruns exactly the damaged cells, whose
    rows then equal a direct run's (x, z, y, x_rec, regret, bit for bit)."""
    import pyarrow.parquet as pq

    from harness.cell import run_cell
    from harness.grid import resolve_grid
    from harness.grid_cells import select
    from harness.results import cell_path, check_cell_file, read_cell
    from harness.store import write_cell
    from harness.verify import compare_rows

    cells = select(list(resolve_grid("smoke").cells), DAMAGED_PATTERN)
    before = [c for c in cells if c.algorithm != "random"]
    assert len(cells) == 3 and len(before) == 2
    for spec in before:
        write_cell(tmp_path, spec, run_cell(spec))
    first, second = (cell_path(tmp_path, spec) for spec in before)

    def run(cells, out, *args, **kwargs) -> Outcome:
        for spec in cells:
            write_cell(out, spec, run_cell(spec))
        return Outcome(done=list(cells))

    def run_and_damage(cells, out, *args, **kwargs) -> Outcome:
        outcome = run(cells, out)
        if damage == "swapped":
            data = first.read_bytes()
            first.write_bytes(second.read_bytes())
            second.write_bytes(data)
        else:  # inside the pages of the column y, not the footer (a bit of the column problem's
            # pages, say, can leave every decoded value as it was: the file is then still whole)
            metadata = pq.ParquetFile(first).metadata
            column = next(i for i in range(metadata.num_columns) if metadata.schema.column(i).name == "y")
            chunk = metadata.row_group(0).column(column)
            data = bytearray(first.read_bytes())
            data[chunk.data_page_offset + chunk.total_compressed_size // 2] ^= 0x10
            first.write_bytes(bytes(data))
        assert check_cell_file(first) is not None  # the damage is one a reader can see
        return outcome

    arguments = ["--grid", "smoke", "--only", DAMAGED_PATTERN, "--out", str(tmp_path), "--no-progress"]
    monkeypatch.setattr(ray_runner, "run_cells", run_and_damage)
    code = main(arguments)
    out = capsys.readouterr().out
    damaged = 2 if damage == "swapped" else 1
    assert code == 1 and f"{3 - damaged} done, {damaged} missing" in out, out
    assert f"{damaged} cell(s) done before this run are missing now" in out
    monkeypatch.setattr(ray_runner, "run_cells", run)
    code = main(arguments)
    out = capsys.readouterr().out
    assert code == 0 and f"{3 - damaged} done, {damaged} to run" in out, out
    for spec in cells:
        _, table = read_cell(cell_path(tmp_path, spec))
        assert compare_rows(table.to_pylist(), run_cell(spec).rows)[0] is None, spec


def test_a_run_that_writes_nothing_and_reports_nothing_is_not_a_success(
        no_ray, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys) -> None:
    monkeypatch.setattr(ray_runner, "run_cells", lambda cells, out, *a, **k: Outcome())
    assert main(["--grid", "smoke", "--only", ONLY, "--out", str(tmp_path), "--no-progress"]) == 1


def test_a_local_ray_that_cannot_start_for_any_reason_is_one_line_and_exit_1(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys) -> None:
    def broken(address, num_cpus) -> float:
        raise PermissionError(13, "Permission denied: '/usr/bin/python3'")

    monkeypatch.setattr(ray_session, "start_ray", broken)
    code = main(["--grid", "smoke", "--only", ONLY, "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip().splitlines() == [
        "harness.run: error: cannot start a local Ray: [Errno 13] Permission denied: '/usr/bin/python3'"]
    assert not list((tmp_path / "o").rglob("*.parquet"))


def test_the_plan_is_made_under_the_lock(no_ray, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A second driver that classified the cells before taking the lock would work from a stale list
    when the first finishes in between: the classification must see the lock held."""
    import harness.grid_cli as grid_cli

    seen = []
    real = grid_cli.classify

    def classify(cells, out):
        seen.append((Path(out) / RUNNING_LOCK).exists())
        return real(cells, out)

    monkeypatch.setattr(grid_cli, "classify", classify)
    monkeypatch.setattr(ray_runner, "run_cells", lambda cells, out, *a, **k: Outcome())
    main(["--grid", "smoke", "--only", ONLY, "--out", str(tmp_path), "--no-progress"])
    assert seen and seen[0] is True, seen


def test_dry_run_json_lists_every_cell_with_spec_hash_state_and_estimate(tmp_path: Path, capsys) -> None:
    """The plan as one JSON object on stdout (nothing else there), every cell of the grid in order,
    its hash the store's (the file name), its state and estimate; --json without --dry-run is refused."""
    import json

    from harness.cell import CellSpec
    from harness.grid import resolve_grid
    from harness.results import spec_hash

    assert main(["--grid", "smoke", "--dry-run", "--json", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    plan = json.loads(captured.out)
    grid = resolve_grid("smoke")
    assert plan["grid"] == "smoke" and len(plan["cells"]) == len(grid.cells) == plan["to_run"]
    for cell, spec in zip(plan["cells"], grid.cells, strict=True):
        again = CellSpec.make(**{k: v for k, v in cell["spec"].items() if k != "options"},
                              options=dict(cell["spec"]["options"]))
        assert again == spec and cell["hash"] == spec_hash(spec) and cell["state"] == "to run"
        assert cell["path"].endswith(f"seed{spec.seed}-{spec_hash(spec)}.parquet")
        assert cell["estimate_s"] > 0
    # each estimate is rounded to 0.1 s
    assert abs(sum(c["estimate_s"] for c in plan["cells"]) - plan["estimate_cpu_s"]) <= 0.05 * len(grid.cells)
    assert f"{len(grid.cells)} cells" in captured.err  # the human head line went to stderr
    assert main(["--grid", "smoke", "--json", "--out", str(tmp_path)]) == 2


def test_a_folder_that_refuses_the_grid_record_mid_run_is_one_line_and_exit_1(
        no_ray, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys) -> None:
    """Found by benchmarks/chaos.py (its read-only fault): the folder turned read-only after the plan,
    and writing _grid.json raised PermissionError out of the driver as a traceback (exit 1 all the
    same). Now one line naming the folder, the resume hint, exit 1."""
    def refuse(*args, **kwargs) -> None:
        raise PermissionError(1, "Operation not permitted", str(tmp_path / "._grid.json.1.tmp"))

    monkeypatch.setattr("harness.grid_cli.write_manifest", refuse)
    code = main(["--grid", "smoke", "--only", ONLY, "--out", str(tmp_path), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err, err
    assert f"harness.run: error: cannot write to {tmp_path}: Operation not permitted" in err
    assert "the same command resumes" in err
