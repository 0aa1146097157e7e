"""The bad-input battery against an existing results folder: every bad call is one line on stderr,
a documented exit code (2), no traceback, and leaves every file of the folder as it was; corrupted
and foreign Parquet files inside a folder are named, never read as results, and their cells rerun."""

import socket
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.cell import CellSpec, run_cell
from harness.frames import read_results
from harness.grid_cli import classify
from harness.results import DamagedFileError, cell_path, invalid_files, result_files
from harness.run import main
from harness.status import main as status_main
from harness.store import write_cell, write_manifest

SPECS = [CellSpec.make("branin-1-1-discrete", "random", s, 1) for s in (0, 1, 2)]
GRID = """seeds = 3
iterations = 1
[[cells]]
problems = ["branin-1-1-discrete"]
algorithms = ["random"]
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A results folder with three finished cells and its manifest, as a grid run leaves it."""
    out = tmp_path / "results"
    for spec in SPECS:
        write_cell(out, spec, run_cell(spec), {"test": True})
    write_manifest(out, "bad-input", SPECS)
    return out


def snapshot(out: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


BAD_CALLS = [
    (["--grid", "nope"], "unknown grid"),
    (["--grid", "{grid}", "--seeds", "-2"], "--seeds"),
    (["--grid", "{grid}", "--iterations", "0x"], "--iterations"),
    (["--grid", "{grid}", "--only", "*/vucb-*"], "matches no cell"),
    (["--grid", "{grid}", "--force", "--retry-failed"], "exclude"),
    (["--grid", "{grid}", "--num-cpus", "-1"], "--num-cpus"),
    (["--grid", "{grid}", "--seed", "3"], "unrecognized"),
    (["--grid", "{grid}", "--force", "--address", "127.0.0.1:{port}", "--no-progress"], "127.0.0.1:"),
    (["--grid", "{bad_grid}"], "alpha"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "random", "--alpha", "1.5"], "alpha"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "random", "--alpha", "-0.1"], "alpha"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "no-such"], "unknown algorithm"),
    (["--problem", "no-such", "--algorithm", "random"], "unknown problem"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "vucb-prob", "--option", "beta"], "NAME=VALUE"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "random", "--iterations", "2",
      "--iterations", "x"], "iterations"),
    # option values of the wrong type or out of range fail here, not when the cell runs
    (["--problem", "branin-1-1-discrete", "--algorithm", "rhokg-apx", "--option", "maxiter=Infinity"],
     "maxiter must be a positive integer"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "rhokg-apx", "--option", "restarts_per_dim=2.0"],
     "restarts_per_dim must be a positive integer"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "rhokg-apx", "--option", 'eta="fast"'],
     "eta must be"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "rhokg-apx-released", "--option", "refine=top"],
     "refine must be one of best, worst"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "vucb-prob", "--option", "beta=inf"],
     "beta must be"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "vucb-prob", "--option", "beta=1e999"],
     "beta must be"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "random", "--gp", "nope"], "unknown GP profile"),
    (["--grid", "{grid}", "--gp", "nope"], "unknown GP profile"),
    (["--grid", "{inf_grid}"], "maxiter must be a positive integer"),
    (["--grid", "{gp_grid}"], "gp must be one of"),
    (["--grid", "{latin1_grid}"], "not UTF-8"),
    (["--grid", "{grid}", "--seeds", "100000000"], "--seeds must lie in 1..100000"),
    (["--grid", "{huge_grid}"], "seeds must be at most 100000"),
    (["--grid", "{nul_grid}"], "plain folder name"),
    (["--grid", "{grid}", "--checkpoint-every-s", "0"], "expected a positive number of seconds"),
    (["--grid", "{grid}", "--checkpoint-every-s", "nan"], "expected a positive number of seconds"),
    (["--grid", "{grid}", "--checkpoint-every-s", "5s"], "expected a positive number of seconds"),
]


