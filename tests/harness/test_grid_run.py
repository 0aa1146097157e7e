"""Running grids on a local Ray in this process: determinism, resume, --force, failures, reading."""

import io
import json
import math
import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch

from harness.cell import CellSpec, run_cell
from harness.frames import read_results
from harness.kernels import cpu_vendor
from harness.ray_runner import run_cells
from harness.results import CHECKPOINT_DIR, PROGRESS, cell_path, read_metadata, spec_hash
from harness.run import main
from harness.schema import ROW_SCHEMA
from harness.status import status_table
from harness.store import write_checkpoint, write_progress
from tests.harness.faults import fail_vucb_unif, slow_iterations
from tests.harness.layout import TIMINGS, expected_path

#: processes of their own (Ray, drivers, servers): one xdist group, one test at a time (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("processes")

ray = pytest.importorskip("ray")

CELLS = [CellSpec.make(p, a, s, 2) for p in ("branin-1-1-discrete", "goldstein-1-1-discrete")
         for a in ("random", "vucb-prob") for s in (0, 1)]
GRID = """seeds = 2
iterations = 2
[[cells]]
problems = ["branin-1-1-discrete", "goldstein-1-1-discrete"]
algorithms = ["random", "vucb-prob"]
"""


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR")
    yield
    ray.shutdown()




def rows_without_timings(path: Path) -> list[dict]:
    rows = pq.read_table(path).to_pylist()
    return [{k: v for k, v in row.items() if k not in TIMINGS} for row in rows]


def direct_rows(spec: CellSpec) -> list[dict]:
    """run_cell called here, in this process, with every column the store writes (timings aside)."""
    return [{k: row.get(k) for k in ROW_SCHEMA.names if k not in TIMINGS} for row in run_cell(spec).rows]


def visible_files(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*") if p.is_file()
                  and not any(part.startswith((".", "_")) for part in p.relative_to(out).parts))


def stats(paths: list[Path]) -> dict[Path, tuple[int, int]]:
    return {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in paths}


def test_grid_rows_equal_a_direct_run_and_resume_reruns_exactly_the_missing_cell(tmp_path: Path,
                                                                                 capsys) -> None:
    grid_file = tmp_path / "tiny.toml"
    grid_file.write_text(GRID)
    out = tmp_path / "out"
    assert main(["--grid", str(grid_file), "--out", str(out), "--no-progress"]) == 0
    paths = [expected_path(out, spec) for spec in CELLS]
    assert visible_files(out) == sorted(paths)

    # identical rows (timings aside) to run_cell called here, in this process, alone
    for spec, path in zip(CELLS, paths, strict=True):
        assert rows_without_timings(path) == direct_rows(spec), spec

    # resume: delete one cell, rerun: that cell alone is written again; its checkpoint, made on another
    # vendor's CPU, is not resumed: the cell runs from iteration 0, says so, and its metadata records
    # the one part it ran here
    before = stats(paths)
    victim, victim_spec = paths[5], CELLS[5]
    victim_rows = rows_without_timings(victim)
    victim.unlink()
    saved: list[bytes] = []
    run_cell(victim_spec, on_checkpoint=lambda data, t: saved.append(data), checkpoint_every_s=0.0,
             host={"vendor": "SomeOtherVendor", "cpu": "elsewhere"})
    write_checkpoint(out, victim_spec, saved[0])
    capsys.readouterr()
    assert main(["--grid", str(grid_file), "--out", str(out), "--no-progress"]) == 0
    assert "ran from iteration 0, not from its checkpoint: its checkpoint was made on SomeOtherVendor" in (
        capsys.readouterr().err)
    after = stats(paths)
    assert all(after[p] == before[p] for p in paths if p != victim)
    assert victim.exists() and rows_without_timings(victim) == victim_rows
    meta = read_metadata(victim)
    assert meta["provenance"]["resumed_at"] is None
    assert [(part["from"], part["vendor"]) for part in meta["segments"]] == [(0, cpu_vendor())]

    # nothing to do: nothing rewritten; a checkpoint of a written cell and a progress file (left by a
    # run that could not remove them: the folder read-only as it ended, found by the chaos run) are
    # removed, a checkpoint of a cell of another grid in the same folder is kept
    stale, other_grid = CELLS[3], CellSpec.make("branin-1-1-discrete", "random", 7, 2)
    for spec in (stale, other_grid):
        write_checkpoint(out, spec, b"a checkpoint")
    write_progress(out, [{"cell": "branin-1-1-discrete/random/seed0", "iteration": 1}])
    assert main(["--grid", str(grid_file), "--out", str(out), "--no-progress"]) == 0
    assert stats(paths) == after and not (out / PROGRESS).exists()
    assert [p.relative_to(out).as_posix() for p in (out / CHECKPOINT_DIR).rglob("*") if p.is_file()] == [
        f"{CHECKPOINT_DIR}/branin-1-1-discrete/random/seed7-{spec_hash(other_grid)}.ckpt"]
    assert not (out / CHECKPOINT_DIR / stale.problem / stale.algorithm).exists()  # no empty folder

    # --force rewrites every cell, with the same rows
    assert main(["--grid", str(grid_file), "--out", str(out), "--no-progress", "--force"]) == 0
    forced = stats(paths)
    assert all(forced[p] != after[p] for p in paths)
    assert rows_without_timings(victim) == victim_rows
    assert not [p for p in out.rglob(".*")]  # no temporary file left

    # one worker at a time, in the reverse order: the same rows
    other = tmp_path / "reversed"
    outcome = run_cells(list(reversed(CELLS)), other, max_in_flight=1, progress=False)
    assert len(outcome.done) == len(CELLS) and not outcome.failed
    for spec in CELLS:
        assert rows_without_timings(expected_path(other, spec)) == rows_without_timings(
            expected_path(out, spec))

    # the whole folder as one DataFrame, by our reader and by pandas directly
    frame = read_results(out)
    assert len(frame) == len(CELLS) * 3
    assert frame.groupby(["problem", "algorithm", "seed"]).size().eq(3).all()
    assert set(frame["spec_hash"]) == {p.stem.split("-")[-1] for p in paths}
    assert frame["seed"].dtype == "int64" and frame["regret"].dtype == "float64"
    assert len(pd.read_parquet(out)) == len(CELLS) * 3


