"""``python -m harness.stage``: a run in progress staged as its finished cells (packed), its checkpoints and
its driver's row in the run's ledger, never losing a staged cell."""

from __future__ import annotations

import csv
import os
import shutil
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.cell import run_cell
from harness.pack import main as pack_main
from harness.procs import process_start
from harness.results import cell_files, cell_path, read_cell, spec_hash
from harness.spec import CellSpec
from harness.stage import LEDGER_FIELDS, main
from harness.store import write_cell, write_manifest

#: one worker for the module (xdist ``loadgroup``): its folders are made once
pytestmark = pytest.mark.xdist_group("stage")

ROOT = Path(__file__).resolve().parents[2]
SPECS = [CellSpec.make("branin-1-1-discrete", a, s, 2) for a in ("random", "vucb-unif") for s in (0, 1)]


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A run of four finished cells with two checkpoints (one a temporary being written), and a publication
    (packed) holding the first of its cells."""
    base = tmp_path_factory.mktemp("stage")
    run, published = base / "run", base / "published"
    for spec in SPECS:
        write_cell(run, spec, run_cell(spec))
    write_manifest(run, "test", SPECS)
    flight = run / "_checkpoints" / "branin-1-1-discrete" / "vucb-prob"
    flight.mkdir(parents=True)
    (flight / "seed0-abc.ckpt").write_bytes(b"state")
    (flight / ".seed1-def.ckpt.77.tmp").write_bytes(b"half")
    write_cell(published, SPECS[0], run_cell(SPECS[0]))
    assert pack_main([str(published)]) == 0
    return run, published


def stage(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def hashes(folder: Path) -> list[str]:
    return sorted(p.stem.split("-")[-1] for p, _ in cell_files(folder)[0])


def test_a_stage_packs_the_cells_the_publication_lacks_and_copies_the_checkpoints(
        folders: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run, published = folders
    to = tmp_path / "pinned" / "suite"
    code, out, err = stage(capsys, run, "--to", to, "--without", published)
    assert (code, err) == (0, "")
    assert hashes(to) == sorted(spec_hash(s) for s in SPECS[1:])
    stored = list(to.rglob("*.parquet"))
    assert stored and all(p.name.endswith(".pack.parquet") for p in stored)
    for spec in SPECS[1:]:  # each staged cell reads back as the run's own file
        (staged,) = [p for p, _ in cell_files(to)[0] if p.stem.endswith(spec_hash(spec))]
        assert read_cell(staged) == read_cell(cell_path(run, spec))
    ckpts = tmp_path / "pinned" / "suite-checkpoints"
    assert [p.relative_to(ckpts).as_posix() for p in ckpts.rglob("*") if p.is_file()] == [
        "branin-1-1-discrete/vucb-prob/seed0-abc.ckpt"]  # not the temporary
    assert f"3 finished cells staged in {to}, 1 checkpoints in {ckpts}" in out
    assert "suite-runs.csv: unchanged, no grid's driver is running into it" in out
    assert not (tmp_path / "pinned" / "suite-runs.csv").exists()
    assert sorted(p.name for p in (tmp_path / "pinned").iterdir()) == ["suite", "suite-checkpoints"]

    code, out, _ = stage(capsys, run, "--to", to)  # again, without a publication: all four, replaced
    assert code == 0 and hashes(to) == sorted(spec_hash(s) for s in SPECS)


def test_a_stage_that_would_lose_a_staged_cell_changes_nothing(
        folders: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run, _ = folders
    to = tmp_path / "suite"
    assert stage(capsys, run, "--to", to)[0] == 0
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    restarted = tmp_path / "restarted"
    shutil.copytree(run, restarted)
    cell_path(restarted, SPECS[2]).unlink()
    code, out, err = stage(capsys, restarted, "--to", to)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"holds 1 cells that {restarted} lacks (e.g. {spec_hash(SPECS[2])})" in err
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and restarted not in p.parents}
    assert after == before


def test_the_running_driver_gets_one_row_in_the_ledger(
        folders: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run = tmp_path / "run"
    shutil.copytree(folders[0], run)
    before = time.time()
    driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], cwd=ROOT)
    after = time.time()
    try:
        (run / "_running.lock").write_text(f"{socket.gethostname()} {driver.pid} {process_start(driver.pid)}")
        ledger = tmp_path / "runs.csv"
        for _ in range(2):
            code, out, _ = stage(capsys, run, "--to", tmp_path / "suite", "--ledger", ledger)
            assert code == 0
    finally:
        driver.kill()
        driver.wait()
    rows = list(csv.reader(ledger.open(newline="")))
    assert rows[0] == list(LEDGER_FIELDS) and len(rows) == 2
    minutes = {datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M") for t in (before - 1, after + 1)}
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=7", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    seen, commit, cpu, vendor, evidence = rows[1]
    assert seen in minutes and commit.split("-")[0] == (head or "") and cpu
    cpuinfo = Path("/proc/cpuinfo").read_text()
    assert vendor == next((line.split(":")[1].strip() for line in cpuinfo.splitlines()
                           if line.startswith("vendor_id")), "")
    assert f"(pid {driver.pid})" in evidence
    assert f"already has the driver started {seen} UTC" in out  # the second stage added nothing

    (run / "_running.lock").write_text(f"elsewhere {driver.pid} 1")
    assert "its driver runs on host elsewhere" in stage(capsys, run, "--to", tmp_path / "suite")[1]
    gone = process_start(driver.pid) or 1
    (run / "_running.lock").write_text(f"{socket.gethostname()} {driver.pid} {gone}")
    assert f"its driver (pid {driver.pid}) is no longer running" in stage(capsys, run, "--to",
                                                                          tmp_path / "suite")[1]


@pytest.mark.parametrize("argv, message", [
    (["missing", "--to", "x"], "missing is not a folder"),
    (["{run}", "--to", "{run}/staged"], "overlap"),
    (["{run}", "--to", "x", "--without", "nowhere"], "nowhere is not a folder"),
    (["{run}"], "the following arguments are required: --to"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], message: str, folders: tuple[Path, Path],
                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = stage(capsys, *(a.format(run=folders[0]) for a in argv))
    assert (code, out) == (2, "") and err.startswith("harness.stage: error: ") and err.count("\n") == 1
    assert message in err
    assert sorted(tmp_path.iterdir()) == [] and not (folders[0] / "staged").exists()


def test_the_command_line_stages(folders: tuple[Path, Path], tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "harness.stage", str(folders[0]), "--to", str(tmp_path / "s")]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and "4 finished cells staged" in done.stdout, done.stderr


def test_a_restore_gives_the_run_back_from_its_stage_and_the_publication(
        folders: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run, published = folders
    to = tmp_path / "suite"
    assert stage(capsys, run, "--to", to, "--without", published)[0] == 0
    again = tmp_path / "again"
    kept = cell_path(again, SPECS[3])  # a cell the folder holds already is not replaced
    kept.parent.mkdir(parents=True)
    shutil.copy2(cell_path(run, SPECS[3]), kept)
    before = kept.stat().st_mtime_ns
    code, out, err = stage(capsys, again, "--to", to, "--without", published, "--restore")
    assert (code, err) == (0, "")
    assert "restored 2 staged cells, 1 published cells and 1 checkpoints" in out
    assert hashes(again) == sorted(spec_hash(s) for s in SPECS) and kept.stat().st_mtime_ns == before
    for spec in SPECS[1:]:  # each as the run's own file: its metadata and rows
        assert read_cell(cell_path(again, spec)) == read_cell(cell_path(run, spec))
    (mine,) = [p for p, _ in cell_files(published)[0]]  # and the publication's, as published
    assert read_cell(cell_path(again, SPECS[0])) == read_cell(mine)
    assert [p.name for p in (again / "_checkpoints").rglob("*") if p.is_file()] == ["seed0-abc.ckpt"]


def test_a_restore_refuses_a_running_folder_and_a_stage_without_its_grid(
        folders: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run, published = folders
    to = tmp_path / "suite"
    assert stage(capsys, run, "--to", to)[0] == 0
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "_running.lock").write_text(f"{socket.gethostname()} {os.getpid()} {process_start(os.getpid())}")
    code, _, err = stage(capsys, busy, "--to", to, "--restore")
    assert code == 2 and f"holds {busy}: stop it" in err
    assert sorted(busy.iterdir()) == [busy / "_running.lock"]
    (to / "_grid.json").unlink()
    code, _, err = stage(capsys, tmp_path / "new", "--to", to, "--without", published, "--restore")
    assert code == 2 and "has no _grid.json" in err and not (tmp_path / "new").exists()


def test_a_swap_stopped_between_its_renames_is_undone_before_anything_else(
        folders: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A stage killed after moving the old staged folder aside and before putting the new one in place
    leaves only ``.suite.old``: the next stage puts it back first, so that its cells still count."""
    run, _ = folders
    to = tmp_path / "suite"
    assert stage(capsys, run, "--to", to)[0] == 0
    to.rename(tmp_path / ".suite.old")
    restarted = tmp_path / "restarted"
    shutil.copytree(run, restarted)
    cell_path(restarted, SPECS[1]).unlink()
    code, _, err = stage(capsys, restarted, "--to", to)
    assert code == 2 and "holds 1 cells that" in err  # the set-aside cells were seen
    assert hashes(to) == sorted(spec_hash(s) for s in SPECS) and not (tmp_path / ".suite.old").exists()