@pytest.mark.parametrize("args, needle", BAD_CALLS,
                         ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_bad_calls_leave_an_existing_folder_untouched(
        args: list[str], needle: str, folder: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture) -> None:
    grid = tmp_path / "g.toml"
    grid.write_text(GRID)
    bad_grid = tmp_path / "bad.toml"
    bad_grid.write_text(GRID + "alpha = 1.0\n")
    inf_grid = tmp_path / "inf.toml"
    inf_grid.write_text(GRID.replace('"random"', '"rhokg-apx"') + "options = { maxiter = inf }\n")
    gp_grid = tmp_path / "gp.toml"
    gp_grid.write_text(GRID + 'gp = "nope"\n')
    latin1_grid = tmp_path / "latin1.toml"
    latin1_grid.write_bytes(GRID.encode() + 'name = "r\u00e9sultats"\n'.encode("latin-1"))
    huge_grid = tmp_path / "huge.toml"
    huge_grid.write_text(GRID.replace("seeds = 3", "seeds = 100000000"))
    nul_grid = tmp_path / "nul.toml"
    nul_grid.write_text('name = "a\\u0000b"\n' + GRID)
    argv = [a.format(grid=grid, bad_grid=bad_grid, inf_grid=inf_grid, gp_grid=gp_grid, port=_free_port(),
                     latin1_grid=latin1_grid, nul_grid=nul_grid, huge_grid=huge_grid)
            for a in args]
    before = snapshot(folder)
    code = main([*argv, "--out", str(folder)])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and needle in err and "Traceback" not in err, err
    assert snapshot(folder) == before


def test_out_that_is_a_file_or_under_a_file_is_refused(folder: Path, capsys: pytest.CaptureFixture) -> None:
    a_file = next(iter(result_files(folder)))
    before = snapshot(folder)
    for out in (a_file, a_file / "sub"):
        assert main(["--grid", "smoke", "--out", str(out)]) == 2
        assert main(["--problem", "branin-1-1-discrete", "--algorithm", "random", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all("--out" in line for line in err)
    assert snapshot(folder) == before


def test_status_of_a_missing_folder_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert status_main([str(tmp_path / "nothing-here")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_corrupted_and_foreign_parquet_files_are_named_and_never_read(
        folder: Path, capsys: pytest.CaptureFixture) -> None:
    corrupted = cell_path(folder, SPECS[0])
    corrupted.write_bytes(corrupted.read_bytes()[: len(corrupted.read_bytes()) // 2])  # torn
    renamed = cell_path(folder, SPECS[2])
    renamed.write_bytes(cell_path(folder, SPECS[1]).read_bytes())  # another cell's file under its name
    foreign = folder / "branin-1-1-discrete" / "random" / "notes.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), foreign)
    bad = dict(invalid_files(folder))
    assert set(bad) == {corrupted, renamed, foreign}
    assert "Parquet" in bad[corrupted] and "spec" in bad[renamed] and "columns" in bad[foreign]
    assert result_files(folder) == [cell_path(folder, SPECS[1])]
    with pytest.raises(DamagedFileError, match=f"{corrupted}: not a readable Parquet file"):
        read_results(folder)  # a torn file is damage: refused, by name, with its remedy
    # the grid reruns the two cells whose files are bad, and says which files it ignores
    states = classify(SPECS, folder)
    assert [states[s] for s in SPECS] == ["missing", "done", "missing"]
    grid = folder.parent / "g.toml"
    grid.write_text(GRID)
    assert main(["--grid", str(grid), "--out", str(folder), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "1 done, 2 to run" in out
    assert all(f"ignored {p}" in out for p in bad)
    assert status_main([str(folder)]) == 1  # a damaged file: named, and the exit says so
    text = capsys.readouterr().out
    assert "total: 1 done, 2 missing" in text and f"DAMAGED {corrupted}: not a readable Parquet" in text
    assert f"ignored {renamed}" in text and f"ignored {foreign}" in text
    corrupted.unlink()  # what is left is no damage: files that are no cells are passed over, named
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = read_results(folder)
    assert sorted(set(frame["seed"])) == [1] and len(frame) == 2  # only the intact cell's rows
    assert {str(renamed), str(foreign)} == {str(w.message).split("skipped ", 1)[1].split(":")[0]
                                            for w in caught}
    assert status_main([str(folder)]) == 0


@pytest.mark.parametrize("damage", [b'{"grid":5,"cells":"nope"}', b"\xff\xfe not text", b"{not json", b"[]"])
def test_a_damaged_manifest_or_failure_record_is_named_not_a_traceback(
        damage: bytes, folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from analysis.report import main as report_main
    from harness.results import failure_path

    (folder / "_grid.json").write_bytes(damage)
    record = failure_path(folder, CellSpec.make("branin-1-1-discrete", "random", 7, 1))
    record.parent.mkdir(parents=True)
    record.write_bytes(damage)
    assert status_main([str(folder), "--failures"]) == 0
    out = capsys.readouterr().out
    assert "Traceback" not in out and "_grid.json is damaged" in out
    assert f"{record} is damaged" in out and "3 other" in out  # no grid list: the cells are "other"
    assert report_main([str(folder), "--out", str(tmp_path / "report")]) == 0
    text = (tmp_path / "report" / "report.md").read_text()
    assert "_grid.json is damaged" in text and f"{record} is damaged" in text
    assert "None missing" not in text


def test_a_cell_file_with_a_damaged_data_page_is_not_done(folder: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    from analysis.report import main as report_main
    from harness.results import check_cell_file, read_metadata

    path = cell_path(folder, SPECS[1])
    meta = read_metadata(path)
    assert meta["rows"] == 2 and len(meta["checksum"]) == 64
    data = bytearray(path.read_bytes())
    data[200:1200] = bytes(1000)  # the data pages; the footer at the end is intact
    path.write_bytes(bytes(data))
    assert read_metadata(path)["spec"] == meta["spec"]  # the footer still reads
    reason = check_cell_file(path)
    assert reason is not None and reason.startswith("damaged data")
    states = classify(SPECS, folder)
    assert states[SPECS[1]] == "missing" and states[SPECS[0]] == "done"
    assert status_main([str(folder)]) == 1
    out = capsys.readouterr().out
    assert "2 done, 1 missing" in out and f"DAMAGED {path}: damaged data" in out
    assert report_main([str(folder), "--out", str(tmp_path / "report")]) == 2  # refused, by name
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: damaged data" in err and "recomputes its cell" in err


def test_a_cell_file_whose_values_changed_fails_its_checksum(folder: Path) -> None:
    from harness.results import check_cell_file

    path = cell_path(folder, SPECS[2])
    table = pq.read_table(path)
    regret = table.column("regret").to_pylist()
    changed = table.set_column(table.schema.get_field_index("regret"), "regret",
                               pa.array([regret[0], regret[1] + 1e-12]))
    pq.write_table(changed.replace_schema_metadata(table.schema.metadata), path)
    assert check_cell_file(path) == "damaged data (its values do not match its checksum)"


@pytest.mark.parametrize("args", [["--grid", "smoke"],
                                  ["--problem", "branin-1-1-discrete", "--algorithm", "random"]])
def test_an_empty_out_is_refused(args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([*args, "--out", ""]) == 2
    assert "--out must name a folder" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written into the current folder


def test_finished_cells_leave_no_empty_checkpoint_folders(tmp_path: Path) -> None:
    from harness.store import checkpoint_path, clear_checkpoint, write_checkpoint

    spec = SPECS[0]
    write_checkpoint(tmp_path, spec, b"x")
    assert checkpoint_path(tmp_path, spec).is_file()
    clear_checkpoint(tmp_path, spec)
    assert not (tmp_path / "_checkpoints").exists()