def test_a_failing_cell_is_recorded_and_the_others_finish(tmp_path: Path) -> None:
    grid_file = tmp_path / "failing.toml"
    grid_file.write_text('seeds = 2\niterations = 1\n'
                         '[[cells]]\nproblems = ["branin-1-1-discrete"]\nalgorithms = ["random"]\n'
                         '[[cells]]\nproblems = ["branin-1-1-discrete"]\nalgorithms = ["vucb-unif"]\n'
                         'seeds = 1\n')
    out = tmp_path / "out"
    good = [expected_path(out, CellSpec.make("branin-1-1-discrete", "random", s, 1)) for s in (0, 1)]
    bad = CellSpec.make("branin-1-1-discrete", "vucb-unif", 0, 1)
    cells = [CellSpec.make("branin-1-1-discrete", "random", s, 1) for s in (0, 1)] + [bad]
    outcome = run_cells(cells, out, progress=False, cell_fn=fail_vucb_unif)
    assert outcome.failed == [bad] and len(outcome.done) == 2
    assert visible_files(out) == sorted(good)
    with pytest.raises(RuntimeError) as direct:  # the same error as the cell function here
        fail_vucb_unif(bad)
    records = list((out / "_failed").rglob("*.json"))
    assert [r.stem for r in records] == [expected_path(out, bad).stem]
    record = json.loads(records[0].read_text())
    assert record["message"] == f"RuntimeError: {direct.value}"
    assert "Traceback" in record["traceback"] and "RuntimeError" in record["traceback"]
    assert record["spec"]["algorithm"] == "vucb-unif"
    table = {(r["algorithm"], r["alpha"]): r for r in status_table(out, grid=str(grid_file))}
    assert table["vucb-unif", "default"]["failed"] == 1 and table["random", "default"]["done"] == 2
    assert len(read_results(out)) == 2 * 2  # failures are not results

    # a plain rerun skips the failed cell (and still reports it); --retry-failed reruns it alone,
    # here with the real cell function, so it succeeds and its failure record goes
    before = stats(good)
    mtime = records[0].stat().st_mtime_ns
    assert main(["--grid", str(grid_file), "--out", str(out), "--no-progress"]) == 1
    assert records[0].stat().st_mtime_ns == mtime
    assert main(["--grid", str(grid_file), "--out", str(out), "--no-progress", "--retry-failed"]) == 0
    assert not records[0].exists() and stats(good) == before
    assert expected_path(out, bad).exists()


def test_alpha_study_cell_measures_against_the_worst_case(tmp_path: Path) -> None:
    grid_file = tmp_path / "alpha.toml"
    grid_file.write_text('iterations = 1\n[[cells]]\nproblems = ["branin-1-1-discrete"]\n'
                         'algorithms = ["vucb-prob", "stableopt"]\nalpha = "below-min-mass"\n')
    out = tmp_path / "out"
    assert main(["--grid", str(grid_file), "--out", str(out), "--no-progress"]) == 0
    frame = read_results(out)
    assert set(frame["target"]) == {"worst_case"} and frame["alpha"].nunique() == 1
    assert math.isfinite(frame["regret"].iloc[-1])
    first = frame.groupby("algorithm")["x"].apply(lambda s: [list(v) for v in s])
    assert first["vucb-prob"] == first["stableopt"]  # Corollary 2 holds through the grid too


def test_progress_lines_keep_coming_in_a_log_while_no_cell_ends(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.ray_runner

    monkeypatch.setattr(harness.ray_runner, "LOG_EVERY_S", 0.5)
    monkeypatch.setattr(harness.ray_runner, "PROGRESS_EVERY_S", 0.0)
    written: list[list[dict]] = []
    write = harness.ray_runner.write_progress

    def record(out: Path, running: list[dict]) -> None:
        written.append(running)
        write(out, running)

    monkeypatch.setattr(harness.ray_runner, "write_progress", record)
    spec = CellSpec.make("branin-1-1-discrete", "random", 0, 8)  # about 4 s: 0.5 s an iteration
    run_cells([spec], tmp_path / "out", cell_fn=slow_iterations)
    lines = [line for line in capsys.readouterr().err.replace("\r", "\n").splitlines()
             if "running 1" in line]
    assert len(lines) >= 3, lines  # stderr is not a terminal here, as in `ray job logs`
    # the running cell's iterations, on the progress line and in _progress.json for harness.status
    its = [int(m.group(1)) for line in lines
           for m in [re.search(r"branin-1-1-discrete/random/seed0 it (\d+)/8", line)] if m]
    assert len(set(its)) >= 2 and its == sorted(its), lines
    done = [r[0]["iteration"] for r in written if r and r[0]["iteration"] is not None]
    assert len(set(done)) >= 3 and done == sorted(done) and max(done) <= 8
    assert all(r[0]["cell"] == "branin-1-1-discrete/random/seed0 T=8" and r[0]["iterations"] == 8
               for r in written if r)
    assert not (tmp_path / "out" / "_progress.json").exists()  # removed when the grid ends


def test_never_more_cells_at_once_than_cpus_even_while_cells_checkpoint(tmp_path: Path) -> None:
    # Ray lends a task's CPU to a queued task while the first blocks in ray.get or ray.wait; a cell
    # that waited on its checkpoint keeper that way let more cells run than there are CPUs, which
    # slows every cell and falsifies its timings
    from tests.harness.faults import busy_checkpointing_cell

    cells = [CellSpec.make("branin-1-1-discrete", "random", seed, iterations=1) for seed in range(8)]
    buffer = io.BytesIO()  # a large checkpoint to resume from: fetching it takes a while
    torch.save({"rows": [{"iteration": 0}], "padding": torch.zeros(5_000_000)}, buffer)
    for spec in cells:
        write_checkpoint(tmp_path, spec, buffer.getvalue())
    outcome = run_cells(cells, tmp_path, cell_fn=busy_checkpointing_cell, progress=False)
    assert len(outcome.done) == 8 and not outcome.failed
    metas = [read_metadata(cell_path(tmp_path, c)) for c in cells]
    spans = [(m["busy_from"], m["busy_to"]) for m in metas]
    events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    running, most = 0, 0
    for _, step in events:
        running += step
        most = max(most, running)
    assert most <= 2, f"{most} cells ran at once on 2 CPUs"


@pytest.mark.parametrize("damage", [b"", b"\x00\x01 random bytes \xff" * 40, "truncated"])
def test_a_damaged_checkpoint_is_set_aside_and_the_cell_starts_afresh(
        tmp_path: Path, damage: bytes | str, capsys: pytest.CaptureFixture) -> None:
    from harness.cell import checkpoint_problem
    from harness.store import checkpoint_path

    spec = CellSpec.make("branin-1-1-discrete", "vucb-prob", 0, 3)
    if damage == "truncated":  # the first half of a real checkpoint of this cell
        saved = []
        run_cell(spec, on_checkpoint=lambda data, t: saved.append(data), checkpoint_every_s=0.0)
        assert checkpoint_problem(saved[0], spec) is None  # the whole one is fine
        damage = saved[0][: len(saved[0]) // 2]
    write_checkpoint(tmp_path, spec, damage)
    assert checkpoint_problem(damage, spec) is not None
    outcome = run_cells([spec], tmp_path, progress=False)
    assert len(outcome.done) == 1 and not outcome.failed
    err = capsys.readouterr().err
    path = checkpoint_path(tmp_path, spec)
    assert f"set aside as {path}.damaged" in err and "restarts from iteration 0" in err
    assert (path.parent / (path.name + ".damaged")).read_bytes() == damage and not path.exists()
    assert rows_without_timings(cell_path(tmp_path, spec)) == direct_rows(spec)  # from iteration 0


def test_a_cell_whose_file_cannot_be_written_fails_alone(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # a file where one cell's folder should be: its write fails as a full disk or a refused upload
    # would (and as permissions would for a user other than root); the other cells are written
    from harness.grid_cli import EXIT_FAILED
    from harness.results import failure_path, read_failure
    from harness.spill import SPILL_VARIABLE

    # the refused cell is kept on this machine: here, not in the user's cache, where a cell kept by an
    # earlier run of this test at the same temporary path would be written back first
    monkeypatch.setenv(SPILL_VARIABLE, str(tmp_path / "kept"))

    blocked = CellSpec.make("branin-1-1-discrete", "vucb-prob", 0, 2)
    others = [CellSpec.make("branin-1-1-discrete", "random", s, 2) for s in (0, 1)]
    (tmp_path / "branin-1-1-discrete").mkdir()
    (tmp_path / "branin-1-1-discrete" / "vucb-prob").write_text("not a folder")
    outcome = run_cells([blocked, *others], tmp_path, progress=False)
    assert outcome.failed == [blocked] and sorted(outcome.done, key=str) == sorted(others, key=str)
    record = read_failure(failure_path(tmp_path, blocked))
    assert record["message"].startswith("cannot write its result:")
    assert all(cell_path(tmp_path, s).is_file() for s in others)
    # through the command line: the grid goes on and exits 1 at the end
    grid = tmp_path / "g.toml"
    grid.write_text('seeds = 1\niterations = 1\n[[cells]]\nproblems = ["goldstein-1-1-discrete"]\n'
                    'algorithms = ["random", "vucb-prob"]\n')
    out = tmp_path / "cli"
    (out / "goldstein-1-1-discrete").mkdir(parents=True)
    (out / "goldstein-1-1-discrete" / "random").write_text("not a folder")
    assert main(["--grid", str(grid), "--out", str(out), "--no-progress"]) == EXIT_FAILED == 1
    assert len(list((out / "goldstein-1-1-discrete" / "vucb-prob").glob("*.parquet"))) == 1


def test_a_killed_checkpoint_keeper_is_replaced_and_the_grid_goes_on(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from tests.harness.faults import kill_keeper_then_run

    cells = [CellSpec.make("branin-1-1-discrete", "random", s, 3) for s in range(4)]
    outcome = run_cells(cells, tmp_path, cell_fn=kill_keeper_then_run, progress=False)
    assert len(outcome.done) == 4 and not outcome.failed
    assert "the checkpoint keeper died" in capsys.readouterr().err
    for spec in cells:
        assert rows_without_timings(cell_path(tmp_path, spec)) == direct_rows(spec)


def test_a_cell_the_store_refuses_is_kept_and_written_by_the_next_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """A finished cell whose file the store still refuses after the retries is kept on this machine
    (harness.spill); the next run of the grid writes it into the results folder before planning,
    as it was computed (the same checksum, the same provenance: not recomputed), and empties the keep."""
    from harness import spill

    monkeypatch.setenv(spill.SPILL_VARIABLE, str(tmp_path / "kept"))
    monkeypatch.setattr(spill, "PAUSES_S", (0.0, 0.0))
    grid = tmp_path / "g.toml"
    grid.write_text('seeds = 1\niterations = 1\n[[cells]]\nproblems = ["goldstein-1-1-discrete"]\n'
                    'algorithms = ["random"]\n')
    out = tmp_path / "out"
    (out / "goldstein-1-1-discrete").mkdir(parents=True)
    (out / "goldstein-1-1-discrete" / "random").write_text("not a folder")  # refuses every write
    assert main(["--grid", str(grid), "--out", str(out), "--no-progress"]) == 1
    assert "kept at" in capsys.readouterr().err
    kept = list((tmp_path / "kept").rglob("*.parquet"))
    assert len(kept) == 1
    computed = read_metadata(kept[0])
    (out / "goldstein-1-1-discrete" / "random").unlink()  # the store takes files again
    assert main(["--grid", str(grid), "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "wrote 1 finished cell(s)" in printed and "0 to run" in printed
    written = list((out / "goldstein-1-1-discrete" / "random").glob("*.parquet"))
    assert len(written) == 1
    assert read_metadata(written[0])["checksum"] == computed["checksum"]
    assert read_metadata(written[0])["provenance"] == computed["provenance"]
    assert not list((tmp_path / "kept").rglob("*.parquet"))
